"""One run per output directory: the lock a run holds on it while it writes there, and the process groups the run
started, recorded in it so that a later run on the same folder ends any that outlived their run."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

from . import child_groups
from .atomic_write import check_target
from .errors import UserError

LOCK_NAME = ".trtmc-videoqa.lock"


class OutputBusy(UserError):
    """Another run holds the output directory."""


class OutputLock:
    """One run per output directory: a second one fails fast. The lock is an flock on the lock file, so it is
    released when its holder dies (no stale lock to judge) and two runs starting together cannot both take it;
    the pid inside only names the holder in the message.

    The lock file also lists the process groups the run has started and not yet ended (`group PGID START`, kept
    current through `child_groups`). A run killed with -9 leaves the file behind; the next run that takes the lock
    ends every group it lists that is still alive (its watcher normally has already) before anything else, and
    refuses the folder, naming them, when one cannot be ended: no orphan writes into its exports."""

    def __init__(self, out: Path) -> None:
        self.path = out / LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(20):
            check_target(self.path)  # a planted link or device is refused by name
            try:  # never through a link, never a FIFO that would block the open
                fd = os.open(self.path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
            except OSError:
                check_target(self.path)  # planted between the check and the open
                raise
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                check_target(self.path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_pid(fd)
                os.close(fd)
                raise OutputBusy(
                    f"output directory {self.path.parent} is in use by another run"
                    f"{f' (pid {holder})' if holder else ''}; wait for it to finish or choose another "
                    "--out"
                ) from None
            if not _same_file(fd, self.path):  # the holder removed it as we opened it: lock the new one
                os.close(fd)
                continue
            try:
                _reap_left_groups(fd, self.path.parent)
            except BaseException:  # groups left that cannot be ended: the file keeps naming them
                os.close(fd)
                raise
            try:
                _write_holder(fd, {})
            except BaseException:  # a full file system: no half-written lock is left behind
                self.path.unlink(missing_ok=True)
                os.close(fd)
                raise
            self._fd = fd
            child_groups.add_listener(self._record)
            return self
        raise OutputBusy(f"could not lock {self.path.parent}; another run keeps replacing {self.path}")

    def _record(self, groups: child_groups.Groups) -> None:
        if self._fd is not None:
            _write_holder(self._fd, groups)

    def __exit__(self, *exc: object) -> None:
        child_groups.remove_listener(self._record)
        if self._fd is not None:
            self.path.unlink(missing_ok=True)  # before the unlock, so a waiter never locks a file being removed
            os.close(self._fd)
            self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().split("\n", 1)[0].strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _write_holder(fd: int, groups: child_groups.Groups) -> None:
    """The lock file's content: our pid, then each live group of ours with the token its processes carry."""
    token = child_groups.run_token()
    lines = "".join(f"group {pgid} {started} {token}\n" for pgid, started in sorted(groups.items()))
    text = f"{os.getpid()}\n{lines}"
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode(), 0)


def _left_groups(fd: int, out: Path) -> child_groups.Groups:
    """The groups an earlier holder listed (it is gone: we hold the lock), from at most 64 kB of the file: only
    those of which a process still carries the token of the run that listed them (child_groups.carries_token) or
    has a file open in this output folder (its log): never a group a planted line names."""
    groups: child_groups.Groups = {}
    try:
        text = os.pread(fd, 1 << 16, 0).decode(errors="replace")
    except OSError:
        return groups
    for line in text.splitlines():
        words = line.split()
        if len(words) != 4 or words[0] != "group" or not (words[1].isdigit() and words[2].isdigit()):
            continue
        pgid = int(words[1])
        if pgid <= 1:  # never 0 or 1, which name every process
            continue
        if child_groups.carries_token(pgid, words[3]) or child_groups.holds_file_under(pgid, out):
            groups[pgid] = int(words[2])
    return groups


def _reap_left_groups(fd: int, out: Path) -> None:
    """End what an earlier run on this folder left running; refuse the folder when some of it cannot be ended."""
    left = child_groups.end_groups(_left_groups(fd, out), grace_s=1.0)
    if left:
        raise OutputBusy(
            f"an earlier run on {out} left process group(s) {', '.join(map(str, left))} running and they could "
            f"not be ended; end them (kill -9 -- -{left[0]}) or choose another --out"
        )


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == path.stat().st_ino
    except OSError:
        return False
