"""Atomic file writes: a reader (or a resumed run) never sees half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import BaseModel


def _named(error: OSError, path: Path) -> OSError:
    """The same error, naming the artifact it was writing (a write or flush error names no file of its own)."""
    if error.filename is not None or error.errno is None:
        return error
    return type(error)(error.errno, error.strerror, str(path))


def write_text_atomic(path: Path, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"), fsync=True)


def write_model_atomic(path: Path, model: BaseModel) -> Path:
    return write_text_atomic(path, model.model_dump_json(indent=2) + "\n")


def write_bytes_atomic(path: Path, data: bytes, *, fsync: bool = False) -> Path:
    """Write to a temporary file beside it, then rename: a reader never sees half a file, and a failure (a full
    or read-only file system) leaves the old file and no temporary one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as error:
        raise _named(error, path) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            if fsync:
                os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)  # mkstemp makes 0600; artifacts are for everyone who reads the run
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise _named(error, path) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
