"""The TRTMC ladder: one capable checkpoint of a TRTMC checkout, planned -> aiperf-qualified.

    plan -> build -> correctness (the family's own, same bundle) -> serve (trtmc-server) -> capability (chat; a
    video Task's native route where chat refuses the video) -> aiperf -> timing -> grading -> output-check -> identity
    (trtmc-server's chat against perf_serving's Task route)

The ladder is data: a tuple of steps, each a stage of stages/ with the one signature `(row, climb) -> Climb | Stop`.
The row is written once, here, by whichever stage ended it.
"""

from __future__ import annotations

from pathlib import Path

from ..plan.cache_keys import reusable, trtmc_key
from ..plan.hub_cache import checkpoint_tokenizer, revision_check
from ..plan.job import QualifyJob
from ..results import CheckpointEntry, Inventory, Provenance, ResultRow
from ..rows.finish import crashed_row, finish_row, measured_row, run_provenance, stopped_row
from ..stages.aiperf import aiperf
from ..stages.build import build
from ..stages.checkpoint import Checkpoint
from ..stages.correctness import correctness
from ..stages.grading import grading
from ..stages.identity.trtmc_native import trtmc_identity
from ..stages.output_check import output_check
from ..stages.plan_checks import check_plan, planned
from ..stages.protocol import Climb, Gates, Measurement, Step, Stop, climb_ladder, measured_end, reached
from ..stages.serve import serve
from ..stages.timing import timing
from ..stages.trtmc_capability import trtmc_capability
from ..trtmc.commands import Toolchain

TRTMC_LADDER: tuple[Step[Checkpoint], ...] = (
    Step("plan", check_plan),
    Step("build", build),
    Step("correctness", correctness),
    Step("serve", serve),
    Step("capability", trtmc_capability),
    Step("aiperf", aiperf),
    Step("timing", timing),
    Step("grading", grading),
    Step("output-check", output_check),
    Step("identity", trtmc_identity),
)


def qualify_entry(
    job: QualifyJob, entry: CheckpointEntry, inventory: Inventory, checkout: Path, toolchain: Toolchain, name: str
) -> ResultRow:
    """One capable checkpoint through every step, as far as this machine and the evidence allow; `name` is its
    row's (its profile, unless another family's manifest names the same one: `plan/trtmc_checks.row_names`)."""
    tokenizer, tokenizer_label = checkpoint_tokenizer(job, entry)
    key = trtmc_key(job, entry, inventory, tokenizer_label)
    previous = reusable(job.row_dir(name), key, job.force)
    if previous is not None:
        job.progress(f"{name}: unchanged inputs, result reused")
        return previous
    cp = Checkpoint(
        job=job,
        profile=name,
        tokenizer=tokenizer,
        gates=Gates(require_task_time=True),  # on trtmc-server every task time is a gate
        entry=entry,
        inventory=inventory,
        checkout=checkout,
        toolchain=toolchain,
        tokenizer_label=tokenizer_label,
        revision_check=revision_check(entry),
    )
    with cp.resources:  # a server a stage started stops when the row ends, before the row is written
        end = climb_ladder(TRTMC_LADDER, cp, planned(cp, key))
    try:
        if isinstance(end, Stop) and end.status is not None:
            return finish_row(cp.job, stopped_row(end, _provenance(cp, end.at)), end.at.commands)
        return _measured(cp, *measured_end(end))
    except Exception as error:  # while the row is finished: recorded at the last stage it reached
        at, stage = reached(end)
        return crashed_row(job, at, stage, error, (end.at if isinstance(end, Stop) else end).commands)


def _measured(cp: Checkpoint, climb: Climb, measurement: Measurement) -> ResultRow:
    """The row with the measurement's figures and the status its stages earn, written; a run interrupted while
    AIPerf ran stops here, once its row is written (and its server stopped)."""
    url = climb.served.url if climb.served else None
    served_by = measurement.capability.served_by if measurement.capability else None
    provenance = _provenance(cp, climb, endpoint=url, served_by=served_by, transport=measurement.video_transport)
    row = measured_row(climb.row, measurement, "aiperf-qualified", provenance)
    row = finish_row(cp.job, row, climb.commands | measurement.commands)
    if measurement.interrupted:
        raise KeyboardInterrupt
    return row


def _provenance(
    cp: Checkpoint,
    climb: Climb,
    *,
    endpoint: str | None = None,
    served_by: str | None = None,
    transport: str | None = None,
) -> Provenance:
    settings = {
        "precision_source": climb.precision[1],
        "build": cp.entry.build_settings,
        "revision_check": cp.revision_check,
        "video_transport_used": transport,
    }
    return run_provenance(
        cp.job,
        mode="trtmc",
        settings=settings,
        tokenizer=cp.tokenizer_label,
        endpoint=endpoint,
        served_by=served_by,
        trtmc_commit=cp.inventory.commit,
        server_version=f"trtmc-server built from TRTMC {cp.inventory.commit}",
        effective_precision=climb.precision[0],
        bundle_digest=climb.bundle.digest if climb.bundle else None,
    )
