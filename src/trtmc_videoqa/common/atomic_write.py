"""Every file the tool writes: a regular file it created, written atomically.

A reader (or a resumed run) never sees half a file, and nothing is ever written through a link or into a device:
the tool runs as root in containers and CI, where following a planted link or replacing /dev/full does real harm.
A target that exists and is not a regular file (a symbolic link, a device, a FIFO, a folder) is refused, and so is
a folder that does not exist where the caller did not name it as one to create.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from pydantic import BaseModel

from .errors import UserError


class UnsafeTarget(UserError):
    """A path the tool was to write is not a regular file it may replace, or its folder does not exist."""


_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def check_target(path: Path, *, make_parents: bool = True) -> None:
    """Raise UnsafeTarget unless path is absent or a regular file (never followed: lstat), and, unless
    make_parents, its folder exists."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        if not make_parents and not path.parent.is_dir():
            raise UnsafeTarget(
                f"{path.parent} does not exist: create the folder first, or write {path.name} into one that exists"
            ) from None
        return
    except OSError as error:
        raise _named(error, path) from None
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
        raise UnsafeTarget(
            f"{path} is {kind}: trtmc-videoqa writes only regular files it creates and never through a link or "
            "into a device; remove it or choose another path"
        )


def check_inside(path: Path, root: Path) -> None:
    """Raise UnsafeTarget unless path's folder, every link in it resolved, is root or inside it: a folder on the way
    replaced by a link never takes a write out of the output folder."""
    if not path.parent.resolve().is_relative_to(root.resolve()):
        raise UnsafeTarget(
            f"{path.parent} leads outside {root} (a folder on the way is a link): trtmc-videoqa writes an output "
            "folder's files only inside it; remove the link"
        )


def open_for_writing(path: Path) -> BinaryIO:
    """A log or stream the tool writes as it goes: created or truncated, never through a link (O_NOFOLLOW) and
    never a device or FIFO (checked before it is opened, and again on what was opened)."""
    return os.fdopen(_open_regular(path, os.O_TRUNC), "wb")


def open_for_appending(path: Path) -> TextIO:
    """`open_for_writing`, appending UTF-8 text (a records file or an access log that grows line by line)."""
    return os.fdopen(_open_regular(path, os.O_APPEND), "a", encoding="utf-8")


def _open_regular(path: Path, mode_flag: int) -> int:
    check_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | mode_flag | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        check_target(path)  # a link or FIFO planted since the check: say so by name
        raise _named(error, path) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        check_target(path)
    os.set_blocking(fd, True)
    return fd


def _named(error: OSError, path: Path) -> OSError:
    """The same error, naming the artifact it was writing (a write or flush error names no file of its own)."""
    if error.filename is not None or error.errno is None:
        return error
    return type(error)(error.errno, error.strerror, str(path))


def write_text_atomic(path: Path, text: str, *, make_parents: bool = True) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"), fsync=True, make_parents=make_parents)


def write_model_atomic(path: Path, model: BaseModel) -> Path:
    return write_text_atomic(path, model.model_dump_json(indent=2) + "\n")


def write_bytes_atomic(path: Path, data: bytes, *, fsync: bool = False, make_parents: bool = True) -> Path:
    """Write to a temporary file beside it (mkstemp: a new name, created exclusively), then rename: a reader never
    sees half a file, and a failure (a full or read-only file system) leaves the old file and no temporary one. The
    target must be absent or a regular file (`check_target`); its folder is made unless make_parents is False."""
    return _write_atomic(path, lambda stream: stream.write(data), fsync=fsync, make_parents=make_parents)


def copy_file_atomic(source: Path, path: Path) -> Path:
    """`source`'s bytes written to `path` as `write_bytes_atomic` writes (streamed, never held whole): what
    `shutil.copyfile` would do, but never through a link, into a device or over half a file."""
    with source.open("rb") as stream:
        return _write_atomic(path, lambda out: shutil.copyfileobj(stream, out, 1 << 20))


class _Unchanged(Exception):
    """Raised inside a rewrite that found nothing to change: its temporary file goes and the file stays as it was."""


def rewrite_atomic(path: Path, fill: Callable[[BinaryIO], bool]) -> bool:
    """`write_bytes_atomic` for a rewrite that may find nothing to change (a scrub): `fill` writes the new bytes and
    says whether they differ from the file's; only then is the file replaced. Whether it was."""

    def filled(stream: BinaryIO) -> None:
        if not fill(stream):
            raise _Unchanged  # the temporary file is removed on the way out (_temporary_beside)

    try:
        _write_atomic(path, filled, make_parents=False)
    except _Unchanged:
        return False
    return True


@contextlib.contextmanager
def atomic_target(path: Path) -> Iterator[Path]:
    """For a writer that opens a path itself (PyAV): a new temporary file beside `path` (mkstemp) to write, renamed
    onto `path` when the block ends, removed when it raises; `path` is checked as `write_bytes_atomic` checks it."""
    with _temporary_beside(path, suffix=f".tmp{path.suffix}") as (handle, temporary):
        os.close(handle)
        yield temporary
        check_target(path)  # planted while the writer wrote: refused, never replaced


def _write_atomic(
    path: Path, fill: Callable[[BinaryIO], object], *, fsync: bool = False, make_parents: bool = True
) -> Path:
    with (
        _temporary_beside(path, suffix=".tmp", make_parents=make_parents) as (handle, _),
        os.fdopen(handle, "wb") as stream,
    ):
        fill(stream)
        stream.flush()
        if fsync:
            os.fsync(stream.fileno())
    return path


@contextlib.contextmanager
def _temporary_beside(path: Path, *, suffix: str, make_parents: bool = True) -> Iterator[tuple[int, Path]]:
    """A new temporary file beside `path` (mkstemp: a new name, created exclusively; its descriptor open), renamed
    onto `path` when the block ends and removed when it raises; `path` is checked first (`check_target`), its folder
    made unless make_parents is False."""
    check_target(path, make_parents=make_parents)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    except OSError as error:
        raise _named(error, path) from None
    try:
        yield handle, Path(temporary)
        os.chmod(temporary, 0o644)  # mkstemp makes 0600; artifacts are for everyone who reads the run
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise _named(error, path) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
