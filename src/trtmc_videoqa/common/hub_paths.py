"""The local Hugging Face hub cache, looked up and never downloaded from: where it is, where it keeps a checkpoint's
snapshot at a revision, and a small JSON file of that snapshot read as an object."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .safe_names import plain_revision, safe_name
from .safe_read import UnreadableInput, read_regular_file


def hub_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face hub cache this environment uses (HF_HUB_CACHE, else HF_HOME/hub, else the default)."""
    env = os.environ if environ is None else environ
    return Path(env.get("HF_HUB_CACHE") or Path(env.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub")


def snapshot_dir(checkpoint: str | None, revision: str | None, environ: Mapping[str, str] | None = None) -> Path | None:
    """Where the hub cache keeps `org/name` at `revision` (whether or not it is there); None for a checkpoint or
    revision that could name a path anywhere else."""
    if (
        not checkpoint
        or not revision
        or checkpoint.count("/") != 1
        or not plain_revision(revision)
        or not all(map(safe_name, checkpoint.split("/")))
    ):
        return None
    return hub_cache_dir(environ) / f"models--{checkpoint.replace('/', '--')}" / "snapshots" / revision


def json_object(path: Path, max_bytes: int) -> dict[str, Any] | None:
    """The JSON object in a regular file of at most `max_bytes`; None when it is missing, larger, or no object."""
    try:
        data = json.loads(read_regular_file(path, max_bytes))
    except (UnreadableInput, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
