"""The `plan` stage of a TRTMC row: the row a capable checkpoint starts from, then the checks before anything runs
(names that would lead outside their place fail the row; a machine without TRTMC or a GPU blocks it)."""

from __future__ import annotations

from ..climb.checkpoint import Checkpoint
from ..climb.protocol import Climb, Stop
from ..plan.row_start import unsupported_row, with_workload_facts
from ..plan.trtmc_checks import manifest_path_problem
from ..results import StageResult
from .identity.trtmc_native import trtmc_mechanics


def planned(cp: Checkpoint, key: str) -> Climb:
    """The row a capable checkpoint starts from: the plan stage passed, its workload facts, nothing run yet."""
    entry = cp.entry
    plan = StageResult(
        name="plan",
        status="passed",
        detail=f"verdict {entry.verdict}",
        evidence=[f"{e.file}:{e.line}" for e in entry.evidence if e.line][:4],
    )
    row = unsupported_row(entry, cp.profile).model_copy(
        update=dict(
            status="planned",
            status_reason="temporal video QA capability found; nothing run yet",
            cache_key=key,
            stages=[plan],
            # a fact of the checkout, so a row stopped before serving says it too (the older layout: none)
            serving_mechanics=trtmc_mechanics(cp, entry.native_request.operation if entry.native_request else None),
        )
    )
    return Climb(
        row=with_workload_facts(cp.job, row),
        commands={"trtmc-videoqa": cp.job.command},
        precision=(entry.precision, "the manifest's declared precision (no bundle built yet)"),
    )


def check_plan(cp: Checkpoint, climb: Climb) -> Climb | Stop:
    """Names that would lead outside their place fail the row; a machine without TRTMC or a GPU blocks it."""
    escape = manifest_path_problem(cp.entry, cp.checkout, cp.inventory.layout)
    if escape:
        stage = StageResult(name="plan", status="failed", detail=escape, evidence=[cp.entry.manifest])
        return Stop(climb, stage, "failed", escape, failed="plan")
    missing = "; ".join(cp.toolchain.missing())
    if missing:
        return Stop(climb, StageResult(name="build", status="blocked", detail=missing), "blocked", missing)
    return climb
