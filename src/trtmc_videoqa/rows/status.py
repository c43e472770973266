"""The status a row's stages earn (the first stage that did not pass decides), and the row it makes: from a
measurement, from a stop before any, or cut short by a stop signal.

A row never claims more than its evidence: a qualified row's reason names each gate it earned; an interrupted row
keeps and counts what it measured, and says where the signal came.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from ..climb.sweep import sweep_of
from ..results import (
    STAGE_ORDER,
    Interruption,
    OutputCheck,
    Provenance,
    QualificationStatus,
    ResultRow,
    StageName,
    StageResult,
    Sweep,
)
from ..results.layout import (
    AIPERF_OUTCOME,
    CAPABILITY_FILE,
    GRADING_FILE,
    IDENTITY_FILE,
    OUTPUT_CHECK_FILE,
    RESULT_FILE,
)
from ..results.rows import TASK_TIME_NOT_REPORTED as NOT_REPORTED

if TYPE_CHECKING:
    from ..climb.protocol import Measurement, Stop
    from ..plan.self_test import DeclaredNoAnswer

Qualified = Literal["aiperf-qualified", "endpoint-qualified"]


def measured_fields(row: ResultRow, measurement: Measurement) -> dict[str, Any]:
    """The fields a measurement fills in, whatever the ladder."""
    figures = measurement.figures
    plan = measurement.plan
    # Only a server that may omit it (an endpoint: the stage is skipped) "does not report" its task time.
    unreported = any(s.name == "timing" and s.status == "skipped" for s in measurement.stages)
    return dict(
        stages=row.stages + measurement.stages,
        warmup_requests=len(plan.warmup) if plan else 0,
        profiling_requests_planned=len(plan.profiling) if plan else 0,
        profiling_requests_completed=figures.get("completed", 0),
        failed_requests=figures.get("failed", 0),
        requests=measurement.records,
        client_latency=figures.get("client_latency"),
        server_task_time=figures.get("server_task_time"),
        task_time_field=measurement.task_time_field,
        timing_scope=measurement.timing_scope or (NOT_REPORTED if unreported else None),
        requests_per_s=figures.get("requests_per_s"),
        sweep=sweep_of(measurement.levels, measurement.settings) if measurement.settings else None,
        streamed=figures.get("streamed", False),
        streaming_note=figures.get("streaming_note"),
        ttft=figures.get("ttft"),
        itl=figures.get("itl"),
        output_tokens_per_s=figures.get("output_tokens_per_s"),
        accuracy=measurement.accuracy,
        output_check=measurement.output_check,
        video_transport=measurement.video_transport,
        transport_attempts=measurement.transport_attempts,
    )


QUALIFIED_EVIDENCE = [
    f"{RESULT_FILE}#requests",
    AIPERF_OUTCOME,
    GRADING_FILE,
    OUTPUT_CHECK_FILE,
    IDENTITY_FILE,
]


def status_from_stages(
    stages: list[StageResult], qualified: Qualified
) -> tuple[QualificationStatus, str, StageName | None, list[str]]:
    """(status, reason, failed stage, evidence): the first stage that did not pass decides; a row whose every
    stage passed (or, for identity without a native route, was not applicable) earns `qualified`."""
    for stage in stages:
        if stage.status == "rejected":
            return "unsupported", f"the server rejected a video request: {stage.detail}", None, [CAPABILITY_FILE]
        if stage.status == "failed":
            return "failed", f"{stage.name}: {stage.detail}", stage.name, stage.evidence
        if stage.status == "blocked":
            return "blocked", f"{stage.name}: {stage.detail}", None, stage.evidence
        if stage.status == "interrupted":
            return "interrupted", f"{stage.name}: {stage.detail}", None, stage.evidence
    return qualified, earned_reason(stages), None, QUALIFIED_EVIDENCE


# The gates a qualified row must show an outcome for: a ladder that ended without one of them earns nothing.
GATES_OF_A_QUALIFIED_ROW: tuple[StageName, ...] = ("capability", "aiperf", "output-check", "identity")


def measured_row(
    row: ResultRow,
    measurement: Measurement,
    qualified: Qualified,
    provenance: Provenance,
    declared_no_answer: DeclaredNoAnswer | None = None,
) -> ResultRow:
    """The row with the measurement's figures and the status its stages earn; a declared no-answer (the
    self-test's test double on a real clip) is said before a qualified row's reason. A row missing a gate's outcome
    is never qualified, whatever the stages it has say: it fails at the first gate it lacks."""
    fields = measured_fields(row, measurement)
    status, reason, failed, evidence = status_from_stages(fields["stages"], qualified)
    shown = {stage.name for stage in fields["stages"]}
    missing = [gate for gate in GATES_OF_A_QUALIFIED_ROW if gate not in shown]
    if status == qualified and missing:
        status, failed, evidence = "failed", missing[0], []
        reason = f"{missing[0]}: the row ended with no outcome for this gate, so nothing shows it passed"
    failing = failing_level(fields["sweep"])
    if status == qualified and failing is not None:
        status, failed, evidence, reason = "failed", failing[0], [], failing[1]
    if declared_no_answer and measurement.output_check is not None and status == qualified:
        reason = f"{_transport_only(declared_no_answer, measurement.output_check)}; {reason}"
    if status == "interrupted":
        reason += measured_words(fields["profiling_requests_completed"], fields["profiling_requests_planned"])
        evidence = evidence or next((s.evidence for s in fields["stages"] if s.name == "aiperf"), [])
    updated = row.model_copy(
        update=fields
        | dict(
            status=status,
            status_reason=reason,
            failed_stage=failed,
            status_evidence=evidence,
            provenance=provenance,
        )
    )
    return with_interruption(updated)


def failing_level(sweep: Sweep | None) -> tuple[StageName, str] | None:
    """The first level of a sweep that did not pass, as (stage, reason naming the level); None when every level
    passed. A row is qualified only when every level of its sweep passes."""
    bad = next((level for level in sweep.levels if not level.passed), None) if sweep else None
    if bad is None:
        return None
    stage: StageName = bad.failed_at if bad.failed_at in STAGE_ORDER else "aiperf"  # type: ignore[assignment]
    at = f"concurrency {bad.concurrency}" if bad.request_rate is None else f"request rate {bad.request_rate:g}/s"
    return stage, f"{stage}: {at} did not pass: {bad.detail or 'no detail recorded'}"


def _transport_only(declared: DeclaredNoAnswer, check: OutputCheck) -> str:
    no_answer = check.by_outcome.get("declared-no-answer", 0)
    return (
        f"transport and timing only: {declared.why} ({no_answer} of {check.checked} answers were the declared "
        f"no-answer {declared.phrase!r})"
    )


def stopped_row(stop: Stop, provenance: Provenance) -> ResultRow:
    """The row a ladder's `Stop` with a status of its own ends with (before any measurement): its status, reason,
    the stage that ended it and that stage's evidence."""
    kept = [stage for stage in stop.at.row.stages if stage.name != stop.stage.name]  # a crash in plan replaces it
    row = stop.at.row.model_copy(
        update=dict(
            status=stop.status,
            status_reason=stop.reason,
            failed_stage=stop.failed,
            stages=kept + [stop.stage],
            status_evidence=stop.stage.evidence,
            provenance=provenance,
        )
    )
    return with_interruption(row)


def measured_words(completed: int, planned: int) -> str:
    """What an interrupted row kept, counted: never "nothing" where something was measured."""
    if planned == 0:
        return "; nothing was measured before it"
    return f"; kept what was measured: {completed} of {planned} profiling request(s) answered"


def with_interruption(row: ResultRow) -> ResultRow:
    """An `interrupted` row names the signal and the stage it stopped (the interrupted stage's detail names the
    signal: `interrupted (SIGTERM) while ...`)."""
    if row.status != "interrupted" or row.interruption is not None:
        return row
    stage = next((s for s in row.stages if s.status == "interrupted"), row.stages[-1] if row.stages else None)
    name: StageName = stage.name if stage is not None else "plan"
    signal = signal_of(stage.detail if stage is not None else "")
    return row.model_copy(update={"interruption": Interruption(signal=signal, stage=name)})


def signal_of(detail: str) -> str:
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        if name in detail:
            return name
    return "SIGINT"


def interrupted_while_finishing(row: ResultRow, signal: str) -> ResultRow:
    """`row`, which a stop signal cut off while it was finished: `interrupted` at the last stage it reached, what it
    measured kept and counted."""
    stage: StageName = row.stages[-1].name if row.stages else "plan"
    reason = f"{stage}: interrupted ({signal}) while the row was finished"
    reason += measured_words(row.profiling_requests_completed, row.profiling_requests_planned)
    return row.model_copy(
        update=dict(
            status="interrupted",
            status_reason=reason,
            failed_stage=None,
            interruption=Interruption(signal=signal, stage=stage),
        )
    )


def earned_reason(stages: list[StageResult]) -> str:
    """What a qualified row showed, gate by gate, in words (a gate that was not applicable is named as such; grading
    only where the run made it a gate, `--min-both-right`)."""
    by_name = {stage.name: stage for stage in stages}
    parts = ["complete AIPerf run, every request accounted for"]
    for name in ("timing", "grading", "output-check", "identity"):
        stage = by_name.get(name)
        if stage is not None and (name != "grading" or "--min-both-right" in stage.detail):
            parts.append(f"{name}: {stage.detail}")
    return "; ".join(parts)
