"""What the NVIDIA driver says about this machine's GPUs: one query for provenance and for `doctor`."""

from __future__ import annotations

import shutil
import subprocess

GPU_QUERY = ("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
BUSY_QUERY = ("nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits")


def query_gpus(timeout_s: float = 20) -> subprocess.CompletedProcess[str] | None:
    """nvidia-smi's answer (one CSV line per GPU), or None when it cannot be run or does not answer in time."""
    try:
        return subprocess.run(list(GPU_QUERY), capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def busy_percent(answer: str) -> float | None:
    """The busiest GPU's utilisation from nvidia-smi's one-number-a-line answer; None unless every line is a number
    (a GPU that says "[N/A]" is not established idle)."""
    values = []
    for line in filter(str.strip, answer.splitlines()):
        try:
            values.append(float(line.strip()))
        except ValueError:
            return None
    return max(values) if values else None


def gpu_busy_percent(timeout_s: float = 10) -> float | None:
    """How busy the GPUs are right now (aiperf_qual's gate before a timed run), or None where no GPU was read."""
    if shutil.which(BUSY_QUERY[0]) is None:
        return None
    try:
        done = subprocess.run(list(BUSY_QUERY), capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return busy_percent(done.stdout) if done.returncode == 0 else None
