"""One run per output directory: the lock a run holds on it while it writes there."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

from .atomic_write import check_target
from .errors import UserError

LOCK_NAME = ".trtmc-videoqa.lock"


class OutputBusy(UserError):
    """Another run holds the output directory."""


class OutputLock:
    """One run per output directory: a second one fails fast. The lock is an flock on the lock file, so it is
    released when its holder dies (no stale lock to judge) and two runs starting together cannot both take it;
    the pid inside only names the holder in the message."""

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
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
            except BaseException:  # a full file system: no half-written lock is left behind
                self.path.unlink(missing_ok=True)
                os.close(fd)
                raise
            self._fd = fd
            return self
        raise OutputBusy(f"could not lock {self.path.parent}; another run keeps replacing {self.path}")

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)  # before the unlock, so a waiter never locks a file being removed
            os.close(self._fd)
            self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == path.stat().st_ino
    except OSError:
        return False
