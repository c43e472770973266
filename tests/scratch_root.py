"""Imported by conftest.py before any test runs: the test run's scratch folders go to memory (/dev/shm) where the
machine has room there, through TMPDIR, which pytest's tmp_path and every process a test starts read.

Why: a passing test's tmp_path is removed as it ends, so a run frees thousands of inodes a second, and on ext4 each
new file's inode is then searched for past the recently freed ones (the kernel's `recently_deleted`: a tenth of the
fast lane's CPU samples on the two-core development machine, its system time 14-23 s against 9-11 s in memory).
bench/README.md, "eighth round", has the figures.

Left alone: a TMPDIR or PYTEST_DEBUG_TEMPROOT that is already set (the user's choice, and the workers', which
inherit the controller's), and a /dev/shm that is missing, read-only, mounted noexec (the tests run scripts they
write), short of MIN_FREE (Docker gives a container 64 MB) or whose folder for this user is not a private folder of
this user's. The folder stays between runs: pytest keeps the last three runs' failed tests' folders there, as it
would in /tmp. The header of each run says where the scratch went.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

SHM = Path("/dev/shm")
MIN_FREE = 1024**3  # the whole suite held at most 134 MB there at once (polled every 0.3 s)
USER_SET = ("TMPDIR", "PYTEST_DEBUG_TEMPROOT")


def memory_root(shm: Path = SHM) -> Path | None:
    """This user's private folder in `shm`, made if missing; None where the tests should stay where they are."""
    try:
        fs = os.statvfs(shm)
    except OSError:
        return None
    if fs.f_flag & (os.ST_RDONLY | os.ST_NOEXEC) or fs.f_bavail * fs.f_frsize < MIN_FREE:
        return None
    root = shm / f"videoqa-tests-{os.getuid()}"  # short: AIPerf binds Unix sockets below TMPDIR (107 bytes)
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    found = root.lstat()  # a link or another user's folder in a shared /dev/shm is not ours to write in
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        return None
    return root


def choose() -> str:
    """Sets TMPDIR for this process and the ones it starts; returns the line the run's header shows."""
    if any(os.environ.get(name) for name in USER_SET):
        return f"scratch: {os.environ.get('PYTEST_DEBUG_TEMPROOT') or tempfile.gettempdir()} (as set)"
    root = memory_root()
    if root is None:
        return f"scratch: {tempfile.gettempdir()} (/dev/shm missing, small, noexec or not private)"
    os.environ["TMPDIR"] = str(root)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    return f"scratch: {root} (memory; tests/scratch_root.py)"


HEADER = choose()
