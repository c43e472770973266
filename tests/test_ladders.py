"""The two ladders are data: tuples of steps named from the one stage vocabulary, climbed in order until one stops."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trtmc_videoqa.ladders.endpoint import ENDPOINT_LADDER
from trtmc_videoqa.ladders.trtmc import TRTMC_LADDER
from trtmc_videoqa.results import STAGE_ORDER, ResultRow, StageResult
from trtmc_videoqa.stages.protocol import Climb, RowJob, Step, Stop, climb_ladder


def test_the_trtmc_ladder_is_every_stage_in_order() -> None:
    assert [step.name for step in TRTMC_LADDER] == list(STAGE_ORDER)


def test_the_endpoint_ladder_is_the_trtmc_one_without_what_only_a_server_we_build_needs() -> None:
    names = [step.name for step in ENDPOINT_LADDER]
    assert names == [name for name in STAGE_ORDER if name not in ("build", "correctness", "serve")]


@dataclass
class _JobDouble:
    """A test double of the run's job: only what the ladder itself touches."""

    stage: str = "plan"
    seen: list[str] = field(default_factory=list)


def _passes(row: RowJob, climb: Climb) -> Climb | Stop:
    row.job.seen.append(row.job.stage)
    return climb.with_stage(StageResult(name=row.job.stage, status="passed"))


def _stops(row: RowJob, climb: Climb) -> Climb | Stop:
    row.job.seen.append(row.job.stage)
    failed = StageResult(name="build", status="failed", detail="exit 2")
    return Stop(climb, failed, "failed", "build exit 2", failed="build")


def test_a_ladder_climbs_in_order_and_ends_at_the_first_stop() -> None:
    job = _JobDouble()
    row = RowJob(job=job, profile="p", tokenizer=Path("t"))
    start = Climb(row=ResultRow(profile="p", status="planned", status_reason="planned"), commands={})
    steps: tuple[Step[RowJob], ...] = (Step("plan", _passes), Step("build", _stops), Step("serve", _passes))
    end = climb_ladder(steps, row, start)
    assert job.seen == ["plan", "build"]  # serve never ran; the job knew each stage as it ran (crashes are named)
    assert isinstance(end, Stop) and end.failed == "build" and end.status == "failed"
    assert [s.name for s in end.at.row.stages] == ["plan"]  # the stop's own stage is the ladder's to record
    done = climb_ladder(steps[:1], row, start)
    assert isinstance(done, Climb) and [s.status for s in done.row.stages] == ["passed"]
