"""The join: every planned request matched to AIPerf's record of it by identity (the conversation id), the server's
own task time found by X-Request-ID, and each steady-state answer graded. A planned request without a record, or
one AIPerf sent in the wrong phase or more than once, is an error on its row, never dropped."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..aiperf.dataset import PlannedRequest, RequestPlan
from ..aiperf.exports import ClientRecord
from ..results import RequestRow
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


@dataclass
class JoinedRequests:
    records: list[RequestRow] = field(default_factory=list)  # one per planned request, in plan order
    graded: list[GradedAnswer] = field(default_factory=list)  # the steady-state answers that came back whole
    task_time_field: str | None = None  # where the server's task times were read, e.g. "records.handler_ms"
    timing_scope: str | None = None  # what those times measure (the server's word, else the field's boundary)


def read_server_records(path: Path | None) -> dict[str, dict[str, Any]]:
    """A server's per-request records file (one JSON object a line) by request id; lines of another shape are
    passed over."""
    if path is None or not path.is_file():
        return {}
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):  # a line that is JSON but no record: not this server's format
            continue
        key = next((record.get(k) for k in RECORD_ID_FIELDS if isinstance(record.get(k), str)), None)
        if key:
            found[key] = record
    return found


def server_task_time(client: ClientRecord, records: dict[str, dict[str, Any]]) -> TaskTime:
    """The server's own task time for this request, the field it came from and what it measures."""
    for outer, inner in RESPONSE_TASK_FIELDS:
        timing = client.response_fields.get(outer)
        if isinstance(timing, dict) and _is_number(timing.get(inner)):
            return TaskTime(float(timing[inner]), f"response.{outer}.{inner}", _scope(timing, inner))
    return record_task_time(records.get(client.x_request_id or ""))


def record_task_time(record: dict[str, Any] | None) -> TaskTime:
    """A records-file line's task time: perf_serving's nested `timing` object first, then a flat record's field."""
    if record:
        nested = record.get(RECORD_TIMING_OBJECT)
        for where, holder in ((f"records.{RECORD_TIMING_OBJECT}.", nested), ("records.", record)):
            if not isinstance(holder, dict):
                continue
            for name in RECORD_TASK_FIELDS:
                if _is_number(holder.get(name)):
                    return TaskTime(float(holder[name]), where + name, _scope(holder, name))
    return TaskTime(None, None, None)


@dataclass(frozen=True)
class TaskTime:
    ms: float | None
    field: str | None
    scope: str | None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
        server_task_ms=task_time.ms,
        http_status=client.http_status,
        error=client.error or problem,
        answer=client.answer,
    )
    answer = None
    if client.ok and not problem and planned.phase == "profiling":
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
