"""What the NVIDIA driver says about this machine's GPUs: one query for provenance and for `doctor`."""

from __future__ import annotations

import subprocess

GPU_QUERY = ("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")


def query_gpus(timeout_s: float = 20) -> subprocess.CompletedProcess[str] | None:
    """nvidia-smi's answer (one CSV line per GPU), or None when it cannot be run or does not answer in time."""
    try:
        return subprocess.run(list(GPU_QUERY), capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
