"""The local Hugging Face hub cache, looked up and never downloaded from: where it is, where it keeps a checkpoint's
snapshot at a revision (a manifest's pinned one), whether that is the revision a build read, and a small JSON file
of that snapshot read as an object. The one home of the hub cache: the audit, the stages, the comparison server and
the publish step all look it up here."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..common.safe_names import plain_revision, safe_name
from ..common.safe_read import UnreadableInput, read_regular_file

if TYPE_CHECKING:
    from ..results import CheckpointEntry  # its schemas load on first use: an annotation only


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


def hub_snapshot(entry: CheckpointEntry, environ: dict[str, str] | None = None) -> Path | None:
    """Where the hub cache keeps this checkpoint at its pinned revision (the build fetched it there), or None."""
    return snapshot_dir(entry.checkpoint, entry.revision, environ)


def revision_check(entry: CheckpointEntry) -> str:
    """Whether the checkpoint revision the manifest pins is the one the build read: `trtmc build` takes no revision,
    so the evidence is the hub cache holding a snapshot of exactly that revision."""
    if not entry.revision:
        return "the manifest pins no revision"
    snapshot = hub_snapshot(entry)
    try:  # the revision the hub served for the default branch, which is what a build without a revision reads
        served = (snapshot.parents[1] / "refs" / "main").read_text().strip() if snapshot is not None else None
    except OSError:
        served = None
    if served == entry.revision and snapshot is not None and snapshot.is_dir():
        return f"verified: the hub cache's main of {entry.checkpoint} is {entry.revision}, the pinned revision"
    if served:
        return (
            f"differs: the manifest pins {entry.revision}, the hub cache's main of {entry.checkpoint} (what "
            f"`trtmc build`, which takes no revision, read) is {served}"
        )
    return (
        f"not verified: the manifest pins {entry.revision}, `trtmc build` takes no revision, and the hub cache "
        "records no main for it"
    )
