"""Run a subprocess under our own wall limit, in its own process group, ending the whole group when it overstays.

AIPerf spawns about seven processes and its controller can hang on SIGINT, so the group is sent SIGTERM, then
SIGKILL; our own Ctrl-C ends the group too before it is passed on. The group is registered with `child_groups`, so
it dies with the tool even after `kill -9` of the tool.

A memory limit bounds AIPerf from outside (it is the published client and never patched; it inflates compressed
bodies and keeps whole responses): a sampler sums the proportional set size of every process of the group twice a
second and ends the group at the limit, and each process gets an address-space limit (RLIMIT_AS) of the limit plus
ADDRESS_SPACE_HEADROOM as a backstop against a spike between two samples (an idle AIPerf service maps about 3.6 GB
of address space, mostly libraries, and uses a tenth of it).
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel

from ..common import child_groups
from ..common.atomic_write import open_for_writing
from ..common.stop_signals import stop_signals_ignored

GRACE_S = 10.0
SAMPLE_S = 0.5  # how often the group's memory is summed
ADDRESS_SPACE_HEADROOM = 8 << 30  # each process's RLIMIT_AS is the group's memory limit plus this


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
    argv: list[str],
    *,
    wall_limit_s: float,
    log_path: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    memory_limit_bytes: int | None = None,
) -> RunOutcome:
    start = time.monotonic()
    with open_for_writing(log_path) as log:
        process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=child_groups.child_environment(env),
            start_new_session=True,
        )
        child_groups.register(process.pid)
        if memory_limit_bytes:
            _limit_address_space(process.pid, memory_limit_bytes + ADDRESS_SPACE_HEADROOM)
        try:
            ended, peak = _wait(process, wall_limit_s, memory_limit_bytes)
            if ended == "memory":  # no grace while memory grows: the whole group at once
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            elif ended is not None:
                _end_group(process)
            exit_code = process.returncode
        except BaseException:  # Ctrl-C or a crash of ours: leave no orphaned group behind
            # A second Ctrl-C (or SIGTERM) while the group is being ended must not leave it half-ended.
            with stop_signals_ignored():
                _end_group(process)
            raise
        finally:
            # The main process may be gone while children linger: end the rest of the group, and wait (a second at
            # most) until none of it is left, so nothing of it outlives this call.
            child_groups.end_groups({process.pid: 0}, grace_s=0.0)
            child_groups.unregister(process.pid)
    refused = exit_code not in (0, None) and ended is None
    return RunOutcome(
        exit_code=exit_code,
        refusal=refusal_reason(log_path) if refused else None,
        timed_out=ended == "timed-out",
        wall_s=time.monotonic() - start,
        log=str(log_path),
        memory_limit_bytes=memory_limit_bytes,
        memory_exceeded=ended == "memory",
        peak_memory_bytes=peak if memory_limit_bytes else None,
    )


def _wait(process: subprocess.Popen[bytes], wall_limit_s: float, memory_limit: int | None) -> tuple[str | None, int]:
    """Wait for the process: ("timed-out" | "memory" | None when it exited, the peak group memory sampled)."""
    if not memory_limit:
        try:
            process.wait(timeout=wall_limit_s)
            return None, 0
        except subprocess.TimeoutExpired:
            return "timed-out", 0
    deadline, peak = time.monotonic() + wall_limit_s, 0
    while True:
        try:
            process.wait(timeout=max(0.0, min(SAMPLE_S, deadline - time.monotonic())))
            return None, peak
        except subprocess.TimeoutExpired:
            used = child_groups.group_memory(process.pid)
            peak = max(peak, used)
            if used > memory_limit:
                return "memory", peak
            if time.monotonic() >= deadline:
                return "timed-out", peak


def _limit_address_space(pid: int, limit: int) -> None:
    """RLIMIT_AS of the process (its children inherit it); never above the hard limit it already has."""
    with contextlib.suppress(OSError, ValueError):
        _, hard = resource.prlimit(pid, resource.RLIMIT_AS)
        value = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.prlimit(pid, resource.RLIMIT_AS, (value, hard))


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
