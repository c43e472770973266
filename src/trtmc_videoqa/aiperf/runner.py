"""Run a subprocess under our own wall limit, in its own process group, ending the whole group when it overstays.

AIPerf spawns about seven processes and its controller can hang on SIGINT, so the group is sent SIGTERM, then
SIGKILL; our own Ctrl-C ends the group too before it is passed on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel

from ..common.atomic_write import open_for_writing
from ..common.stop_signals import stop_signals_ignored

GRACE_S = 10.0


class RunOutcome(BaseModel):
    exit_code: int | None
    timed_out: bool
    wall_s: float
    log: str
    interrupted: bool = False  # we were interrupted (SIGINT) and ended the group
    gpu_busy_percent: float | None = None  # the busiest GPU just before AIPerf started; None: no GPU was read


def _end_group(process: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, GRACE_S)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_with_wall_limit(
    argv: list[str], *, wall_limit_s: float, log_path: Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> RunOutcome:
    start = time.monotonic()
    with open_for_writing(log_path) as log:
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        try:
            exit_code = process.wait(timeout=wall_limit_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            _end_group(process)
            exit_code, timed_out = process.returncode, True
        except BaseException:  # Ctrl-C or a crash of ours: leave no orphaned group behind
            # A second Ctrl-C (or SIGTERM) while the group is being ended must not leave it half-ended.
            with stop_signals_ignored():
                _end_group(process)
            raise
        finally:
            # The main process may be gone while children linger; end the rest of the group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
    return RunOutcome(exit_code=exit_code, timed_out=timed_out, wall_s=time.monotonic() - start, log=str(log_path))
