"""Which rows of a TRTMC inventory run the ladder: every in-group row gets a result row; only capable ones run
steps, and by default only the normal profile of each checkpoint (the others are its variants: listed, run when
named with --profile). A row that runs nothing still carries its provenance."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..plan.job import QualifyJob
from ..plan.row_start import unsupported_row
from ..plan.trtmc_checks import named_by, row_names, variant_hold
from ..results import CheckpointEntry, Inventory, ResultRow
from ..rows.end import finish_unclimbed
from ..rows.provenance import run_provenance
from ..trtmc.commands import Toolchain
from .trtmc import qualify_entry


@dataclass(frozen=True)
class _Inventory:
    """One run's inventory as its rows see it: the checkout, its toolchain, the profiles named, each row's name."""

    inventory: Inventory
    checkout: Path
    toolchain: Toolchain
    profiles: list[str] | None
    names: dict[str, str]  # by manifest: plan/trtmc_checks.row_names
    normals: dict[tuple[str | None, str | None], str]  # checkpoint@revision -> its normal profile

    def named(self, entry: CheckpointEntry) -> bool:
        return named_by(self.profiles, entry, self.names[entry.manifest])


def qualify_inventory(
    job: QualifyJob, inventory: Inventory, checkout: Path, toolchain: Toolchain, profiles: list[str] | None = None
) -> list[ResultRow]:
    """Every in-group row gets a result row; only capable ones run steps, and by default only the normal profile of
    each checkpoint (the others are its variants: listed, run when named). Each row has a folder of its own, named
    by `row_names`. The job carries the digest of the inventory.json the run wrote (`inventory_digest`)."""
    normals = {(e.checkpoint, e.revision): e.profile for e in inventory.entries if e.normal_profile}
    run = _Inventory(inventory, checkout, toolchain, profiles, row_names(inventory.entries), normals)
    selected = [e for e in inventory.entries if e.in_group and (not profiles or run.named(e))]
    return [_qualify_row(job, entry, run) for entry in selected]


def inventory_digest(written: Path, inventory: Inventory) -> str:
    """sha256 of the inventory.json the run wrote (of the inventory's JSON when it wrote none)."""
    data = written.read_bytes() if written.is_file() else inventory.model_dump_json().encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _qualify_row(job: QualifyJob, entry: CheckpointEntry, run: _Inventory) -> ResultRow:
    listed = {"trtmc-videoqa": job.command}
    name = run.names[entry.manifest]
    if entry.verdict != "temporal-video-qa":
        return finish_unclimbed(job, _with_provenance(job, unsupported_row(entry, name), run.inventory), listed)
    normal = run.normals.get((entry.checkpoint, entry.revision))
    held = variant_hold(entry, chosen=run.named(entry), normal=normal, name=name)
    if held is not None:
        return finish_unclimbed(job, _with_provenance(job, held, run.inventory), listed)
    try:
        return qualify_entry(job, entry, run.inventory, run.checkout, run.toolchain, name)
    except Exception as error:  # outside the steps (the row's start or finishing): still this row's outcome
        start = _with_provenance(job, unsupported_row(entry, name), run.inventory)
        return finish_unclimbed(job, start, listed, error)


def _with_provenance(job: QualifyJob, row: ResultRow, inventory: Inventory) -> ResultRow:
    """A row that ran nothing still says which tool, which checkout and which inventory it comes from."""
    provenance = run_provenance(
        job, mode="trtmc", settings={}, tokenizer=job.tokenizer_label, trtmc_commit=inventory.commit
    )
    return row.model_copy(update={"provenance": provenance})
