"""What a server answers, read so that nothing in it can crash the tool or a file written from it.

A server's body is data. It is parsed as JSON under a nesting bound (`MAX_DEPTH`) and with integers of any length
(one past Python's 4,300 digits is held as an infinity that names its size, never a ValueError). Every lone surrogate
in its text (`"\\ud800"` is valid JSON, but no UTF-8 file can hold it) is written as the six characters `\\ud800`;
whoever reads the body keeps its raw bytes under the row's private/ folder when anything was changed. Its shape is
then read through typed models: an OpenAI chat completion (whole, or as stream chunks) and a native Task answer
(`{"text": ...}`). A body of another shape is a named malformed answer, never an exception; a number the tool reads
that cannot be held (non-finite, huge, a count that is no whole number) is a named invalid value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

MAX_DEPTH = 64  # nesting levels of a server's JSON that are read; deeper is a malformed answer
LARGEST_COUNT = 2**53  # the largest whole number every JSON reader holds exactly
# The top-level fields of an OpenAI chat completion; the others are the server's own (e.g. its timing record).
OPENAI_FIELDS = frozenset(
    {"id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier", "prompt_logprobs"}
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a str holds a valid pair as one code point: any of these is lone
_STREAM_END = "[DONE]"
_SHOWN = 40


class UnheldInteger(float):
    """A JSON integer with more digits than Python converts: held as an infinity of its sign, shown by its size."""

    digits: int

    def __new__(cls, text: str) -> UnheldInteger:
        held = super().__new__(cls, "-inf" if text.startswith("-") else "inf")
        held.digits = len(text.lstrip("-"))
        return held

    def __repr__(self) -> str:
        return f"<an integer of {self.digits} digits>"


def _integer(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:  # past sys.int_info.default_max_str_digits
        return UnheldInteger(text)


def escaped_text(text: str) -> str:
    """The text with each lone surrogate written as `\\uXXXX`: what a UTF-8 file can hold."""
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def lone_surrogates(text: str) -> int:
    return len(_LONE_SURROGATE.findall(text))


class _TooDeep(Exception):
    pass


@dataclass
class ServerJson:
    """A body parsed: its value (None with a problem), and what had to change for a file to hold it."""

    value: Any = None
    problem: str | None = None  # why the body is no JSON that can be read
    escaped: int = 0  # lone surrogates written as \uXXXX
    unheld: int = 0  # numbers no JSON file holds: non-finite, or past Python's digits (written as null)

    @property
    def changed(self) -> bool:
        """Whether what a file holds of it differs from what the server sent: keep its raw bytes."""
        return bool(self.escaped or self.unheld)

    def held(self, value: Any, depth: int = 0) -> Any:
        """`value` with its text escaped and its unheld numbers counted; _TooDeep past MAX_DEPTH."""
        if depth >= MAX_DEPTH:
            raise _TooDeep
        if isinstance(value, str):
            found = lone_surrogates(value)
            self.escaped += found
            return escaped_text(value) if found else value
        if isinstance(value, float) and not math.isfinite(value):
            self.unheld += 1
            return value
        if isinstance(value, list):
            return [self.held(item, depth + 1) for item in value]
        if isinstance(value, dict):
            return {self.held(key, depth + 1): self.held(item, depth + 1) for key, item in value.items()}
        return value


def parse_server_json(body: str | bytes) -> ServerJson:
    """A server's JSON, parsed so that no body raises: too deep, not JSON, or not UTF-8 is a `problem`."""
    parsed = ServerJson()
    try:
        raw = json.loads(body, parse_int=_integer)
        parsed.value = parsed.held(raw)
    except (RecursionError, _TooDeep):
        return ServerJson(problem=f"JSON nested deeper than {MAX_DEPTH} levels")
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return ServerJson(problem=f"not JSON ({type(error).__name__}: {_short(str(error))})")
    return parsed


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


_EXPECTED = {
    "list_type": "a list",
    "model_type": "an object",
    "dict_type": "an object",
    "model_attributes_type": "an object",
    "string_type": "a string",
    "missing": "present",
}


def _kind(value: object) -> str:
    if value is None:
        return "null"
    kinds = {bool: "a boolean", str: "a string", list: "a list", dict: "an object", int: "a number", float: "a number"}
    return next((name for kind, name in kinds.items() if isinstance(value, kind)), type(value).__name__)


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def shape_problem(error: ValidationError) -> str:
    """The first place a body breaks its shape, in words: "`choices` should be a list, not a string"."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the body"
    expected = _EXPECTED.get(first["type"])
    if expected is None:
        return f"`{where}`: {first['msg']}"
    if first["type"] == "missing":
        return f"`{where}` is missing"
    return f"`{where}` should be {expected}, not {_kind(first['input'])}"


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
        answer.malformed = f"the body should be a JSON object, not {_kind(data)}"
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


def whole_count(value: object) -> tuple[int | None, str | None]:
    """(the count, None) for a whole number from 0 to LARGEST_COUNT; else (None, why it cannot be held)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"is not a number ({_short(repr(value))})"
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None, f"is not a whole number ({_short(repr(value))})"
    if not 0 <= value <= LARGEST_COUNT:
        return None, f"is not a count from 0 to 2**53 ({_short(repr(value))})"
    return int(value), None


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
        return NativeAnswer(malformed=f"the body should be a JSON object, not {_kind(parsed.value)}")
    try:
        shape = _NativeAnswer.model_validate(parsed.value)
    except ValidationError as error:
        return NativeAnswer(malformed=shape_problem(error), changed=parsed.changed)
    return NativeAnswer(text=shape.text, changed=parsed.changed)
