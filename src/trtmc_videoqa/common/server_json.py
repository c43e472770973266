"""What a server sends, read so that nothing in it can crash the tool or a file written from it.

A server's body is data. It is parsed as JSON under a nesting bound (`MAX_DEPTH`) and with integers of any length
(one past Python's 4,300 digits is held as an infinity that names its size, never a ValueError). Every lone surrogate
in its text (`"\\ud800"` is valid JSON, but no UTF-8 file can hold it) is written as the six characters `\\ud800`;
whoever reads the body keeps its raw bytes under the row's private/ folder when anything was changed. A body that
breaks the shape its reader expects is named in words (`shape_problem`); a number that cannot be held (non-finite,
huge, a count that is no whole number) is a named invalid value (`whole_count`). What shapes a chat completion or a
native answer has is no matter of this module: `answers/shapes.py` reads them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

MAX_DEPTH = 64  # nesting levels of a server's JSON that are read; deeper is a malformed answer
LARGEST_COUNT = 2**53  # the largest whole number every JSON reader holds exactly
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a str holds a valid pair as one code point: any of these is lone
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
        return ServerJson(problem=f"not JSON ({type(error).__name__}: {shortened(str(error))})")
    return parsed


_EXPECTED = {
    "list_type": "a list",
    "model_type": "an object",
    "dict_type": "an object",
    "model_attributes_type": "an object",
    "string_type": "a string",
    "missing": "present",
}


def json_kind(value: object) -> str:
    """The kind of a JSON value in words: "a list", "null", "a number"."""
    if value is None:
        return "null"
    kinds = {bool: "a boolean", str: "a string", list: "a list", dict: "an object", int: "a number", float: "a number"}
    return next((name for kind, name in kinds.items() if isinstance(value, kind)), type(value).__name__)


def shortened(text: str) -> str:
    """The text cut to a length a message can show."""
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
    return f"`{where}` should be {expected}, not {json_kind(first['input'])}"


def whole_count(value: object) -> tuple[int | None, str | None]:
    """(the count, None) for a whole number from 0 to LARGEST_COUNT; else (None, why it cannot be held)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"is not a number ({shortened(repr(value))})"
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None, f"is not a whole number ({shortened(repr(value))})"
    if not 0 <= value <= LARGEST_COUNT:
        return None, f"is not a count from 0 to 2**53 ({shortened(repr(value))})"
    return int(value), None
