"""Write a row's `execution.jsonl`: one batch for the AIPerf run the row made, and a supersede event for the
attempt it replaced.

A row's folder is aiperf_qual's model result directory: paths in the file are relative to it. The batch is made
from the row (our join of every request: identity, server task time) and the typed `AiperfEvidence` the aiperf
stage took once from AIPerf's raw export as the row's public folder keeps it (`aiperf_evidence`), so `request_sha`
re-computes from the record that `output_ref` names. That export carries each clip as its sha256 instead of its
base64 (every public export of ours does), so the digest still commits to the clip's bytes. Writing the file reads
no AIPerf export: only the row, the evidence and the file's own earlier lines.

A re-run of a row sets the earlier AIPerf export aside as `aiperf/export.previous`; its batch follows it there and
is marked superseded. Only that one earlier attempt is kept on disk, so only its batch is kept in the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..aiperf.exports import client_record, raw_lines
from ..common.atomic_write import write_text_atomic
from ..common.errors import UserError
from ..common.safe_read import MAX_RESULT_BYTES, read_regular_file
from ..results import RequestRow, ResultRow
from ..results.layout import AIPERF_EXPORT, AIPERF_PREVIOUS_EXPORT, AIPERF_SUMMARY_EXPORT
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


@dataclass(frozen=True)
class ProfilingRecord:
    """One profiling-phase raw record of AIPerf's, as execution.jsonl needs it: its identity, the payload's digest
    and problems, and whether it was answered."""

    conversation_id: str | None
    x_request_id: str | None
    request_sha: str
    request_problems: tuple[str, ...]
    answered: bool
    completion_tokens: int | None
    http_status: int | None


@dataclass(frozen=True)
class RunFacts:
    """One AIPerf run of a row that makes several (a sweep's levels, repeated runs): its export (row-relative), its
    load, and its request counts, which its batch says instead of the row's (its first run's)."""

    export: str
    concurrency: int | None  # None: a request-rate run
    warmup: int
    expected: int
    first: bool  # the row's first run: its export is aiperf/export, set aside by the next attempt
    requests: tuple[RequestRow, ...] = ()  # our join of the run's requests (the row holds only its first run's)


@dataclass(frozen=True)
class AiperfEvidence:
    """What execution.jsonl needs of one AIPerf run (the typed result the aiperf stage puts in the measurement):
    how it ended, the profiling records in AIPerf's order, and AIPerf's own per-run statistics."""

    exit_code: int | None  # None: this tool ended it (wall limit, interrupt)
    gpu_busy_percent: float | None
    records: tuple[ProfilingRecord, ...]
    metrics: MetricsCapture
    run: RunFacts | None = None  # set by the aiperf stage; None: the row's one run, as before sweeps


def profiling_record(raw: dict[str, Any]) -> ProfilingRecord:
    """One raw record of AIPerf's export (payload, answer, status) as execution.jsonl needs it."""
    meta = raw.get("metadata") or {}
    payload = raw.get("payload") or {}
    client = client_record(raw, {})
    answered = (
        client is not None
        and client.error is None
        and client.http_status in (None, 200)
        and bool(client.answer)
        and not meta.get("was_cancelled")
    )
    conversation, request_id = meta.get("conversation_id"), meta.get("x_request_id")
    return ProfilingRecord(
        conversation_id=str(conversation) if conversation else None,
        x_request_id=str(request_id) if request_id is not None else None,
        request_sha=request_sha(payload),
        request_problems=tuple(request_problems(payload)),
        answered=answered,
        completion_tokens=client.completion_tokens if client is not None else None,
        http_status=client.http_status if client is not None else None,
    )


def aiperf_evidence(export_dir: Path, exit_code: int | None, gpu_busy_percent: float | None) -> AiperfEvidence:
    """The evidence of the AIPerf run whose export (scrubbed, as it is published) is `export_dir`: read once, by
    the aiperf stage, right after it kept the export."""
    profiling = [
        raw for raw in raw_lines(export_dir) if (raw.get("metadata") or {}).get("benchmark_phase") == "profiling"
    ]
    return AiperfEvidence(
        exit_code=exit_code,
        gpu_busy_percent=gpu_busy_percent,
        records=tuple(profiling_record(raw) for raw in profiling),
        metrics=metrics_capture(_json_file(export_dir / AIPERF_SUMMARY_EXPORT)),
    )


def execution_record(
    raw: ProfilingRecord, index: int, row: RequestRow | None, side: Side, export: str = AIPERF_EXPORT
) -> ExecutionRecord:
    """One profiling request: AIPerf's record of it with our join of it (unit, task time)."""
    sample = raw.conversation_id or str(index)
    task_ms = _task_ms(row.server_task_ms) if row is not None else None
    return ExecutionRecord(
        sample_id=sample,
        unit_id=f"{row.question_id}/{row.clip_id}" if row is not None else sample,
        request_sha=raw.request_sha,
        model_call_ms=task_ms,
        valid=raw.answered and task_ms is not None,
        output_valid=raw.answered,
        work=[("output_tokens", raw.completion_tokens)] if raw.answered else None,
        capacity_rejection=(raw.http_status == 429) if side == "candidate" else None,
        request_problems=list(raw.request_problems),
        output_ref=OutputRef(aiperf_run=export, record_index=index, request_id=raw.x_request_id),
    )


def metrics_capture(summary: dict[str, Any], export: str = AIPERF_EXPORT) -> MetricsCapture:
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
    return MetricsCapture(source=f"{export}/{AIPERF_SUMMARY_EXPORT}", metrics=metrics)


def execution_batch(row: ResultRow, evidence: AiperfEvidence, *, batch_id: int) -> ExecutionBatch:
    """The batch of one AIPerf run of the row: its profiling-phase records, in AIPerf's order, each joined to our
    row of that request (the run's own join where the evidence carries it, else the row's) by X-Request-ID (else by
    conversation id)."""
    side = side_of(row)
    own = list(evidence.run.requests) if evidence.run is not None and evidence.run.requests else row.requests
    by_id = {r.x_request_id: r for r in own if r.x_request_id}
    by_session = {r.session_id: r for r in own if r.phase == "profiling"}
    run = evidence.run
    export = run.export if run is not None else AIPERF_EXPORT
    records = []
    for index, raw in enumerate(evidence.records):
        ours = by_id.get(str(raw.x_request_id)) or by_session.get(str(raw.conversation_id))
        records.append(execution_record(raw, index, ours, side, export))
    settings = row.provenance.settings if row.provenance else {}
    return ExecutionBatch(
        batch_id=batch_id,
        workload=row.provenance.workload if row.provenance else "unknown",
        role="both",  # one workload: its answers are graded (quality) and its requests timed (performance)
        identity=BatchIdentity(
            side=side,
            precision=row.provenance.effective_precision if row.provenance else None,
            timing_scope=row.timing_scope,
            concurrency=_concurrency(run, settings),
            operation=CHAT_ROUTE,
        ),
        gpu_busy_percent=evidence.gpu_busy_percent,
        warmup=run.warmup if run is not None else row.warmup_requests,
        expected_requests=run.expected if run is not None else row.profiling_requests_planned,
        aiperf_exit=ENDED_BY_US if evidence.exit_code is None else evidence.exit_code,
        aiperf_metrics=evidence.metrics.model_copy(update={"source": f"{export}/{AIPERF_SUMMARY_EXPORT}"}),
        records=records,
    )


def _concurrency(run: RunFacts | None, settings: dict[str, Any]) -> int:
    """The run's concurrency; a request-rate run bounds none, so its batch says its request count, the most that
    can be in flight (aiperf_qual's field needs a whole number from 1)."""
    if run is not None:
        return run.concurrency if run.concurrency is not None else max(run.expected, 1)
    given = settings.get("concurrency")
    return int(given) if isinstance(given, int) else 1


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
    previous: list[ExecutionBatch], superseded: set[int], new: ExecutionBatch | list[ExecutionBatch] | None
) -> list[ExecutionBatch | SupersedeEvent]:
    """The file's lines after this attempt. With new AIPerf runs (one batch each, in the order they ran): the
    earlier attempt's first batch (moved to where its export now is), its supersede event, the new batches; batches
    of older attempts, and an earlier attempt's further runs, are dropped, as their exports were replaced. Without
    one: everything as it was, the active batches marked superseded."""
    new = [new] if isinstance(new, ExecutionBatch) else new
    if not new:
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
    lines += [batch.model_copy(update={"batch_id": next_id + offset}) for offset, batch in enumerate(new)]
    return lines


def _points_at_export(batch: ExecutionBatch) -> bool:
    """The batch of a row's first AIPerf run, whose export is carried to the next attempt and set aside."""
    own = batch.aiperf_metrics.source.startswith(AIPERF_EXPORT + "/")
    return own and all(r.output_ref.aiperf_run == AIPERF_EXPORT for r in batch.records)


def _json_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_regular_file(path, MAX_RESULT_BYTES))
    except (ValueError, UserError, OSError):
        return {}
    return data if isinstance(data, dict) else {}


def write_execution(
    row_dir: Path,
    row: ResultRow,
    evidence: AiperfEvidence | Sequence[AiperfEvidence] | None,
    carried: tuple[list[ExecutionBatch], set[int]] | None = None,
) -> Path | None:
    """Write the row's execution.jsonl after an attempt, from the evidence of the AIPerf runs it made (one batch
    each; None or none: it made none) after the earlier attempts' lines (`carried`, else the file as it is); None
    when the row never ran AIPerf and has no file."""
    path = row_dir / EXECUTION_FILE
    previous, superseded = carried if carried is not None else read_execution(path)
    runs = [evidence] if isinstance(evidence, AiperfEvidence) else list(evidence or ())
    if not runs and not previous:
        return None
    new = [execution_batch(row, run, batch_id=0) for run in runs]
    lines = next_lines(previous, superseded, new)
    return write_text_atomic(path, "".join(json_line(line) for line in lines))
