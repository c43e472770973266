"""Look-ups in the local Hugging Face hub cache, never a download: where a checkpoint's pinned revision is, whether
that is the revision a build read, and the checkpoint's own tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..common.hub_paths import snapshot_dir
from ..results import CheckpointEntry

if TYPE_CHECKING:
    from .job import QualifyJob


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


def checkpoint_tokenizer(job: QualifyJob, entry: CheckpointEntry) -> tuple[Path, str]:
    """The row's tokenizer: one given with --tokenizer, else the checkpoint's own from the hub cache at its pinned
    revision, else the run's small local one. Token counts only; never a download."""
    from ..aiperf.tokenizer import LOCAL_TOKENIZER_NAME, has_tokenizer

    snapshot = hub_snapshot(entry)
    if (
        job.tokenizer_label.startswith(LOCAL_TOKENIZER_NAME)
        and snapshot is not None
        and has_tokenizer(snapshot)
        and "auto_map" not in (snapshot / "tokenizer_config.json").read_text(errors="replace")
    ):
        # (a tokenizer that needs the checkpoint's own code would need trust_remote_code: AIPerf is not given it)
        return snapshot, f"the checkpoint's own tokenizer ({entry.checkpoint}@{entry.revision}, hub cache)"
    return job.tokenizer, job.tokenizer_label
