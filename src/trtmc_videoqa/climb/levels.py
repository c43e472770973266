"""A row's load levels and repeated runs, as the measuring stages share them (docs/throughput.md).

Each level (`--concurrency 1,2,4` or `--request-rate 2,4`) and each repeat of it (`--num-profile-runs`) is one AIPerf
run of its own: its own request ids (the first run keeps the plain ones, a further run's carry its label), its own
records, task-time join and graded answers, warmup kept out. AIPerf's own list sweep is not used: it replays the
same conversation ids in each level's folder, which the join refuses as requests sent twice.

Each measuring stage judges every run by the same rule it judges a single run by, and the row's stage is the first
run that did not pass, named by its level (`combined`): a row is qualified only when every level passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..results import RecordedCommand, RequestRow, StageName, StageResult
from ..results.layout import AIPERF_DIR, REQUESTS_FILE, aiperf_run_dir

if TYPE_CHECKING:
    from ..aiperf.dataset import RequestPlan
    from ..aiperf_qual.execution_file import AiperfEvidence
    from ..plan.settings import RunSettings
    from ..results import Accuracy
    from ..workloads.grading import GradedAnswer, WorkloadGrade

FIRST_COMMAND = "aiperf"  # the first run's command.txt section, as before sweeps; a further run's is aiperf-LABEL
PASSING: frozenset[str] = frozenset({"passed", "skipped"})  # skipped: a task time the server does not report


@dataclass(frozen=True)
class Load:
    """One AIPerf run's load: a concurrency or a request rate, and which repeat of that level it is."""

    concurrency: int | None
    request_rate: float | None
    run: int  # 1-based
    first: bool  # the row's first run: its files keep aiperf/ itself, its ids the plain ones

    @property
    def label(self) -> str:
        rate = f"{self.request_rate or 0:f}".rstrip("0").rstrip(".").replace(".", "p")  # 2.5 -> 2p5, never 1e-05
        level = f"c{self.concurrency}" if self.request_rate is None else f"rate{rate}"
        return level if self.run == 1 else f"{level}-run{self.run}"

    @property
    def words(self) -> str:
        rate = f"request rate {self.request_rate or 0:g}/s"
        level = f"concurrency {self.concurrency}" if self.request_rate is None else rate
        return level if self.run == 1 else f"{level}, run {self.run}"

    @property
    def folder(self) -> str:
        """Its AIPerf folder, row-relative."""
        return AIPERF_DIR if self.first else aiperf_run_dir(self.label)

    @property
    def requests_file(self) -> str:
        return REQUESTS_FILE if self.first else f"{self.folder}/{REQUESTS_FILE}"

    @property
    def command_name(self) -> str:
        return FIRST_COMMAND if self.first else f"{FIRST_COMMAND}-{self.label}"

    @property
    def id_prefix(self) -> str:
        """What a further run's request ids start with: unique across the row's runs."""
        return "" if self.first else f"{self.label}."


def loads(settings: RunSettings) -> list[Load]:
    """Every AIPerf run of the row, in order: each repeat goes over every level before the next repeat starts, so a
    drifting server affects every level alike (as repeats interleave over the questions)."""
    rates = settings.request_rate
    levels: list[tuple[int | None, float | None]] = (
        [(None, rate) for rate in rates] if rates else [(level, None) for level in settings.concurrency or (1,)]
    )
    ordered = [(run, level) for run in range(1, settings.num_profile_runs + 1) for level in levels]
    return [
        Load(concurrency=level[0], request_rate=level[1], run=run, first=index == 0)
        for index, (run, level) in enumerate(ordered)
    ]


@dataclass
class LevelRun:
    """What one AIPerf run measured, stage by stage: its own records, join, figures and graded answers, and each
    measuring stage's verdict on this run alone (`stages`)."""

    load: Load
    plan: RequestPlan
    command: RecordedCommand
    evidence: AiperfEvidence
    records: list[RequestRow] = field(default_factory=list)
    graded: list[GradedAnswer] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)  # open to more figures (streaming's TTFT, ITL)
    task_time_field: str | None = None
    timing_scope: str | None = None
    stages: dict[StageName, StageResult] = field(default_factory=dict)
    accuracy: Accuracy | None = None
    grade: WorkloadGrade | None = None
    interrupted: bool = False  # a stop signal while AIPerf ran: no further run starts


def judged(runs: list[LevelRun], name: StageName, judge: Callable[[LevelRun], StageResult]) -> StageResult:
    """Each run judged by the same rule (its verdict kept on the run), and the row's stage from them all."""
    for run in runs:
        run.stages[name] = judge(run)
    return combined(runs, name)


def combined(runs: list[LevelRun], name: StageName) -> StageResult:
    """The row's stage over its runs: the first run's where there is one run; else the first run that did not pass,
    its detail led by its level, or the first run's detail with the count of runs that passed with it."""
    first = runs[0].stages[name]
    if len(runs) == 1:
        return first
    bad = next((run for run in runs if run.stages[name].status not in PASSING), None)
    if bad is None:
        return first.model_copy(update={"detail": f"{first.detail}; every level and run alike ({_counted(runs)})"})
    stage = bad.stages[name]
    evidence = stage.evidence if bad.load.first else [*stage.evidence, bad.load.folder, bad.load.requests_file]
    return stage.model_copy(update={"detail": f"{bad.load.words}: {stage.detail}", "evidence": evidence})


def _counted(runs: list[LevelRun]) -> str:
    levels = {(run.load.concurrency, run.load.request_rate) for run in runs}
    per_level = len(runs) // max(len(levels), 1)
    return f"{len(levels)} level(s) x {per_level} run(s)"
