"""The join: every planned request matched to AIPerf's record of it by identity (the conversation id), the server's
own task time found by X-Request-ID, and each steady-state answer graded. A planned request without a record, or
one AIPerf sent in the wrong phase or more than once, is an error on its row, never dropped.

A server's task time is checked before it is believed (issue 26): it must be a finite number from zero up to the
request's own client latency (with TASK_TIME_TOLERANCE_MS and TASK_TIME_TOLERANCE_SHARE for two clocks). Anything
else (a negative, NaN, infinity, 1e308, an integer of 4,301 digits, a string, a number over the client latency)
is kept off the figures and recorded on the request as `server_task_invalid`, the value and the rule it broke; the
timing stage counts and names those requests. An answer of another shape than a chat completion is `malformed` on
its request (where its shape breaks), never graded; the output check fails it."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..aiperf.dataset import PlannedRequest, RequestPlan
from ..aiperf.exports import ClientRecord
from ..common.atomic_write import write_bytes_atomic
from ..common.safe_read import UnreadableInput, regular_file_lines
from ..common.server_json import parse_server_json
from ..results import RequestRow, StageResult
from ..results.layout import RAW_ANSWERS_DIR, raw_answer_file
from ..workloads import Workload
from ..workloads.grading import GradedAnswer, grade_answer

# Where a server's own task time for a request can be found, most specific first: the response field of
# perf_serving / the reference endpoint (`trtmc_timing`), then a records file joined by X-Request-ID.
RESPONSE_TASK_FIELDS = (("trtmc_timing", "model_call_ms"), ("trtmc_timing", "handler_ms"))
RECORD_TASK_FIELDS = ("model_call_ms", "handler_ms", "task_ms")
# perf_serving nests a record's times under "timing"; a flat record (trtmc-server, the reference endpoint) has them
# at the top.
RECORD_TIMING_OBJECT = "timing"
# What each field measures, where the server does not say in its own word (a `timing_scope` or `scope` beside it).
FIELD_SCOPES = {
    "model_call_ms": "public_task_call_wall",
    "handler_ms": "handler: wider than the task call, it includes the server's request handling",
    "task_ms": "task time as the server names it (boundary not stated)",
}
SCOPE_KEYS = ("timing_scope", "scope")
RECORD_ID_FIELDS = ("request_id", "x_request_id", "id")
NO_RECORD = "no record: the request was never completed"
# A task time may exceed the request's client latency by this much: the server's clock and AIPerf's are two clocks,
# each rounding its own way. The larger of the two allowances applies.
TASK_TIME_TOLERANCE_MS = 1.0
TASK_TIME_TOLERANCE_SHARE = 0.01
MAX_RECORD_LINE_BYTES = 1 << 20  # one request's record; a longer line is no record of ours to read
SHOWN_VALUE_CHARS = 40  # a value that is not a task time is quoted up to this many characters


@dataclass
class JoinedRequests:
    records: list[RequestRow] = field(default_factory=list)  # one per planned request, in plan order
    graded: list[GradedAnswer] = field(default_factory=list)  # the steady-state answers that came back whole
    task_time_field: str | None = None  # where the server's task times were read, e.g. "records.handler_ms"
    timing_scope: str | None = None  # what those times measure (the server's word, else the field's boundary)


def read_server_records(path: Path | None, wanted: Collection[str] | None = None) -> dict[str, dict[str, Any]]:
    """A server's per-request records file (one JSON object a line) by request id, read as a stream: only the
    records of `wanted` request ids are kept (every one where None), a line over MAX_RECORD_LINE_BYTES and lines of
    another shape are passed over. A records file of any size costs one line of memory, and the ids kept."""
    if path is None or not path.is_file():
        return {}
    found: dict[str, dict[str, Any]] = {}
    try:
        for line in regular_file_lines(path, MAX_RECORD_LINE_BYTES):
            # Torn, not JSON or too deep: passed over. An integer past Python's digits is held, to be named
            # invalid; a lone surrogate is escaped (the file itself is the raw record, under private/).
            record = parse_server_json(line.decode("utf-8", errors="replace")).value
            if not isinstance(record, dict):  # a line that is JSON but no record: not this server's format
                continue
            key = next((record.get(k) for k in RECORD_ID_FIELDS if isinstance(record.get(k), str)), None)
            if key and (wanted is None or key in wanted):
                found[key] = record
    except UnreadableInput:  # gone, or no regular file (a FIFO would block): no records, so no task times joined
        return {}
    return found


def server_task_time(client: ClientRecord, records: dict[str, dict[str, Any]]) -> TaskTime:
    """The server's own task time for this request, the field it came from and what it measures; checked against
    the request's own client latency (`invalid` says why a value the server gave is not believed)."""
    for outer, inner in RESPONSE_TASK_FIELDS:
        timing = client.response_fields.get(outer)
        if isinstance(timing, dict) and timing.get(inner) is not None:
            found = _task_time(timing, inner, f"response.{outer}.{inner}")
            return within_client_latency(found, client.latency_ms)
    return within_client_latency(record_task_time(records.get(client.x_request_id or "")), client.latency_ms)


def record_task_time(record: dict[str, Any] | None) -> TaskTime:
    """A records-file line's task time: perf_serving's nested `timing` object first, then a flat record's field.
    The first field present decides (JSON null is absent); a value that is no finite, non-negative number is
    `invalid`."""
    if record:
        nested = record.get(RECORD_TIMING_OBJECT)
        for where, holder in ((f"records.{RECORD_TIMING_OBJECT}.", nested), ("records.", record)):
            if not isinstance(holder, dict):
                continue
            for name in RECORD_TASK_FIELDS:
                if holder.get(name) is not None:
                    return _task_time(holder, name, where + name)
    return TaskTime(None, None, None)


@dataclass(frozen=True)
class TaskTime:
    ms: float | None  # None when absent, and when invalid
    field: str | None  # where a valid time was read
    scope: str | None
    invalid: str | None = None  # the value the server gave, where, and the rule it broke


def task_time_problem(value: object) -> tuple[float | None, str | None]:
    """(the value as milliseconds, None) for a finite number from zero up; else (None, why it is no task time)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None, f"is not a number ({_shown(value)})"
    try:
        ms = float(value)
    except OverflowError:  # an integer beyond any float: 10**400 in JSON
        return None, f"is not a finite number ({_shown(value)})"
    if not math.isfinite(ms):
        return None, f"is not a finite number ({_shown(value)})"
    if ms < 0:
        return None, f"is below zero ({ms:g} ms)"
    return ms, None


def within_client_latency(found: TaskTime, client_latency_ms: float | None) -> TaskTime:
    """`found` unless it exceeds the request's own client latency (beyond the tolerance): a server cannot spend
    longer on a request than the client waited for it. Without a client latency (a failed request) it stands."""
    if found.ms is None or client_latency_ms is None or not math.isfinite(client_latency_ms):
        return found
    allowed = client_latency_ms + max(TASK_TIME_TOLERANCE_MS, client_latency_ms * TASK_TIME_TOLERANCE_SHARE)
    if found.ms <= allowed:
        return found
    why = f"is over the request's own client latency ({found.ms:g} ms > {client_latency_ms:g} ms)"
    return TaskTime(None, None, None, invalid=f"`{found.field}` {why}")


def _task_time(holder: dict[str, Any], name: str, where: str) -> TaskTime:
    ms, problem = task_time_problem(holder[name])
    if problem is not None:
        return TaskTime(None, None, None, invalid=f"`{where}` {problem}")
    return TaskTime(ms, where, _scope(holder, name))


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 1] + "…"


def _scope(holder: dict[str, Any], name: str) -> str:
    keys = (f"{name.removesuffix('_ms')}_scope", *SCOPE_KEYS)  # e.g. model_call_scope beside model_call_ms
    own = next((holder[k] for k in keys if isinstance(holder.get(k), str) and holder[k]), None)
    return own or FIELD_SCOPES[name]


def phase_problem(planned: str, sent_in: str, times: int) -> str | None:
    """Why a request's record cannot be trusted as planned, or None: AIPerf's own phase must be the planned one
    (warmup never enters steady state), and each planned conversation is sent exactly once."""
    if times > 1:
        return f"AIPerf sent this conversation {times} times; the plan sends it once"
    if sent_in != planned:
        return f"AIPerf sent it in its {sent_in!r} phase; the plan put it in {planned!r}"
    return None


def join_requests(
    plan: RequestPlan,
    clients: list[ClientRecord],
    server_records: dict[str, dict[str, Any]],
    workload: Workload,
    max_tokens: int,
) -> JoinedRequests:
    """Every planned request with AIPerf's first record of it (and how often it was sent), graded where it counts."""
    by_session: dict[str, ClientRecord] = {}
    sent: dict[str, int] = {}
    for client in clients:
        by_session.setdefault(client.session_id, client)
        sent[client.session_id] = sent.get(client.session_id, 0) + 1
    joined = JoinedRequests()
    task_fields: set[str] = set()
    scopes: set[str] = set()
    for planned in {r.session_id: r for r in plan.requests}.values():
        record = by_session.get(planned.session_id)
        if record is None:
            joined.records.append(_planned_row(planned).model_copy(update={"error": NO_RECORD}))
            continue
        row, answer, task_time = _joined_row(
            planned, record, sent[planned.session_id], server_records, workload, max_tokens
        )
        joined.records.append(row)
        if answer is not None:
            joined.graded.append(answer)
        if task_time.field and task_time.scope:
            task_fields.add(task_time.field)
            scopes.add(task_time.scope)
    joined.task_time_field = ", ".join(sorted(task_fields)) or None
    joined.timing_scope = "; ".join(sorted(scopes)) or None
    return joined


def _planned_row(planned: PlannedRequest) -> RequestRow:
    return RequestRow(
        session_id=planned.session_id,
        phase=planned.phase,
        question_id=planned.question_id,
        clip_id=planned.clip_id,
        repeat=planned.repeat,
    )


def _joined_row(
    planned: PlannedRequest,
    client: ClientRecord,
    times_sent: int,
    server_records: dict[str, dict[str, Any]],
    workload: Workload,
    max_tokens: int,
) -> tuple[RequestRow, GradedAnswer | None, TaskTime]:
    """(the request's row, its graded answer when it is a trusted steady-state one, its task time)."""
    row = _planned_row(planned)
    task_time = server_task_time(client, server_records)
    problem = phase_problem(planned.phase, client.phase, times_sent)
    update: dict[str, Any] = dict(
        x_request_id=client.x_request_id,
        start_ns=client.start_ns,
        end_ns=client.end_ns,
        client_latency_ms=client.latency_ms,
        ttft_ms=client.ttft_ms,
        itl_ms=client.itl_ms,
        output_tokens=client.output_tokens,
        server_task_ms=task_time.ms,
        server_task_invalid=task_time.invalid,
        http_status=client.http_status,
        error=client.error or problem,
        answer=client.answer,
        malformed=client.malformed,
        invalid_values=client.invalid_values,
        raw_answer=raw_answer_file(client.identity) if client.raw_answer is not None else None,
    )
    answer = None
    if client.ok and not problem and not client.malformed and planned.phase == "profiling":
        answer = _grade(workload, row, client, max_tokens)
        update.update(expected=answer.expected, grade=answer.outcome, rule=answer.rule)
    return row.model_copy(update=update), answer, task_time


def _grade(workload: Workload, row: RequestRow, client: ClientRecord, max_tokens: int) -> GradedAnswer:
    question = workload.question(row.question_id)
    return grade_answer(
        client.answer or "",
        question.options,
        question.answers[row.clip_id],
        question_id=row.question_id,
        variant=row.clip_id,
        repeat=row.repeat,
        finish_reason=client.finish_reason,
        output_tokens=client.completion_tokens,
        max_tokens=max_tokens,
    )


def keep_raw_answers(row_dir: Path, clients: list[ClientRecord]) -> None:
    """Each answer whose text the row holds changed (a lone surrogate escaped, a number no JSON reader holds), as
    AIPerf recorded it, under the row's private/ folder: the evidence of what the server really sent."""
    for client in clients:
        if client.raw_answer is not None:
            write_bytes_atomic(row_dir / raw_answer_file(client.identity), client.raw_answer)


def with_server_text_notes(stage: StageResult, records: list[RequestRow]) -> StageResult:
    """The stage, its detail counting the malformed answers, the answers whose text was escaped and the values that
    cannot be held."""
    notes = []
    malformed = [r for r in records if r.malformed]
    if malformed:
        notes.append(
            f"{len(malformed)} answer(s) were no chat completion, each a malformed answer for the output check "
            f"(first: {malformed[0].session_id}: {malformed[0].malformed})"
        )
    escaped = [r for r in records if r.raw_answer]
    if escaped:
        notes.append(
            f"{len(escaped)} answer(s) held text written escaped (a lone surrogate as \\uXXXX) or numbers no JSON "
            f"reader holds; their raw bytes are under {RAW_ANSWERS_DIR}/"
        )
    invalid = [r for r in records if r.invalid_values]
    if invalid:
        first = invalid[0]
        notes.append(
            f"{len(invalid)} answer(s) gave values that cannot be held, left out (first: {first.session_id}: "
            f"{first.invalid_values[0]})"
        )
    if not notes:
        return stage
    return stage.model_copy(update={"detail": "; ".join([stage.detail, *notes])})
