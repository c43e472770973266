"""Read AIPerf's exports into one record per request, keyed by identity (`scrub.py` redacts them first).

Identity is the row's `session_id` (AIPerf's `conversation_id`) plus the per-HTTP `x_request_id`; `session_num`
restarts after warmup and is never used. Answers come from the raw export (it covers warmup and keeps a server's
reasoning apart from the answer).

Every file is read as a stream, one line at a time, and no line longer than `EVIDENCE_CAP` is ever held: a longer
one is skipped unread.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..answers.shapes import ChatAnswer, read_chat_completion, read_chat_stream
from ..common.server_json import escaped_text, shape_problem

RAW_EXPORT = "profile_export_raw.jsonl"
RECORDS_EXPORT = "profile_export.jsonl"
INPUTS_EXPORT = "inputs.json"
RAW_RECORDS_DIR = "raw_records"  # per record processor, before AIPerf consolidates them into RAW_EXPORT
EVIDENCE_CAP = 64 << 20  # bytes kept of one export file once scrubbed; also the longest line ever read
READ_PIECE = 1 << 20  # how much of a file is read at a time where lines are not the unit
# What AIPerf 0.13.0 records when its own reader raises on an HTTP 200 answer it cannot read as a chat completion
# (`choices` a string, `usage` a list, nesting too deep, ...): the answer came back, and its shape is the fault.
AIPERF_READ_ERRORS = frozenset(
    {"InvalidInferenceResultError", "TypeError", "ValueError", "AttributeError", "KeyError", "IndexError",
     "RecursionError", "JSONDecodeError"}
)  # fmt: skip


class ClientRecord(BaseModel):
    """What the client saw of one request."""

    session_id: str
    x_request_id: str | None = None
    phase: str
    start_ns: int | None = None
    end_ns: int | None = None
    latency_ms: float | None = None  # client end-to-end, from AIPerf; None for a failed request
    # AIPerf's own per-request figures of a streamed answer (STREAM_METRICS), and its count of the output's tokens
    # (by the run's tokenizer, streamed or not); None for a failed request or where AIPerf gave none.
    ttft_ms: float | None = None
    itl_ms: float | None = None
    output_tokens: float | None = None
    http_status: int | None = None
    error: str | None = None
    answer: str | None = None
    finish_reason: str | None = None
    completion_tokens: int | None = None
    response_fields: dict[str, Any] = {}  # top-level response fields beyond OpenAI's (a server's timing record)
    malformed: str | None = None  # the answer is no chat completion: where its shape breaks
    invalid_values: list[str] = []  # numbers of the answer that cannot be held: where, what, why
    # The answer as AIPerf recorded it, where what is written of it differs (lone surrogates escaped, numbers that
    # cannot be held): its raw bytes, for the row's private/ folder.
    raw_answer: bytes | None = Field(default=None, exclude=True)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def identity(self) -> str:
        """The request by its X-Request-ID, else its conversation: what names its raw answer."""
        return self.x_request_id or self.session_id


def bounded_lines(handle: BinaryIO, cap: int) -> Iterator[tuple[bytes | None, int]]:
    """(line, its size) for each line of at most `cap` bytes, newline included; (None, size) for a longer one,
    skipped a piece at a time without being held."""
    while True:
        line = handle.readline(cap + 1)
        if not line:
            return
        if len(line) <= cap or line.endswith(b"\n"):
            yield line, len(line)
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = handle.readline(READ_PIECE)
            if not line:
                break
            size += len(line)
        yield None, size


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    with path.open("rb") as handle:
        for line, _size in bounded_lines(handle, EVIDENCE_CAP):
            if line is None or not line.strip():
                continue  # a record over the cap is never read
            try:
                data = json.loads(line)
            except (ValueError, RecursionError):
                continue  # a line cut off by a crash: the rest still counts
            if isinstance(data, dict):
                yield data


class RecordMeta(BaseModel):
    """The part of an AIPerf record that names the request (AIPerf's own words; a record without them is none)."""

    model_config = ConfigDict(extra="ignore")

    conversation_id: str | None = None
    x_request_id: str | None = None
    benchmark_phase: str = "?"
    request_start_ns: int | None = None
    request_end_ns: int | None = None


class _Packet(BaseModel):
    model_config = ConfigDict(extra="ignore")

    value: str | None = None


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str | None = None
    packets: list[_Packet] | None = None


class _Responses(BaseModel):
    model_config = ConfigDict(extra="ignore")

    responses: list[_Response] | None = None


class _RecordsLine(BaseModel):
    """A line of the records export: who the request was, and AIPerf's metrics of it."""

    model_config = ConfigDict(extra="ignore")

    metadata: RecordMeta = RecordMeta()
    metrics: dict[str, Any] = {}


class _Metric(BaseModel):
    model_config = ConfigDict(extra="ignore")

    value: float | None = None


def record_meta(raw: dict[str, Any]) -> RecordMeta | None:
    """The record's metadata, or None where it is not AIPerf's shape."""
    try:
        return RecordMeta.model_validate(raw.get("metadata") or {})
    except ValidationError:
        return None


def _response(raw: dict[str, Any]) -> tuple[ChatAnswer, bytes | None]:
    """The answer a raw record holds, read through the chat completion's typed shape (a whole body, or the chunks of
    a stream); and its raw bytes where what is written of it differs from what was sent."""
    try:
        responses = _Responses.model_validate({"responses": raw.get("responses")}).responses or []
    except ValidationError as error:
        return ChatAnswer(malformed=f"AIPerf's record of the answer: {shape_problem(error)}"), None
    streamed = any(response.packets is not None for response in responses)
    chunks = [
        part
        for response in responses
        for part in ([p.value for p in response.packets] if response.packets is not None else [response.text])
        if part is not None
    ]
    whole = not streamed and len(chunks) == 1
    answer = read_chat_completion(chunks[0]) if whole else read_chat_stream(chunks)
    raw_bytes = "\n".join(chunks).encode("utf-8", "surrogatepass") if answer.changed else None
    return answer, raw_bytes


def _error_text(error: Any) -> str | None:
    if not error:
        return None
    if isinstance(error, dict):
        parts = [_text_of(error.get(k)) for k in ("code", "type", "message") if error.get(k) not in (None, "")]
        return escaped_text(": ".join(parts) or "error")
    return escaped_text(_text_of(error))


def _error_type(error: Any) -> str | None:
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None


def _text_of(value: Any) -> str:
    """A value of an error record as text (JSON for a structure), whatever it holds."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value)
    except (ValueError, RecursionError):  # an integer past Python's digits, a structure too deep
        return f"<{type(value).__name__} that cannot be shown>"


# The per-request metrics read from AIPerf 0.13.0's records export, by its tags, in its display units (ms for the
# times, tokens for the count): each ClientRecord field and the tag it is read from. TTFT and ITL are AIPerf's
# streaming-only metrics (it records them only for a streamed answer; ITL needs two output tokens or more).
LATENCY_METRIC = "request_latency"
STREAM_METRICS = {
    "ttft_ms": "time_to_first_token",
    "itl_ms": "inter_token_latency",
    "output_tokens": "output_token_count",
}


def _record_metrics(artifact_dir: Path) -> dict[str, dict[str, float]]:
    """AIPerf's own per-request metrics (LATENCY_METRIC and STREAM_METRICS) by x_request_id, from the records export
    (the raw one has no metrics); a value that is not a finite number is left out."""
    found: dict[str, dict[str, float]] = {}
    for record in _lines(artifact_dir / RECORDS_EXPORT):
        try:
            line = _RecordsLine.model_validate(record)
            values = {
                tag: _Metric.model_validate(line.metrics.get(tag) or {}).value
                for tag in (LATENCY_METRIC, *STREAM_METRICS.values())
            }
        except ValidationError:
            continue
        request_id = line.metadata.x_request_id
        if request_id:
            found[request_id] = {
                tag: value for tag, value in values.items() if value is not None and math.isfinite(value)
            }
    return found


def raw_lines(artifact_dir: Path) -> Iterator[dict[str, Any]]:
    """The raw export; when AIPerf did not consolidate it (every request failed, or it was ended early), the
    per-record-processor files it wrote on the way (raw_records/*.jsonl) instead."""
    if (artifact_dir / RAW_EXPORT).is_file():
        yield from _lines(artifact_dir / RAW_EXPORT)
        return
    for part in sorted((artifact_dir / RAW_RECORDS_DIR).glob("*.jsonl")):
        yield from _lines(part)


def client_record(
    raw: dict[str, Any], latencies: dict[str, float], metrics: dict[str, dict[str, float]] | None = None
) -> ClientRecord | None:
    """One request as the client saw it (`metrics`: AIPerf's per-request STREAM_METRICS by x_request_id); None for
    a record that names no request. Nothing in it raises: an answer of another shape is `malformed`, a number that
    cannot be held an invalid value, a lone surrogate escaped."""
    meta = record_meta(raw)
    if meta is None or not meta.conversation_id:
        return None
    answer, raw_answer = _response(raw)
    status = raw.get("status")
    latency = latencies.get(meta.x_request_id or "")
    error = _error_text(raw.get("error"))
    if error and isinstance(raw.get("error"), dict) and isinstance(raw["error"].get("code"), int):
        status = raw["error"]["code"]
    if answer.malformed is not None and error is not None:
        if status == 200 and _error_type(raw.get("error")) in AIPERF_READ_ERRORS:
            # The answer came back whole and is no chat completion: the server's malformed answer, which AIPerf's
            # own reader raised on. Its error is kept in the note; the request itself did not fail.
            answer.malformed, error = f"{answer.malformed} (AIPerf: {error})", None
        else:
            answer.malformed = None  # a failed request's body is its error, not an answer
    return ClientRecord(
        session_id=escaped_text(meta.conversation_id),
        x_request_id=escaped_text(meta.x_request_id) if meta.x_request_id else None,
        phase=escaped_text(meta.benchmark_phase),
        start_ns=meta.request_start_ns,
        end_ns=meta.request_end_ns,
        latency_ms=latency if not error else None,
        **_stream_figures((metrics or {}).get(meta.x_request_id or "", {}) if not error else {}),
        http_status=status if isinstance(status, int) and not isinstance(status, bool) else None,
        error=error,
        answer=answer.text,
        finish_reason=answer.finish_reason,
        completion_tokens=answer.completion_tokens,
        response_fields=answer.fields,
        malformed=answer.malformed,
        invalid_values=answer.invalid_values,
        raw_answer=raw_answer,
    )


def _stream_figures(metrics: dict[str, float]) -> dict[str, float | None]:
    return {name: metrics.get(tag) for name, tag in STREAM_METRICS.items()}


def read_client_records(artifact_dir: Path) -> list[ClientRecord]:
    """One record per request, in completion order; empty when AIPerf wrote none.

    The raw export gives answers; a request AIPerf recorded only in profile_export.jsonl (when every request
    failed, AIPerf 0.13.0 writes no raw export) still counts, with its error and timestamps: nothing it measured
    is dropped."""
    records = []
    metrics = _record_metrics(artifact_dir)
    latencies = {request_id: found[LATENCY_METRIC] for request_id, found in metrics.items() if LATENCY_METRIC in found}
    seen: set[str] = set()
    for raw in raw_lines(artifact_dir):
        record = client_record(raw, latencies, metrics)
        if record is not None:
            records.append(record)
            seen.add(record.x_request_id or "")
    for raw in _lines(artifact_dir / RECORDS_EXPORT):
        meta = record_meta(raw)
        request_id = escaped_text(meta.x_request_id) if meta is not None and meta.x_request_id else None
        if request_id and request_id not in seen:
            record = client_record(raw, latencies, metrics)
            if record is not None:
                records.append(record)
                seen.add(request_id)
    return records
