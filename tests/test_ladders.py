"""The two ladders are data: tuples of steps named from the one stage vocabulary, climbed in order until one stops."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trtmc_videoqa.climb.protocol import Climb, RowJob, Step, Stop, climb_ladder
from trtmc_videoqa.ladders.endpoint import ENDPOINT_LADDER
from trtmc_videoqa.ladders.trtmc import TRTMC_LADDER
from trtmc_videoqa.results import STAGE_ORDER, ResultRow, StageResult


def test_the_trtmc_ladder_is_every_stage_in_order() -> None:
    assert [step.name for step in TRTMC_LADDER] == list(STAGE_ORDER)


def test_the_endpoint_ladder_is_the_trtmc_one_without_what_only_a_server_we_build_needs() -> None:
    names = [step.name for step in ENDPOINT_LADDER]
    assert names == [name for name in STAGE_ORDER if name not in ("build", "correctness", "serve")]


@dataclass
class _JobDouble:
    """A test double of the run's job: only what the ladder itself touches (where a row's files go)."""

    out: Path
    seen: list[str] = field(default_factory=list)

    def row_dir(self, profile: str) -> Path:
        return self.out / profile


def _passes(name: str):  # type: ignore[no-untyped-def]
    def step(row: RowJob, climb: Climb) -> Climb | Stop:
        row.job.seen.append(name)
        return climb.with_stage(StageResult(name=name, status="passed"))

    return step


def _stops(row: RowJob, climb: Climb) -> Climb | Stop:
    row.job.seen.append("build")
    failed = StageResult(name="build", status="failed", detail="exit 2")
    return Stop(climb, failed, "failed", "build exit 2", failed="build")


def _raises(row: RowJob, climb: Climb) -> Climb | Stop:
    row.job.seen.append("serve")
    raise ValueError("a lone surrogate \ud800 and a\nline break")


def _start() -> Climb:
    return Climb(row=ResultRow(profile="p", status="planned", status_reason="planned"), commands={})


def test_a_ladder_climbs_in_order_and_ends_at_the_first_stop(tmp_path: Path) -> None:
    job = _JobDouble(tmp_path)
    row = RowJob(job=job, profile="p", tokenizer=Path("t"))  # type: ignore[arg-type]
    steps: tuple[Step[RowJob], ...] = (
        Step("plan", _passes("plan")),
        Step("build", _stops),
        Step("serve", _passes("serve")),
    )
    end = climb_ladder(steps, row, _start())
    assert job.seen == ["plan", "build"]  # serve never ran
    assert isinstance(end, Stop) and end.failed == "build" and end.status == "failed"
    assert [s.name for s in end.at.row.stages] == ["plan"]  # the stop's own stage is the ladder's to record
    done = climb_ladder(steps[:1], row, _start())
    assert isinstance(done, Climb) and [s.status for s in done.row.stages] == ["passed"]


def test_a_step_that_raises_ends_its_row_failed_at_that_step(tmp_path: Path) -> None:
    """Whatever a step raises is the row's `failed` at that step, never the run's end: the type and one escaped line
    on the row, the traceback in its private folder; the steps after it never run."""
    job = _JobDouble(tmp_path)
    row = RowJob(job=job, profile="p", tokenizer=Path("t"))  # type: ignore[arg-type]
    steps: tuple[Step[RowJob], ...] = (
        Step("plan", _passes("plan")),
        Step("serve", _raises),
        Step("aiperf", _passes("aiperf")),
    )
    end = climb_ladder(steps, row, _start())
    assert job.seen == ["plan", "serve"]
    assert isinstance(end, Stop) and end.status == "failed" and end.failed == "serve"
    assert end.stage.name == "serve" and end.stage.status == "failed"
    error = end.at.row.tool_error
    assert error is not None and error.stage == "serve" and error.type == "ValueError"
    assert "\n" not in error.message and "\\ud800" in error.message  # one line, the surrogate escaped
    traceback = (row.row_dir / "private" / "traceback.txt").read_text()  # in the row's staging folder
    assert "ValueError" in traceback and "_raises" in traceback
    assert error.traceback == "private/traceback.txt"
