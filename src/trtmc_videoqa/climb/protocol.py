"""The one stage protocol: every stage is `(row, climb) -> Climb | Stop`, named by a `Step`; a ladder is a tuple of
steps, climbed in order until one stops.

A `Climb` is the row as far as it has climbed (its stages so far, the commands that ran, and once a server answers,
the measurement); a `Stop` says where the row ends short of the next stage and why. Stages never write the row:
the ladder does, once, whatever the outcome (rows/end.py). What a stage starts and must outlive it (a server) is
entered into `RowJob.resources`, which the ladder closes when the row ends. Stages write their evidence into the
row's staging folder (`RowJob.row_dir`), which is put in place whole once the row is finished (rows/staging.py).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..common.atomic_write import write_text_atomic
from ..common.safe_names import row_dir_name
from ..common.stop_signals import interrupted_by
from ..common.text_escape import one_line
from ..results import (
    Accuracy,
    OutputCheck,
    QualificationStatus,
    RecordedCommand,
    RequestRow,
    ResultRow,
    StageName,
    StageResult,
    ToolError,
    TransportAttempt,
    VideoTransport,
)
from ..results.layout import ROWS_STAGING, TRACEBACK_FILE

if TYPE_CHECKING:
    from ..aiperf.dataset import RequestPlan
    from ..aiperf_qual.execution_file import AiperfEvidence
    from ..plan.job import QualifyJob
    from ..plan.self_test import DeclaredNoAnswer
    from ..plan.settings import RunSettings
    from ..serving.capability import CapabilityResult
    from ..workloads.grading import GradedAnswer
    from .levels import LevelRun


@dataclass(frozen=True)
class Gates:
    """What a row must show beyond a complete AIPerf run: every task time (on trtmc-server), and the one no-answer
    its run's own plan declares (the self-test's test double on a real clip), if any."""

    require_task_time: bool = False
    declared_no_answer: DeclaredNoAnswer | None = None
    min_both_right: float | None = None  # an endpoint row's opt-in accuracy gate (--min-both-right); None: off


@dataclass(frozen=True)
class Served:
    """The server being measured: where it is, the model name sent, its per-request records, whether it still runs."""

    url: str
    model: str
    records: Path | None = None
    alive: Callable[[], bool] = lambda: True


@dataclass
class Measurement:
    """What the measuring stages (capability -> identity) found, in the order they ran."""

    stages: list[StageResult] = field(default_factory=list)
    capability: CapabilityResult | None = None
    plan: RequestPlan | None = None
    records: list[RequestRow] = field(default_factory=list)
    graded: list[GradedAnswer] = field(default_factory=list)
    accuracy: Accuracy | None = None
    output_check: OutputCheck | None = None
    task_time_field: str | None = None
    timing_scope: str | None = None
    commands: dict[str, RecordedCommand] = field(default_factory=dict)
    aiperf_exit: int | None = None
    aiperf: AiperfEvidence | None = None  # what execution.jsonl needs of the AIPerf run, taken by the stage
    figures: dict[str, Any] = field(default_factory=dict)
    levels: list[LevelRun] = field(default_factory=list)  # every AIPerf run (climb/levels.py); the first is above
    settings: RunSettings | None = None  # what the runs were made with: the sweep's confidence and objective
    video_transport: VideoTransport | None = None  # the one the capability check accepted, used from then on
    transport_attempts: list[TransportAttempt] = field(default_factory=list)

    @property
    def failed_stage(self) -> StageResult | None:
        return next((s for s in self.stages if s.status in ("failed", "rejected")), None)


@dataclass(frozen=True)
class Bundle:
    """The bundle a TRTMC row built (or found in the cache) and its identity."""

    path: Path
    digest: str  # sha256:<hex>


@dataclass(frozen=True)
class Climb:
    """The row as far as it has climbed, with what its provenance needs so far."""

    row: ResultRow
    commands: dict[str, RecordedCommand]
    precision: tuple[str | None, str] = (None, "")  # (effective precision, where it was read): TRTMC rows
    bundle: Bundle | None = None  # once built
    served: Served | None = None  # once a server answers on its URL
    measurement: Measurement | None = None  # once the capability check ran

    def with_stage(self, stage: StageResult) -> Climb:
        return replace(self, row=self.row.model_copy(update={"stages": self.row.stages + [stage]}))


@dataclass(frozen=True)
class Stop:
    """Where the ladder ends short of its top. Before any measurement, the status, reason and stage that ended it;
    once measuring, the stages already hold the outcome and the status is read off them (`status` is None)."""

    at: Climb
    stage: StageResult
    status: QualificationStatus | None = None
    reason: str = ""
    failed: StageName | None = None


@dataclass(kw_only=True)
class RowJob:
    """What stays the same along one row's ladder: the run's job, the row's name, its tokenizer and gates."""

    job: QualifyJob
    profile: str
    tokenizer: Path
    gates: Gates = Gates()
    resources: ExitStack = field(default_factory=ExitStack)  # what a stage started for the rest of the row

    @property
    def row_dir(self) -> Path:
        """Where the row is built: its staging folder, put in place as checkpoints/<row>/ once it is finished."""
        return self.job.out / ROWS_STAGING / row_dir_name(self.profile)

    def progress(self, message: str) -> None:
        self.job.progress(f"{self.profile}: {message}")


@dataclass(kw_only=True)
class EndpointRow(RowJob):
    """A server we did not build, along the endpoint ladder: the native Task route the user named, if any, and what
    the run states of the server (where it samples, by which policy)."""

    native_url: str | None = None
    stated: dict[str, str] = field(default_factory=dict)


R = TypeVar("R", bound=RowJob, contravariant=True)


@dataclass(frozen=True)
class Step(Generic[R]):
    """One rung of a ladder: the stage's name (the one vocabulary of results.STAGE_ORDER) and what it does."""

    name: StageName
    run: Callable[[R, Climb], Climb | Stop]


def climb_ladder(steps: tuple[Step[R], ...], row: R, start: Climb) -> Climb | Stop:
    """Each step in order, from `start`, until one stops the row. Whatever a step raises is that row's `failed` at
    that step: the rows before and after it are measured and kept. A stop signal (Ctrl-C, SIGTERM, SIGHUP) ends
    the row `interrupted` at that step, what it measured kept; the run stops once the row is written."""
    climb = start
    for step in steps:
        try:
            outcome = step.run(row, climb)
        except Exception as error:  # a bug of ours, or an input we did not foresee: this row's outcome, not the run's
            return crashed(row, climb, step.name, error)
        except KeyboardInterrupt:  # every child the step started is already ended (its own cleanup ran)
            return interrupted(climb, step.name)
        if isinstance(outcome, Stop):
            return outcome
        climb = outcome
    return climb


def reached(end: Climb | Stop) -> tuple[ResultRow, StageName]:
    """Where a ladder ended: the row with every stage it recorded (measured ones included), and the last of them
    (`plan` where there is none): the stage an exception while the row is finished is recorded at."""
    climb = end.at if isinstance(end, Stop) else end
    stages = climb.row.stages + (climb.measurement.stages if climb.measurement else [])
    if isinstance(end, Stop) and end.stage not in stages:
        stages = [*stages, end.stage]
    row = climb.row.model_copy(update={"stages": stages})
    return row, stages[-1].name if stages else "plan"


def crashed(row: RowJob, climb: Climb, stage: StageName, error: Exception) -> Stop:
    """The row ended `failed` at `stage` by `error`: its type and one escaped line on the row (`tool_error`), the
    traceback in the row's private folder. Once measuring, the failed stage joins the measurement's stages."""
    facts = tool_error(row.row_dir, stage, error)
    failed = StageResult(
        name=stage, status="failed", detail=f"internal error: {facts.type}: {facts.message}", evidence=[]
    )
    at = replace(climb, row=climb.row.model_copy(update={"tool_error": facts}))
    if at.measurement is not None:
        at.measurement.stages.append(failed)
        return Stop(at, failed)
    return Stop(at, failed, status="failed", reason=f"{stage}: {failed.detail}", failed=stage)


def signal_name() -> str:
    """The stop signal this process got first (Ctrl-C's is SIGINT)."""
    by = interrupted_by()
    return "SIGINT" if by == "interrupted" else by


def interrupted(climb: Climb, stage: StageName) -> Stop:
    """The row ended `interrupted` at `stage` by a stop signal. Once measuring, the stage joins the measurement's
    stages and the status is read off them, with what was measured."""
    detail = f"interrupted ({signal_name()}) while {stage} ran"
    stopped = StageResult(name=stage, status="interrupted", detail=detail, evidence=[])
    if climb.measurement is not None:
        climb.measurement.stages.append(stopped)
        return Stop(climb, stopped)
    return Stop(climb, stopped, status="interrupted", reason=f"{stage}: {detail}; nothing was measured before it")


def tool_error(row_dir: Path, stage: StageName, error: BaseException) -> ToolError:
    """What a row says of an exception of ours: type, one escaped line, and where its traceback was kept."""
    kept: str | None = TRACEBACK_FILE
    try:
        text = "".join(traceback.format_exception(error))
        write_text_atomic(row_dir / TRACEBACK_FILE, text.encode("utf-8", "backslashreplace").decode())
    except OSError:  # the row still says what raised, where the traceback could not be kept
        kept = None
    message = one_line(str(error).encode("utf-8", "backslashreplace").decode("utf-8"))[:500]
    return ToolError(stage=stage, type=type(error).__name__, message=message, traceback=kept)


def measured_end(end: Climb | Stop) -> tuple[Climb, Measurement]:
    """The climb a ladder ended with once it measured (a Stop with no status of its own is read off its stages),
    and its measurement."""
    climb = end.at if isinstance(end, Stop) else end
    if climb.measurement is None:  # a ladder reaches its measuring stages before it can end without a status
        raise RuntimeError("the ladder ended without a measurement and without a status")
    return climb, climb.measurement


def measuring(climb: Climb) -> tuple[Climb, Measurement]:
    """The climb with its measurement (started empty by the first measuring stage)."""
    if climb.measurement is not None:
        return climb, climb.measurement
    measurement = Measurement()
    return replace(climb, measurement=measurement), measurement


def served(climb: Climb) -> Served:
    if climb.served is None:  # a ladder that measures before serving is a wiring error, not a row's outcome
        raise RuntimeError("a measuring stage ran before any server was serving")
    return climb.served


def built(climb: Climb) -> Bundle:
    if climb.bundle is None:  # a ladder that uses a bundle before building one is a wiring error, not an outcome
        raise RuntimeError("a stage needed the bundle before any was built")
    return climb.bundle


def recorded(climb: Climb, measurement: Measurement, stage: StageResult, *, stops: bool) -> Climb | Stop:
    """`stage` added to the measurement; the row stops there when `stops` (its status is read off the stages)."""
    measurement.stages.append(stage)
    return Stop(climb, stage) if stops else climb
