"""Validate a native Task body, in the request shape of TRTMC's apps/perf_serving: no chat messages at all.

``{"request": {"prompt": ..., "video_path": {"$file": {"suffix": ".mp4", "b64": ...}}, "max_new_tokens": ...,
"temperature": ...}}``, with an optional ``model`` beside ``request``. Strict on every key: a field the endpoint
silently dropped would make its answer about a different request than the one the identity check meant.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from dataclasses import dataclass
from typing import Any

from .clip import RequestClip, clip_from_bytes
from .errors import RequestRejected, json_body
from .labels import SERVED_OPERATION

_TOP_LEVEL = frozenset({"request", "model"})
_REQUIRED = ("prompt", "video_path")
_OPTIONAL = frozenset({"max_new_tokens", "temperature"})
_FILE_KEYS = frozenset({"suffix", "b64"})
INLINE_SHAPE = '{"$file": {"suffix": ".mp4", "b64": "<base64 bytes>"}}'


@dataclass(frozen=True)
class NativeTask:
    prompt: str
    clip: RequestClip
    max_new_tokens: int | None
    temperature: float | None


def check_operation(operation: str) -> None:
    if operation != SERVED_OPERATION:
        raise RequestRejected(400, f"this server serves {SERVED_OPERATION!r}, not {operation!r}")


def _request_object(body: bytes) -> dict[str, Any]:
    raw = json_body(body)
    if not isinstance(raw, dict):
        raise RequestRejected(400, f"the body must be a JSON object {{'request': {{...}}}}, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _TOP_LEVEL)
    if unknown:
        raise RequestRejected(400, f"unknown top-level field {unknown[0]!r}; a Task body has 'request' (and 'model')")
    # perf_serving serves the one bundle it was started with, so a model name is accepted and not matched.
    if "model" in raw and not isinstance(raw["model"], str):
        raise RequestRejected(400, "'model' must be a string")
    request = raw.get("request")
    if not isinstance(request, dict):
        raise RequestRejected(400, "the body needs 'request', a JSON object of the Task's fields")
    unknown = sorted(set(request) - set(_REQUIRED) - _OPTIONAL)
    if unknown:
        takes = ", ".join([*_REQUIRED, *sorted(_OPTIONAL)])
        raise RequestRejected(400, f"unknown request field {unknown[0]!r}; {SERVED_OPERATION!r} takes {takes}")
    missing = [name for name in _REQUIRED if name not in request]
    if missing:
        raise RequestRejected(400, f"request field {missing[0]!r} is required")
    return request


def _inline_clip(value: Any) -> RequestClip:
    if isinstance(value, str):
        raise RequestRejected(
            400,
            f"request.video_path {value[:60]!r} is a server path; perf_serving takes files inline: send it as "
            f"{INLINE_SHAPE}",
        )
    inline = value.get("$file") if isinstance(value, dict) and set(value) == {"$file"} else None
    if not isinstance(inline, dict) or set(inline) != _FILE_KEYS:
        raise RequestRejected(400, f"request.video_path must be {INLINE_SHAPE}")
    suffix, payload = inline["suffix"], inline["b64"]
    if not isinstance(suffix, str) or not suffix.startswith(".") or not isinstance(payload, str) or not payload:
        raise RequestRejected(400, f"request.video_path must be {INLINE_SHAPE}, with a '.suffix' and non-empty b64")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as error:
        raise RequestRejected(400, f"request.video_path b64 is not valid base64 ({error})") from None
    mime = mimetypes.guess_type(f"clip{suffix}")[0] or "video/unknown"
    if not mime.startswith("video/"):
        raise RequestRejected(400, f"request.video_path has suffix {suffix!r} ({mime}); expected a video file")
    return clip_from_bytes(data, mime, field="video_path")


def _number(request: dict[str, Any], name: str, kind: type) -> Any:
    value = request.get(name)
    # bool is an int to Python, never a token count or a temperature to a Task.
    if value is None or (isinstance(value, kind | int) and not isinstance(value, bool)):
        return value
    raise RequestRejected(400, f"request.{name} must be {'an integer' if kind is int else 'a number'}")


def parse_native_request(body: bytes) -> NativeTask:
    request = _request_object(body)
    prompt = request["prompt"]
    if not isinstance(prompt, str) or not prompt.strip():
        raise RequestRejected(400, "request.prompt must be a non-empty string with the question")
    max_new_tokens = _number(request, "max_new_tokens", int)
    if max_new_tokens is not None and max_new_tokens < 1:
        raise RequestRejected(400, "request.max_new_tokens must be at least 1")
    temperature = _number(request, "temperature", float)
    return NativeTask(
        prompt=prompt,
        clip=_inline_clip(request["video_path"]),
        max_new_tokens=max_new_tokens,
        temperature=None if temperature is None else float(temperature),
    )
