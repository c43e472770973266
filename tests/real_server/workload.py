"""The test's own workloads for `transformers serve` 5.24.0: the product's silent-audio copies of the built-in ones
(workloads/silent_audio_copy.py says which two defects of that server it steps around, and how). The server's code
is never patched, and the committed workloads stay as they are."""

from __future__ import annotations

from pathlib import Path

from trtmc_videoqa.workloads import builtin_workload
from trtmc_videoqa.workloads.silent_audio_copy import silent_audio_workload


def audio_workload(folder: Path, name: str = "bigbuckbunny") -> Path:
    """Write and seal the copy of the built-in workload `name` in `folder`; its workload file."""
    return silent_audio_workload(builtin_workload(name), folder, why="For tests/real_server.").file
