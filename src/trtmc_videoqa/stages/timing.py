"""The `timing` stage: is the server's own task time there for every profiling request, joined by X-Request-ID?

On trtmc-server (TRTMC mode) it is a gate: a row whose task times are missing for some requests is not qualified,
because its figures would mix the server's boundary with nothing. A server we did not build (`--endpoint`) may not
report one at all: that is stated, never failed, and client latency stands alone.
"""

from __future__ import annotations

from ..results import RequestRow, StageResult
from .protocol import Climb, RowJob, Stop, measuring, recorded

NOT_REPORTED = "not reported by this server"


def timing(row: RowJob, climb: Climb) -> Climb | Stop:
    """The `timing` stage: a gate where the row's gates require every task time (trtmc-server), else a statement."""
    climb, result = measuring(climb)
    stage = timing_stage(
        result.records,
        required=row.gates.require_task_time,
        task_time_field=result.task_time_field,
        timing_scope=result.timing_scope,
    )
    return recorded(climb, result, stage, stops=stage.status == "failed")


def timing_stage(
    records: list[RequestRow], *, required: bool, task_time_field: str | None, timing_scope: str | None
) -> StageResult:
    """The stage for the profiling requests that came back whole (AIPerf's stage has accounted for the rest)."""
    completed = [r for r in records if r.phase == "profiling" and r.error is None]
    missing = [r for r in completed if r.server_task_ms is None]
    joined = len(completed) - len(missing)
    where = f" from `{task_time_field}` ({timing_scope})" if task_time_field else ""
    evidence = ["requests.jsonl"]
    if not missing:
        detail = f"server task time joined by X-Request-ID for all {len(completed)} profiling requests{where}"
        return StageResult(name="timing", status="passed", detail=detail, evidence=evidence)
    if required:
        first = missing[0]
        detail = (
            f"{len(missing)} of {len(completed)} profiling requests have no server task time joined by "
            f"X-Request-ID (first: {first.session_id}, X-Request-ID {first.x_request_id or 'none'}); "
            f"{joined} joined{where}"
        )
        return StageResult(name="timing", status="failed", detail=detail, evidence=evidence)
    if not joined:
        detail = f"server task time: {NOT_REPORTED}; client latency stands alone"
        return StageResult(name="timing", status="skipped", detail=detail, evidence=evidence)
    detail = f"server task time for {joined} of {len(completed)} profiling requests{where}; the rest: {NOT_REPORTED}"
    return StageResult(name="timing", status="passed", detail=detail, evidence=evidence)
