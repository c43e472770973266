"""What a server answers, as typed shapes read tolerantly: an OpenAI chat completion (whole, or as the stream chunks
AIPerf records) and a native Task answer (`{"text": ...}`). The body is read by `common/server_json.py` first (JSON
under a bound, lone surrogates escaped, huge numbers held); a body of another shape is a named malformed answer,
never an exception. The capability check, AIPerf's exports and identity read answers here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..common.server_json import json_kind, parse_server_json, shape_problem, whole_count

# The top-level fields of an OpenAI chat completion; the others are the server's own (e.g. its timing record).
OPENAI_FIELDS = frozenset(
    {"id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier", "prompt_logprobs"}
)
_STREAM_END = "[DONE]"


# --- the typed shapes ------------------------------------------------------------------------------------------


class _Shape(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class _Message(_Shape):
    content: str | None = None


class _Choice(_Shape):
    message: _Message | None = None
    delta: _Message | None = None
    finish_reason: str | None = None


class _Usage(_Shape):
    completion_tokens: object = None  # a number checked by hand: a bad one is an invalid value, not a bad shape


class _ChatCompletion(_Shape):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    system_fingerprint: str | None = None


class _NativeAnswer(_Shape):
    text: str


# --- chat completions --------------------------------------------------------------------------------------------


@dataclass
class ChatAnswer:
    """What a chat completion (or its stream of chunks) said, read tolerantly."""

    text: str | None = None
    finish_reason: str | None = None
    completion_tokens: int | None = None
    fingerprint: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # top-level fields beyond OpenAI's, in the server's order
    body: dict[str, Any] = field(default_factory=dict)  # the (last) body's every top-level field, its text escaped
    malformed: str | None = None  # the body is no chat completion: where its shape breaks; nothing else is read
    invalid_values: list[str] = field(default_factory=list)  # numbers that cannot be held: where, what, why
    escaped: int = 0
    unheld: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.escaped or self.unheld)


def read_chat_completion(body: str | bytes) -> ChatAnswer:
    """One whole chat completion body; a body of any other shape is `malformed`, named."""
    answer = ChatAnswer()
    _read_chunk(answer, body, whole=True)
    return answer


def read_chat_stream(chunks: Iterable[str]) -> ChatAnswer:
    """The chunks of a streamed chat completion (`data:` payloads, as AIPerf records them), read as one answer; the
    end marker and blank chunks are passed over."""
    answer = ChatAnswer()
    for chunk in chunks:
        if chunk.strip() in ("", _STREAM_END):
            continue
        _read_chunk(answer, chunk, whole=False)
        if answer.malformed:
            break
    return answer


def _read_chunk(answer: ChatAnswer, body: str | bytes, *, whole: bool) -> None:
    parsed = parse_server_json(body)
    answer.escaped += parsed.escaped
    answer.unheld += parsed.unheld
    if parsed.problem is not None:
        answer.malformed = parsed.problem
        return
    data = parsed.value
    if not isinstance(data, dict):
        answer.malformed = f"the body should be a JSON object, not {json_kind(data)}"
        return
    try:
        shape = _ChatCompletion.model_validate(data)
    except ValidationError as error:
        answer.malformed = shape_problem(error)
        return
    if whole and shape.choices is None:
        answer.malformed = "`choices` is missing"
        return
    for choice in shape.choices or []:
        part = (choice.message or choice.delta or _Message()).content
        if part is not None:
            answer.text = (answer.text or "") + part
        answer.finish_reason = choice.finish_reason or answer.finish_reason
    if shape.usage is not None and shape.usage.completion_tokens is not None:
        tokens, problem = whole_count(shape.usage.completion_tokens)
        answer.completion_tokens = tokens if problem is None else answer.completion_tokens
        if problem is not None:
            answer.invalid_values.append(f"`usage.completion_tokens` {problem}")
    answer.fingerprint = shape.system_fingerprint or answer.fingerprint
    answer.fields.update({k: v for k, v in data.items() if k not in OPENAI_FIELDS})
    answer.body = data


# --- native Task answers -----------------------------------------------------------------------------------------


@dataclass
class NativeAnswer:
    text: str | None = None
    malformed: str | None = None
    changed: bool = False


def read_native_answer(body: str | bytes) -> NativeAnswer:
    """A native Task route's `{"text": ...}`; any other shape is `malformed`, named."""
    parsed = parse_server_json(body)
    if parsed.problem is not None:
        return NativeAnswer(malformed=parsed.problem)
    if not isinstance(parsed.value, dict):
        return NativeAnswer(malformed=f"the body should be a JSON object, not {json_kind(parsed.value)}")
    try:
        shape = _NativeAnswer.model_validate(parsed.value)
    except ValidationError as error:
        return NativeAnswer(malformed=shape_problem(error), changed=parsed.changed)
    return NativeAnswer(text=shape.text, changed=parsed.changed)
