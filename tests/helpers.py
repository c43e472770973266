"""Plain helpers shared by the test modules: the console script run as a user runs it, and what its runs leave.
The shared fixtures are in conftest.py; these are functions because tests call them with their own arguments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from trtmc_videoqa.results import ResultRow

# A small run where a test is not about volume: the synthetic workload, one warmup and six profiling requests.
QUICK = ("--workload", "synthetic", "--repeats", "1", "--warmup", "1")


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m trtmc_videoqa ARGS` in a subprocess (env None: this process's environment), its output kept."""
    argv = [sys.executable, "-m", "trtmc_videoqa", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def qualify(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return cli("qualify", *args, env=env, timeout=timeout)


def row(out: Path, profile: str) -> ResultRow:
    """The result row a run wrote for `profile` under its output directory `out`."""
    return ResultRow.model_validate_json((out / "checkpoints" / profile / "result.json").read_bytes())


def no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr


def one_message(done: subprocess.CompletedProcess[str]) -> str:
    """stderr is exactly one non-blank line, and it is that line."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]
