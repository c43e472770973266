"""Reading a file a user named or an artifact folder holds: a regular file only, and never more than a cap.

`--against /dev/zero` would read forever (and run out of memory), `--against` a FIFO would block forever, and a
huge stray file would do the same to a report. So the file is opened without following a final link into a device
and without blocking (O_NONBLOCK), checked to be a regular file on what was opened, and read up to a cap.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from .errors import UserError

MAX_RESULT_BYTES = 64 << 20  # a result row or an inventory is tens or hundreds of kB: past this it is no file of ours
MAX_STRIP_BYTES = 16 << 20  # a frame strip the report embeds is tens or hundreds of kB (8 frames of 320x180: ~0.2 MB)


class UnreadableInput(UserError):
    """A path to read that is not a regular file, or is larger than what the tool reads."""


def read_regular_file(path: Path, max_bytes: int, *, follow_links: bool = True) -> bytes:
    """The bytes of path: a regular file (a link to one is fine, unless follow_links is off) of at most max_bytes,
    else UnreadableInput."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP and not follow_links:
            raise UnreadableInput(f"{path} is a symbolic link: only a regular file is read here") from None
        raise UnreadableInput(f"cannot read {path}: {error.strerror or error}") from None
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableInput(f"{path} is not a regular file (a device, FIFO or folder): give a file")
        if info.st_size > max_bytes:
            raise UnreadableInput(
                f"{path} is {info.st_size} bytes, more than the {max_bytes} this reads: give the file"
            )
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:  # grew while being read
        raise UnreadableInput(f"{path} is more than the {max_bytes} bytes this reads")
    return data


def read_file_inside(root: Path, path: Path, max_bytes: int) -> bytes:
    """The bytes of path, a regular file inside root: never a link itself (O_NOFOLLOW), never a file that a linked
    folder on the way (or `..`) takes outside root once resolved, at most max_bytes; else UnreadableInput. What
    `report` reads of the folders it is given: a link planted there reads nothing of this machine."""
    if not path.resolve().is_relative_to(root.resolve()):
        raise UnreadableInput(f"{path} leads outside {root}: only files inside the folder are read")
    return read_regular_file(path, max_bytes, follow_links=False)


def regular_file_lines(path: Path, max_line_bytes: int) -> Iterator[bytes]:
    """The lines of path (a regular file; a link to one is fine), read as a stream, never whole: memory holds one
    line at a time, and a line longer than max_line_bytes is passed over whole. UnreadableInput when it is no
    regular file or cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise UnreadableInput(f"cannot read {path}: {error.strerror or error}") from None
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnreadableInput(f"{path} is not a regular file (a device, FIFO or folder): give a file")
        while line := stream.readline(max_line_bytes + 1):
            if len(line) <= max_line_bytes or line.endswith(b"\n"):
                yield line
                continue
            while (rest := stream.readline(max_line_bytes + 1)) and not rest.endswith(b"\n"):
                pass  # the rest of an overlong line, in pieces of the cap
