"""The `timing` stage: is the server's own task time there for every profiling request, joined by X-Request-ID,
and believable?

On trtmc-server (TRTMC mode) it is a gate: a row whose task times are missing or invalid for some requests is not
qualified, because its figures would mix the server's boundary with nothing (or with nonsense). A server we did not
build (`--endpoint`) may not report one at all: that is stated, never failed, and client latency stands alone.

A task time is invalid when it is no finite number from zero up to the request's own client latency (climb/join.py
checks it, issue 26): it never enters a figure, each request carries why (`server_task_invalid`), and this stage
counts the invalid ones and names the first, in either mode; in TRTMC mode they fail the row here.
"""

from __future__ import annotations

from ..climb.levels import judged
from ..climb.protocol import Climb, RowJob, Stop, measuring, recorded
from ..results import RequestRow, StageResult
from ..results.layout import REQUESTS_FILE
from ..results.rows import TASK_TIME_NOT_REPORTED as NOT_REPORTED
from ..results.rows import TASK_TIME_NOT_REPORTED_LINE


def timing(row: RowJob, climb: Climb) -> Climb | Stop:
    """The `timing` stage: a gate where the row's gates require every task time (trtmc-server), else a statement."""
    climb, result = measuring(climb)

    def judge(records: list[RequestRow], task_time_field: str | None, timing_scope: str | None) -> StageResult:
        return timing_stage(
            records, required=row.gates.require_task_time, task_time_field=task_time_field, timing_scope=timing_scope
        )

    if result.levels:  # every AIPerf run of a sweep or repeat judged alike; the first that fails names its level
        stage = judged(result.levels, "timing", lambda run: judge(run.records, run.task_time_field, run.timing_scope))
    else:
        stage = judge(result.records, result.task_time_field, result.timing_scope)
    return recorded(climb, result, stage, stops=stage.status == "failed")


def _named(record: RequestRow) -> str:
    return f"{record.session_id}, X-Request-ID {record.x_request_id or 'none'}"


def invalid_summary(invalid: list[RequestRow], completed: int) -> str:
    """How many invalid task times, of how many, and the first by both identities with why."""
    first = invalid[0]
    return (
        f"{len(invalid)} of {completed} profiling requests have an invalid server task time, left out of the "
        f"figures (first: {_named(first)}: {first.server_task_invalid})"
    )


def timing_stage(
    records: list[RequestRow], *, required: bool, task_time_field: str | None, timing_scope: str | None
) -> StageResult:
    """The stage for the profiling requests that came back whole (AIPerf's stage has accounted for the rest)."""
    completed = [r for r in records if r.phase == "profiling" and r.error is None]
    invalid = [r for r in completed if r.server_task_ms is None and r.server_task_invalid]
    missing = [r for r in completed if r.server_task_ms is None and not r.server_task_invalid]
    joined = len(completed) - len(missing) - len(invalid)
    where = f" from `{task_time_field}` ({timing_scope})" if task_time_field else ""
    evidence = [REQUESTS_FILE]
    bad = invalid_summary(invalid, len(completed)) if invalid else None
    if not missing and not invalid:
        detail = f"server task time joined by X-Request-ID for all {len(completed)} profiling requests{where}"
        return StageResult(name="timing", status="passed", detail=detail, evidence=evidence)
    if required:
        parts = [bad] if bad else []
        if missing:
            parts.append(
                f"{len(missing)} of {len(completed)} profiling requests have no server task time joined by "
                f"X-Request-ID (first: {_named(missing[0])})"
            )
        detail = "; ".join([*parts, f"{joined} joined{where}"])
        return StageResult(name="timing", status="failed", detail=detail, evidence=evidence)
    if not joined and not invalid:
        detail = TASK_TIME_NOT_REPORTED_LINE
        return StageResult(name="timing", status="skipped", detail=detail, evidence=evidence)
    detail = f"server task time for {joined} of {len(completed)} profiling requests{where}"
    if missing:
        detail += f"; {len(missing)}: {NOT_REPORTED}"
    if bad:
        detail += f"; {bad}"
    return StageResult(name="timing", status="passed", detail=detail, evidence=evidence)
