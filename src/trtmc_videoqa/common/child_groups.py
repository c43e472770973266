"""Every process group the tool starts dies with it, even after `kill -9` of the tool.

Children start in process groups of their own (AIPerf's services are grandchildren inside AIPerf's group), which is
why they would outlive the tool: `kill -9` runs no `finally`. So the first group registered starts a watcher: a
small Python process in a session of its own that reads a pipe whose only writer is this process. Each group is
written to it when it starts (`+PGID START`) and when it has been ended (`-PGID`). When the pipe reaches its end (the
tool exited, however: the kernel closes its end), the watcher ends every group still registered, SIGTERM then
SIGKILL after a short grace, and exits. A group is named by its leader's pid and start time, so a pid the system has
since given to another process is never signalled.

Listeners (the output lock) are told the live groups on every change, so a later run on the same output folder can
find and end any group a watcher could not (the watcher killed too). Linux only (/proc); elsewhere a group is ended
without the start-time check. Imports nothing of ours.

    python -m trtmc_videoqa.common.child_groups --watch    (what the watcher runs; its stdin is the pipe)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

GRACE_S = 2.0  # SIGTERM first (a server flushes its records), then SIGKILL
# Every child we start carries this variable (its children inherit it): which run of the tool started it. A group
# named in an output folder's lock file is ended only when one of its processes carries the run's own value, so a
# lock file planted or left in a shared folder can never make a run signal someone else's processes.
CHILD_ENV = "TRTMC_VIDEOQA_CHILD_OF"
Groups = dict[int, int]  # process group id -> its leader's start time (clock ticks since boot; 0: unknown)
Listener = Callable[[Groups], None]

_lock = threading.Lock()
_groups: Groups = {}
_listeners: list[Listener] = []
_pipe: int | None = None  # the write end of the watcher's stdin
_watcher: subprocess.Popen[bytes] | None = None


def proc_bytes(path: str) -> bytes:
    """A /proc file's bytes, read with plain system calls: the memory sampler reads every process's stat twice a
    second, where a text file object's setup and decoding cost more than the read itself."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22); 0 when it cannot be read."""
    try:
        stat = proc_bytes(f"/proc/{pid}/stat")
        return int(stat[stat.rindex(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def members(pgid: int) -> list[int]:
    """The live processes (zombies aside) whose process group is `pgid`, read from /proc."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = proc_bytes(f"{entry.path}/stat")
            except OSError:
                continue
            fields = stat[stat.rindex(b")") + 2 :].split()
            if fields[0] != b"Z" and int(fields[2]) == pgid:
                found.append(int(entry.name))
    return found


def group_memory(pgid: int, pids: list[int] | None = None) -> int:
    """Bytes the group's processes (`pids`, else read now) hold together: the sum of their proportional set sizes (a
    page shared by several counts once over them; /proc/PID/smaps_rollup), or of their resident sizes where that
    cannot be read. Reading them walks each process's page tables: about 30 ms for AIPerf's processes."""
    total = 0
    for pid in members(pgid) if pids is None else pids:
        try:
            rollup = proc_bytes(f"/proc/{pid}/smaps_rollup")
            total += next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith(b"Pss:")) * 1024
        except (OSError, StopIteration, ValueError, IndexError):
            total += _resident(pid)
    return total


def group_resident(pids: list[int]) -> int:
    """Bytes resident in these processes together (/proc/PID/statm), read for almost nothing: a bound over what
    group_memory sums, since a page shared by several counts for each of them here."""
    return sum(_resident(pid) for pid in pids)


def _resident(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(proc_bytes(f"/proc/{pid}/statm").split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return 0


def run_token() -> str:
    """This process as its children's variable names it: its pid and start time."""
    return f"{os.getpid()}.{start_time(os.getpid())}"


def child_environment(env: dict[str, str] | None) -> dict[str, str]:
    """The environment for a child we start (`env`, or ours): the same, with this run's CHILD_ENV."""
    return {**(os.environ if env is None else env), CHILD_ENV: run_token()}


def carries_token(pgid: int, token: str) -> bool:
    """Some process of the group carries CHILD_ENV=token: it was started by that run of the tool."""
    wanted = f"{CHILD_ENV}={token}".encode()
    for pid in members(pgid):
        with contextlib.suppress(OSError):
            if wanted in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                return True
    return False


def holds_file_under(pgid: int, folder: Path) -> bool:
    """Some process of the group has a file open under `folder` (its log in the output folder: every child we start
    writes its output there). AIPerf's services rename themselves (setproctitle), which overwrites what
    /proc/PID/environ shows, so the variable alone cannot name them."""
    prefix = str(folder.resolve()) + os.sep
    for pid in members(pgid):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                        return True
    return False


def is_ours(pgid: int, started: int) -> bool:
    """The group still holds a process and is the one registered: a pid is never given again while a group of
    that id holds a process, so only a live leader with another start time means the id is now someone else's."""
    leader = start_time(pgid)
    if leader and started and leader != started:
        return False
    return bool(members(pgid)) if Path("/proc").is_dir() else True


def end_group(pgid: int, started: int = 0, grace_s: float = GRACE_S) -> bool:
    """SIGTERM to the group, then SIGKILL to whatever is left after `grace_s`; True when none of it is left."""
    return not end_groups({pgid: started}, grace_s)


def end_groups(groups: Groups, grace_s: float = GRACE_S) -> list[int]:
    """Every group of `groups` that is still ours ended together: SIGTERM, then SIGKILL to what is left after
    `grace_s`. The groups that could not be ended (not ours to signal, or a process that would not die)."""
    left = {pgid for pgid, started in groups.items() if is_ours(pgid, started)}
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 1.0)):
        for pgid in sorted(left):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while left and time.monotonic() < deadline:
            left = {pgid for pgid in left if members(pgid)}
            if left:
                time.sleep(0.05)
        if not left:
            break
    return sorted(left)


def register(pgid: int) -> None:
    """The group of a child we started (its own leader): ended by the watcher if this process goes first."""
    with _lock:
        _groups[pgid] = start_time(pgid)
        _tell(f"+{pgid} {_groups[pgid]}\n")
        _notify()


def unregister(pgid: int) -> None:
    """The group has been ended (or its leader reaped and the rest killed): nothing for the watcher to do."""
    with _lock:
        if _groups.pop(pgid, None) is not None:
            _tell(f"-{pgid}\n")
            _notify()


def live_groups() -> Groups:
    with _lock:
        return dict(_groups)


def add_listener(listener: Listener) -> None:
    """`listener` gets the live groups now and on every change (the output lock records them)."""
    with _lock:
        _listeners.append(listener)
        listener(dict(_groups))


def remove_listener(listener: Listener) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def _notify() -> None:
    for listener in list(_listeners):
        with contextlib.suppress(OSError):
            listener(dict(_groups))


def _tell(line: str) -> None:
    """One line to the watcher, started on first use; a watcher that is gone is started again."""
    global _pipe, _watcher
    for _ in range(2):
        if _pipe is None or _watcher is None or _watcher.poll() is not None:
            _start_watcher()
        assert _pipe is not None
        try:
            os.write(_pipe, line.encode())
            return
        except OSError:  # the watcher died: start another, which is told every live group again
            _close_pipe()


def _start_watcher() -> None:
    global _pipe, _watcher
    _close_pipe()
    read, write = os.pipe()  # both ends close on exec: no child but the watcher ever holds the write end
    try:
        _watcher = subprocess.Popen(
            [sys.executable, "-m", __name__, "--watch"],
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C or hang-up of the terminal reaches the tool, not the watcher
        )
    finally:
        os.close(read)
    _pipe = write
    os.write(write, "".join(f"+{pgid} {started}\n" for pgid, started in _groups.items()).encode())


def _close_pipe() -> None:
    global _pipe
    if _pipe is not None:
        with contextlib.suppress(OSError):
            os.close(_pipe)
        _pipe = None


def watch(stream: Iterable[str] | None = None) -> None:
    """The watcher: read registrations until the tool's end of the pipe closes, then end every group left."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    groups: Groups = {}
    source = stream if stream is not None else sys.stdin
    for line in source:
        text = line.strip()
        with contextlib.suppress(ValueError, IndexError):
            if text.startswith("+"):
                pgid, started = text[1:].split()
                groups[int(pgid)] = int(started)
            elif text.startswith("-"):
                groups.pop(int(text[1:]), None)
    end_groups(groups)


if __name__ == "__main__" and sys.argv[1:] == ["--watch"]:
    watch()
