"""Atomic artifact writes: a reader (or a resumed run) never sees half a file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import BaseModel


def write_text_atomic(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)  # mkstemp makes 0600; artifacts are for everyone who reads the run
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def write_model_atomic(path: Path, model: BaseModel) -> Path:
    return write_text_atomic(path, model.model_dump_json(indent=2) + "\n")
