"""AIPerf in a process group of its own (common/processes.py): how its run ended, and the reason AIPerf itself
gave where it refused to run.

AIPerf is the published client and never patched; it inflates compressed bodies and keeps whole responses, so its
group runs under a memory limit as well as a wall limit (both common/processes.py's).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from ..common.processes import run_in_group


class RunOutcome(BaseModel):
    exit_code: int | None
    timed_out: bool
    wall_s: float
    log: str
    interrupted: bool = False  # we were interrupted (SIGINT) and ended the group
    gpu_busy_percent: float | None = None  # the busiest GPU just before AIPerf started; None: no GPU was read
    memory_limit_bytes: int | None = None  # the group's memory limit, when one was set
    memory_exceeded: bool = False  # the group went past it and was ended
    peak_memory_bytes: int | None = None  # the most the group held at a sample (with a limit set)
    refusal: str | None = None  # the first error its log names, when it exited with an error of its own

    def memory_detail(self) -> str:
        """Why the group was ended at its memory limit, in the row's words."""
        peak = (self.peak_memory_bytes or 0) >> 20
        return (
            f"AIPerf's processes together held {peak} MiB, past the --aiperf-memory-limit of "
            f"{(self.memory_limit_bytes or 0) >> 20} MiB, and were ended (a response too large to keep, or a "
            "compressed one that inflates: raise the limit only for a workload that needs it)"
        )


def run_with_wall_limit(
    argv: list[str],
    *,
    wall_limit_s: float,
    log_path: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    memory_limit_bytes: int | None = None,
) -> RunOutcome:
    """AIPerf's command in its own group under the wall and memory limits; AIPerf's own reason read from its log
    where it exited with an error of its own."""
    run = run_in_group(
        argv, wall_limit_s=wall_limit_s, log_path=log_path, cwd=cwd, env=env, memory_limit_bytes=memory_limit_bytes
    )
    refused = run.exit_code not in (0, None) and not run.timed_out and not run.memory_exceeded
    return RunOutcome(
        exit_code=run.exit_code,
        refusal=refusal_reason(log_path) if refused else None,
        timed_out=run.timed_out,
        wall_s=run.wall_s,
        log=str(log_path),
        memory_limit_bytes=memory_limit_bytes,
        memory_exceeded=run.memory_exceeded,
        peak_memory_bytes=run.peak_memory_bytes if memory_limit_bytes else None,
    )


# An AIPerf error line, as its console writes it ("14:26:45.960 ERROR    Dataset configuration failed: ...
# (dataset_manager.py:193)") or its own log file ("2026-12-04 14:26:45.960 - dataset_manager - ERROR - ...").
_ERROR_LINE = re.compile(
    r"^(?:\S+\s+(?:ERROR|CRITICAL)\s+(?P<text>.+?)(?:\s+\([\w.]+:\d+\))?"
    r"|\S+ \S+ - \S+ - (?:ERROR|CRITICAL) - (?P<own>.+))$"
)


def refusal_reason(log_path: Path, *, max_bytes: int = 4 << 20) -> str | None:
    """AIPerf's own reason for stopping, read from its log (the first 4 MiB): its first ERROR line without the
    time and source location, one line of at most 300 characters; None when the log names no error."""
    try:
        with open(log_path, "rb") as stream:
            text = stream.read(max_bytes).decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        match = _ERROR_LINE.match(line.strip())
        if match:
            reason = " ".join((match.group("text") or match.group("own")).split())
            return reason if len(reason) <= 300 else reason[:299] + "…"
    return None
