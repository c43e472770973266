"""Which rows of a TRTMC inventory run the ladder: every in-group row gets a result row; only capable ones run
steps, and by default only the normal profile of each checkpoint (the others are its variants: listed, run when
named with --profile). A row that runs nothing still carries its provenance."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..plan.job import QualifyJob
from ..plan.row_start import unsupported_row
from ..plan.trtmc_checks import variant_hold
from ..results import CheckpointEntry, Inventory, ResultRow
from ..rows.finish import crashed_row, finish_row, run_provenance
from ..trtmc.commands import Toolchain
from .trtmc import qualify_entry


def qualify_inventory(
    job: QualifyJob, inventory: Inventory, checkout: Path, toolchain: Toolchain, profiles: list[str] | None = None
) -> list[ResultRow]:
    """Every in-group row gets a result row; only capable ones run steps, and by default only the normal profile of
    each checkpoint (the others are its variants: listed, run when named). The job carries the digest of the
    inventory.json the run wrote (`inventory_digest`)."""
    normals = {(e.checkpoint, e.revision): e.profile for e in inventory.entries if e.normal_profile}
    selected = [e for e in inventory.entries if e.in_group and (not profiles or e.profile in profiles)]
    return [
        _qualify_row(
            job, entry, inventory, checkout, toolchain, profiles, normals.get((entry.checkpoint, entry.revision))
        )
        for entry in selected
    ]


def inventory_digest(written: Path, inventory: Inventory) -> str:
    """sha256 of the inventory.json the run wrote (of the inventory's JSON when it wrote none)."""
    data = written.read_bytes() if written.is_file() else inventory.model_dump_json().encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _qualify_row(
    job: QualifyJob,
    entry: CheckpointEntry,
    inventory: Inventory,
    checkout: Path,
    toolchain: Toolchain,
    profiles: list[str] | None,
    normal: str | None,
) -> ResultRow:
    listed = {"trtmc-videoqa": job.command}
    if entry.verdict != "temporal-video-qa":
        return finish_row(job, _with_provenance(job, unsupported_row(entry), inventory), listed)
    held = variant_hold(entry, chosen=bool(profiles and entry.profile in profiles), normal=normal)
    if held is not None:
        return finish_row(job, _with_provenance(job, held, inventory), listed)
    try:
        return qualify_entry(job, entry, inventory, checkout, toolchain)
    except Exception as error:  # outside the steps (the row's start or finishing): still this row's outcome
        return crashed_row(job, _with_provenance(job, unsupported_row(entry), inventory), "plan", error, listed)


def _with_provenance(job: QualifyJob, row: ResultRow, inventory: Inventory) -> ResultRow:
    """A row that ran nothing still says which tool, which checkout and which inventory it comes from."""
    provenance = run_provenance(
        job, mode="trtmc", settings={}, tokenizer=job.tokenizer_label, trtmc_commit=inventory.commit
    )
    return row.model_copy(update={"provenance": provenance})
