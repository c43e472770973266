"""Run a command under our own wall limit, in its own process group, ending the whole group when it overstays.

What TRTMC's commands (build, correctness) and the AIPerf client (aiperf/runner.py) share. A command that spawns
processes of its own (AIPerf starts about seven, and its controller can hang on SIGINT) is ended as a group: SIGTERM,
then SIGKILL; our own Ctrl-C ends the group too before it is passed on. The group is registered with
`child_groups`, so it dies with the tool even after `kill -9` of the tool.

An optional memory limit bounds the group from outside: twice a second a sampler sums the resident sizes of every
process of the group, a bound read for almost nothing, and where that bound passes the limit (and every 2 s, for the
peak) their proportional set sizes, which cost a walk of each process's page tables; past the limit it ends the
group. Each process also gets an address-space limit (RLIMIT_AS) of the limit plus ADDRESS_SPACE_HEADROOM as a
backstop against a spike between two samples (an idle AIPerf service maps about 3.6 GB of address space, mostly
libraries, and uses a tenth of it).
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import child_groups
from .atomic_write import open_for_writing
from .stop_signals import stop_signals_ignored

GRACE_S = 10.0
SAMPLE_S = 0.5  # how often the group's memory is checked against its limit
PSS_EVERY = 4  # every 2 s, the group's proportional sizes summed for its peak even under the resident bound
ADDRESS_SPACE_HEADROOM = 8 << 30  # each process's RLIMIT_AS is the group's memory limit plus this


@dataclass(frozen=True)
class GroupRun:
    """How a command run in its own group ended."""

    exit_code: int | None  # None where it gave none (ended by us)
    timed_out: bool  # ended at its wall limit
    wall_s: float
    memory_exceeded: bool = False  # ended past its memory limit
    peak_memory_bytes: int = 0  # the most the group held at a proportional sample (0 without a memory limit)


def run_in_group(
    argv: list[str],
    *,
    wall_limit_s: float,
    log_path: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    memory_limit_bytes: int | None = None,
) -> GroupRun:
    """`argv` in a process group of its own, its stdout and stderr to `log_path`, ended at its wall limit (and its
    memory limit, when one is given); nothing of its group outlives this call."""
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
    return GroupRun(
        exit_code=exit_code,
        timed_out=ended == "timed-out",
        wall_s=time.monotonic() - start,
        memory_exceeded=ended == "memory",
        peak_memory_bytes=peak,
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


def _wait(process: subprocess.Popen[bytes], wall_limit_s: float, memory_limit: int | None) -> tuple[str | None, int]:
    """Wait for the process: ("timed-out" | "memory" | None when it exited, the peak group memory sampled)."""
    with _ExitWatch(process) as exited:
        if not memory_limit:
            return (None if exited(wall_limit_s) else "timed-out"), 0
        deadline, peak, sample, pids = time.monotonic() + wall_limit_s, 0, 0, []
        while True:
            if exited(max(0.0, min(SAMPLE_S, deadline - time.monotonic()))):
                return None, peak
            # The group's members looked up again every PSS_EVERY-th sample and kept in between: the lookup reads
            # every process's stat on the machine (8 ms and more on a busy one, twice a second, beside AIPerf), and
            # AIPerf starts its services in its first seconds, then keeps them. A process gone since reads as 0.
            if sample % PSS_EVERY == 0:
                pids = child_groups.members(process.pid)
            # The proportional sizes every PSS_EVERY-th sample (the peak), and at any sample whose resident bound
            # passes the limit (the decision): under the bound, the group is under the limit whatever they sum to.
            if sample % PSS_EVERY == 0 or child_groups.group_resident(pids) > memory_limit:
                used = child_groups.group_memory(process.pid, pids)
                peak = max(peak, used)
                if used > memory_limit:
                    return "memory", peak
            sample += 1
            if time.monotonic() >= deadline:
                return "timed-out", peak


class _ExitWatch:
    """`exited(timeout_s)`: whether the process exited (reaped) within the timeout. Where the system gives a pidfd
    (Linux), the wait wakes the moment it exits; Popen.wait(timeout) polls, sleeping up to 50 ms between looks."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self._poll: select.poll | None = None
        self._fd: int | None = None

    def __enter__(self) -> Callable[[float], bool]:
        with contextlib.suppress(AttributeError, OSError):  # no os.pidfd_open, or a kernel without pidfds
            self._fd = os.pidfd_open(self._process.pid)
            self._poll = select.poll()
            self._poll.register(self._fd, select.POLLIN)
        return self._exited

    def __exit__(self, *_: object) -> None:
        if self._fd is not None:
            os.close(self._fd)

    def _exited(self, timeout_s: float) -> bool:
        if self._poll is not None and not self._poll.poll(timeout_s * 1000):
            return False  # still running when the time was up
        try:
            self._process.wait(timeout=timeout_s)  # at once where the pidfd said it exited
            return True
        except subprocess.TimeoutExpired:
            return False


def _limit_address_space(pid: int, limit: int) -> None:
    """RLIMIT_AS of the process (its children inherit it); never above the hard limit it already has."""
    with contextlib.suppress(OSError, ValueError):
        _, hard = resource.prlimit(pid, resource.RLIMIT_AS)
        value = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.prlimit(pid, resource.RLIMIT_AS, (value, hard))
