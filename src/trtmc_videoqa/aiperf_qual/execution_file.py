"""Write a row's `execution.jsonl`: one batch for the AIPerf run the row made, and a supersede event for the
attempt it replaced.

A row's folder is aiperf_qual's model result directory: paths in the file are relative to it. The batch is made
from the row (our join of every request: identity, server task time) and AIPerf's raw export as the row's public
folder keeps it, so `request_sha` re-computes from the record that `output_ref` names. That export carries each
clip as its sha256 instead of its base64 (every public export of ours does), so the digest still commits to the
clip's bytes.

A re-run of a row sets the earlier AIPerf export aside as `aiperf/export.previous`; its batch follows it there and
is marked superseded. Only that one earlier attempt is kept on disk, so only its batch is kept in the file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..aiperf.exports import client_record, raw_lines
from ..common.atomic_write import write_text_atomic
from ..common.errors import UserError
from ..common.safe_read import MAX_RESULT_BYTES, read_regular_file
from ..results import RequestRow, ResultRow
from ..results.layout import AIPERF_EXPORT, AIPERF_OUTCOME, AIPERF_PREVIOUS_EXPORT, AIPERF_SUMMARY_EXPORT
from .execution import (
    AIPERF_METRICS,
    EXECUTION_FILE,
    SUPERSEDE_EVENT,
    BatchIdentity,
    ExecutionBatch,
    ExecutionRecord,
    MetricsCapture,
    OutputRef,
    Side,
    SupersedeEvent,
    json_line,
    request_sha,
)

CHAT_ROUTE = "POST /v1/chat/completions"
ENDED_BY_US = -1  # aiperf_exit where AIPerf gave none: this tool ended it (wall limit, interrupt)
# Generation controls a request must set itself; left out, the server's own default decides the work.
CONTROLS = (("max_tokens", "max_completion_tokens"), ("temperature",))


def side_of(row: ResultRow) -> Side:
    """The server under test is the candidate; a comparison row's upstream server is the native reference."""
    return "reference" if row.comparison is not None else "candidate"


def request_problems(payload: dict[str, Any]) -> list[str]:
    return [
        f"{names[0]} not set: left to the server's default"
        for names in CONTROLS
        if not any(payload.get(name) is not None for name in names)
    ]


def _task_ms(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) and value > 0 else None


def execution_record(raw: dict[str, Any], index: int, row: RequestRow | None, side: Side) -> ExecutionRecord:
    """One profiling request: AIPerf's raw record (payload, answer, status) with our join of it (unit, task time)."""
    meta = raw.get("metadata") or {}
    payload = raw.get("payload") or {}
    client = client_record(raw, {})
    sample = str(meta.get("conversation_id") or index)
    answered = (
        client is not None
        and client.error is None
        and client.http_status in (None, 200)
        and bool(client.answer)
        and not meta.get("was_cancelled")
    )
    task_ms = _task_ms(row.server_task_ms) if row is not None else None
    tokens = client.completion_tokens if client is not None else None
    return ExecutionRecord(
        sample_id=sample,
        unit_id=f"{row.question_id}/{row.clip_id}" if row is not None else sample,
        request_sha=request_sha(payload),
        model_call_ms=task_ms,
        valid=answered and task_ms is not None,
        output_valid=answered,
        work=[("output_tokens", tokens)] if answered else None,
        capacity_rejection=(client is not None and client.http_status == 429) if side == "candidate" else None,
        request_problems=request_problems(payload),
        output_ref=OutputRef(aiperf_run=AIPERF_EXPORT, record_index=index, request_id=meta.get("x_request_id")),
    )


def metrics_capture(summary: dict[str, Any]) -> MetricsCapture:
    """AIPerf's own per-run statistics, kept as AIPerf gives them (finite numbers and the unit), never recomputed."""
    metrics: dict[str, dict[str, float | str]] = {}
    for name in AIPERF_METRICS:
        source = summary.get(name)
        if not isinstance(source, dict):
            continue
        values: dict[str, float | str] = {
            k: float(v)
            for k, v in source.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        }
        if values and isinstance(source.get("unit"), str):
            values["unit"] = source["unit"]
        if values:
            metrics[name] = values
    return MetricsCapture(source=f"{AIPERF_EXPORT}/{AIPERF_SUMMARY_EXPORT}", metrics=metrics)


def execution_batch(
    row: ResultRow,
    raws: list[dict[str, Any]],
    *,
    batch_id: int,
    aiperf_exit: int | None,
    summary: dict[str, Any],
    gpu_busy_percent: float | None,
) -> ExecutionBatch:
    """The batch of the row's AIPerf run: its profiling-phase raw records, in AIPerf's order, each joined to our row
    of that request by X-Request-ID (else by conversation id)."""
    side = side_of(row)
    by_id = {r.x_request_id: r for r in row.requests if r.x_request_id}
    by_session = {r.session_id: r for r in row.requests if r.phase == "profiling"}
    profiling = [raw for raw in raws if (raw.get("metadata") or {}).get("benchmark_phase") == "profiling"]
    records = []
    for index, raw in enumerate(profiling):
        meta = raw.get("metadata") or {}
        ours = by_id.get(str(meta.get("x_request_id"))) or by_session.get(str(meta.get("conversation_id")))
        records.append(execution_record(raw, index, ours, side))
    settings = row.provenance.settings if row.provenance else {}
    return ExecutionBatch(
        batch_id=batch_id,
        workload=row.provenance.workload if row.provenance else "unknown",
        role="both",  # one workload: its answers are graded (quality) and its requests timed (performance)
        identity=BatchIdentity(
            side=side,
            precision=row.provenance.effective_precision if row.provenance else None,
            timing_scope=row.timing_scope,
            concurrency=int(settings.get("concurrency", 1)),
            operation=CHAT_ROUTE,
        ),
        gpu_busy_percent=gpu_busy_percent,
        warmup=row.warmup_requests,
        expected_requests=row.profiling_requests_planned,
        aiperf_exit=ENDED_BY_US if aiperf_exit is None else aiperf_exit,
        aiperf_metrics=metrics_capture(summary),
        records=records,
    )


def _moved(batch: ExecutionBatch) -> ExecutionBatch:
    """An earlier attempt's batch, pointing where its export was set aside."""

    def aside(path: str) -> str:
        inside = path == AIPERF_EXPORT or path.startswith(AIPERF_EXPORT + "/")
        return AIPERF_PREVIOUS_EXPORT + path[len(AIPERF_EXPORT) :] if inside else path

    def moved(ref: OutputRef) -> OutputRef:
        return ref.model_copy(update={"aiperf_run": aside(ref.aiperf_run)})

    records = [r.model_copy(update={"output_ref": moved(r.output_ref)}) for r in batch.records]
    metrics = batch.aiperf_metrics.model_copy(update={"source": aside(batch.aiperf_metrics.source)})
    return batch.model_copy(update={"records": records, "aiperf_metrics": metrics})


def read_execution(path: Path) -> tuple[list[ExecutionBatch], set[int]]:
    """(batches, superseded batch ids) of an execution.jsonl of ours; ([], set()) when there is none, or it is not
    one of ours (then it is replaced, never trusted)."""
    if not path.is_file():
        return [], set()
    try:
        lines = read_regular_file(path, MAX_RESULT_BYTES).decode("utf-8").splitlines()
        batches, superseded = [], set()
        for line in filter(str.strip, lines):
            item = json.loads(line)
            if isinstance(item, dict) and item.get("event") == SUPERSEDE_EVENT:
                superseded.update(SupersedeEvent.model_validate(item).batch_ids)
            else:
                batches.append(ExecutionBatch.model_validate(item))
    except (ValueError, UserError, OSError):
        return [], set()
    return batches, superseded


def next_lines(
    previous: list[ExecutionBatch], superseded: set[int], new: ExecutionBatch | None
) -> list[ExecutionBatch | SupersedeEvent]:
    """The file's lines after this attempt. With a new AIPerf run: the earlier attempt's batch (moved to where its
    export now is), its supersede event, the new batch; batches of older attempts are dropped, as their exports
    were replaced. Without one: everything as it was, the active batches marked superseded."""
    if new is None:
        active = [b.batch_id for b in previous if b.batch_id not in superseded]
        already = sorted(superseded & {b.batch_id for b in previous})  # an event names batches the file holds
        lines: list[ExecutionBatch | SupersedeEvent] = list(previous)
        if already:
            lines.append(SupersedeEvent(batch_ids=already))
        if active:
            lines.append(SupersedeEvent(batch_ids=active))
        return lines
    kept = [_moved(b) for b in previous if _points_at_export(b)]
    next_id = max((b.batch_id for b in previous), default=-1) + 1
    lines = list(kept)
    if kept:
        lines.append(SupersedeEvent(batch_ids=[b.batch_id for b in kept]))
    lines.append(new.model_copy(update={"batch_id": next_id}))
    return lines


def _points_at_export(batch: ExecutionBatch) -> bool:
    return all(r.output_ref.aiperf_run == AIPERF_EXPORT for r in batch.records)


def _json_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_regular_file(path, MAX_RESULT_BYTES))
    except (ValueError, UserError, OSError):
        return {}
    return data if isinstance(data, dict) else {}


def write_execution(row_dir: Path, row: ResultRow) -> Path | None:
    """Write the row's execution.jsonl after an attempt; None when the row never ran AIPerf and has no file."""
    path = row_dir / EXECUTION_FILE
    previous, superseded = read_execution(path)
    ran = any(stage.name == "aiperf" for stage in row.stages)
    if not ran and not previous:
        return None
    new = None
    if ran:
        outcome = _json_file(row_dir / AIPERF_OUTCOME)
        exit_code = outcome.get("exit_code")
        busy = outcome.get("gpu_busy_percent")
        new = execution_batch(
            row,
            list(raw_lines(row_dir / AIPERF_EXPORT)),
            batch_id=0,
            aiperf_exit=exit_code if isinstance(exit_code, int) else None,
            summary=_json_file(row_dir / AIPERF_EXPORT / AIPERF_SUMMARY_EXPORT),
            gpu_busy_percent=float(busy) if isinstance(busy, (int, float)) else None,
        )
    lines = next_lines(previous, superseded, new)
    return write_text_atomic(path, "".join(json_line(line) for line in lines))
