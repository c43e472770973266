"""The sha256 of a file, read in blocks: one definition for clips, bundles, workload files and stamps; and of a file
an earlier run left, which is hashed only as a regular file under a cap (`bounded_file_sha256`)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def bounded_file_sha256(path: Path, max_bytes: int) -> str | None:
    """The sha256 of `path` when it is a regular file (never through a link) of at most `max_bytes`; None for
    anything else (a link, a device such as /dev/zero, a FIFO, a folder, a file too large, one missing): what is
    hashed from a folder a run did not make itself always ends."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        digest, left = hashlib.sha256(), max_bytes + 1
        while left > 0 and (block := stream.read(min(1 << 20, left))):
            digest.update(block)
            left -= len(block)
    return digest.hexdigest() if left > 0 else None
