"""A row's load levels: one entry per concurrency (or request rate) it was measured at, each with its AIPerf runs'
own figures and, over two runs or more, confidence intervals (docs/throughput.md).

Each run is one AIPerf run with its own records, task-time join and graded answers; the row's top-level figures
(client_latency, requests_per_s, ...) stay the first level's first run, so readers of rows before sweeps keep
working. The report draws the levels as a throughput-latency curve (report/curve.py); nothing here is a drawing.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from .base import _Model

# Said beside every interval: they are honest arithmetic over very few samples.
TINY_WORKLOAD_NOTE: Final = (
    "tiny workloads (3 questions on synthetic, 4 on bigbuckbunny): intervals over so few runs and questions are wide, "
    "and a difference inside them is noise"
)
LoadAxis = Literal["concurrency", "request_rate"]


class LatencyStats(_Model):
    """Steady-state figures over successful profiling requests; a percentile only with enough samples for it."""

    count: int
    mean_ms: float | None = None
    p50_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None


class FigureInterval(_Model):
    """A confidence interval for one figure: over the level's runs (Student t), or over its questions
    (Clopper-Pearson, for both-right)."""

    mean: float = Field(description="the runs' mean (or the share of questions)")
    low: float
    high: float
    n: int = Field(description="runs (or questions) it is over")
    confidence: float
    method: str = Field(description="'Student t over run values' or 'Clopper-Pearson exact'")
    note: str = TINY_WORKLOAD_NOTE


class RunFigures(_Model):
    """One AIPerf run at one level: its own figures over its profiling requests (warmup kept out)."""

    run: int = Field(ge=1, description="1 for the first run of the level, 2.. for --num-profile-runs")
    label: str = Field(description="its name: `c4`, `c4-run2`, `rate2p5`; its command.txt section is aiperf-LABEL")
    folder: str = Field(description="its AIPerf folder (row-relative): plan, inputs, outcome, export")
    requests: str = Field(description="its requests joined to their records, task times and grades (row-relative)")
    requests_per_s: float | None = Field(default=None, description="completed requests over the profiling window")
    clips_per_s: float | None = Field(
        default=None, description="clips carried by completed requests over the window (one clip a request)"
    )
    output_tokens_per_s: float | None = Field(
        default=None, description="output tokens AIPerf counted on completed requests over the window"
    )
    client_latency: LatencyStats | None = None
    server_task_time: LatencyStats | None = None
    completed: int = 0
    errors: int = Field(default=0, description="planned profiling requests that failed or have no record")
    questions: int | None = Field(default=None, description="questions graded")
    questions_both_right: int | None = Field(
        default=None, description="questions right both forward and reversed in every repeat of this run"
    )
    pairs: int | None = Field(default=None, description="(question, repeat) pairs graded both ways")
    pairs_both_right: int | None = None
    within_objective: int | None = Field(
        default=None, description="with --goodput: completed requests whose client latency met the objective"
    )
    passed: bool = Field(description="every stage this run went through passed (or was not applicable)")
    failed_at: str | None = Field(default=None, description="the first stage (its name) this run did not pass")
    detail: str = Field(default="", description="that stage's words, where it did not pass")


class LoadLevel(_Model):
    """One level of the row's sweep, over its runs."""

    concurrency: int | None = Field(default=None, description="requests kept in flight (concurrency mode)")
    request_rate: float | None = Field(default=None, description="requests per second sent (request-rate mode)")
    runs: list[RunFigures] = Field(default_factory=list)
    requests_per_s: float | None = Field(default=None, description="the runs' mean")
    clips_per_s: float | None = Field(default=None, description="the runs' mean")
    output_tokens_per_s: float | None = Field(default=None, description="the runs' mean")
    client_latency: LatencyStats | None = Field(default=None, description="over every run's completed requests")
    server_task_time: LatencyStats | None = Field(default=None, description="over every run's completed requests")
    ttft: LatencyStats | None = Field(
        default=None, description="time to first token over every run's streamed completed requests; None unstreamed"
    )
    itl: LatencyStats | None = Field(
        default=None, description="inter-token latency over every run's streamed completed requests; None unstreamed"
    )
    completed: int = 0
    errors: int = 0
    intervals: dict[str, FigureInterval] = Field(
        default_factory=dict,
        description="with 2 runs or more: client_p50_ms, task_p50_ms and requests_per_s over the runs' values",
    )
    questions: int | None = None
    questions_both_right: int | None = Field(
        default=None, description="questions right both ways in every repeat of every run"
    )
    both_right_interval: FigureInterval | None = Field(
        default=None, description="Clopper-Pearson over the questions (questions_both_right of questions)"
    )
    repeat_pairs: str | None = Field(
        default=None,
        description="repeat pairs right both ways over every run, as a count (k/n): repeats of one question are not "
        "independent, so no interval",
    )
    goodput_met: bool | None = Field(
        default=None, description="with --goodput: every planned request of every run completed within the objective"
    )
    passed: bool = Field(description="every run of the level passed")
    failed_at: str | None = Field(default=None, description="the stage its first failing run did not pass")
    detail: str = ""


class Sweep(_Model):
    """The levels a row was measured at, in the order given, and what a sweep says over them."""

    axis: LoadAxis
    runs_per_level: int = Field(ge=1, description="--num-profile-runs")
    confidence: float = Field(description="--confidence-level, for every interval")
    levels: list[LoadLevel]
    best_level: float | None = Field(
        default=None, description="the passing level with the highest requests per second (its axis value)"
    )
    goodput_objective: str | None = Field(default=None, description="--goodput as given: request_latency:MS")
    goodput_best_level: float | None = Field(
        default=None, description="the highest level at which every request met the objective; None: none did"
    )
    note: str = TINY_WORKLOAD_NOTE
