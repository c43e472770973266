"""The chat request that carries a clip: data URL, body, its exact encoded size, and the server's body limit.

The body is what AIPerf sends for a video request: one user message whose content is the question as a text part,
then the clip as a ``video_url`` part holding a base64 data URL.
"""

from __future__ import annotations

import base64
import binascii
import json
from os import PathLike
from typing import Any

from .errors import ClipError
from .sniff import mime_for_suffix, sniff_mime

TRTMC_SERVER_BODY_LIMIT = 1_048_576  # trtmc-server's default --max-body-bytes
_BASE64_MARKER = ";base64,"
_RESERVED_KEYS = frozenset({"model", "messages"})


def clip_mime(path: str | PathLike[str], data: bytes) -> str:
    """The clip's MIME type from its own bytes (an .mp4 that is really WebM is video/webm), else its extension."""
    mime = sniff_mime(data) or mime_for_suffix(path)
    if mime is None:
        raise ClipError(path, "has a container this tool cannot name a MIME type for", "pass mime= explicitly")
    return mime


def data_url(data: bytes, mime: str) -> str:
    """``data:<mime>;base64,<data>``."""
    return f"data:{mime}{_BASE64_MARKER}{base64.b64encode(data).decode('ascii')}"


def video_data_url(path: str | PathLike[str], mime: str | None = None) -> str:
    """The clip file as a base64 data URL; the MIME type comes from the container unless given."""
    from .source import read_clip_bytes  # PyAV comes with it; the size checks here need none

    data = read_clip_bytes(path)
    return data_url(data, mime or clip_mime(path, data))


def parse_data_url(url: str) -> tuple[str, bytes]:
    """(mime, bytes) of a ``data:<mime>;base64,<payload>`` URL; ValueError saying what is wrong otherwise."""
    if not isinstance(url, str) or not url.startswith("data:"):
        shown = url[:40] if isinstance(url, str) else type(url).__name__
        raise ValueError(f"not a data URL (it must start with 'data:'): {shown!r}")
    header, marker, payload = url[len("data:") :].partition(",")
    if not marker:
        raise ValueError("malformed data URL: no ',' separates the header from the payload")
    if not header.endswith(";base64"):
        raise ValueError(f"data URL header {header!r} is not base64 (expected 'data:<mime>;base64,...')")
    mime = header[: -len(";base64")].split(";", 1)[0]
    kind, slash, subtype = mime.partition("/")
    if not (kind and slash and subtype):
        raise ValueError(f"data URL has no MIME type of the form type/subtype: {header!r}")
    if not payload:
        raise ValueError("data URL has an empty payload")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"data URL payload is not valid base64 ({error})") from None
    return mime, data


def chat_request_body(
    model: str,
    question: str,
    video_url: str,
    *,
    max_tokens: int,
    temperature: float = 0.0,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The /v1/chat/completions body: text part first, then the video part, as AIPerf sends it.

    ``extra`` is shallow-merged last (like an AIPerf row's ``extra``), except that it may not replace
    ``model`` or ``messages``.
    """
    clashes = _RESERVED_KEYS & set(extra or {})
    if clashes:
        raise ValueError(f"extra may not set {', '.join(sorted(clashes))}; pass them as arguments")
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": question},
                    {"type": "video_url", "video_url": {"url": video_url}},
                ],
            }
        ],
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    body.update(extra or {})
    return body


def encode_body(body: dict[str, Any]) -> bytes:
    """The exact bytes to send: compact separators, UTF-8, no NaN (send these with content=, not json=)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def encoded_body_size(body: dict[str, Any]) -> int:
    """len(encode_body(body)): the Content-Length the request will have."""
    return len(encode_body(body))


def base64_size(byte_count: int) -> int:
    """Characters of the padded base64 of byte_count bytes, without encoding anything."""
    return 4 * ((byte_count + 2) // 3)


def predicted_body_size(
    model: str,
    question: str,
    clip_bytes: int,
    mime: str,
    *,
    max_tokens: int,
    temperature: float = 0.0,
    extra: dict[str, Any] | None = None,
) -> int:
    """The exact encoded body size for a clip of clip_bytes bytes, from the file size alone.

    Exact because base64 characters need no JSON escaping: the body with an empty URL plus the URL's length.
    """
    empty = chat_request_body(model, question, "", max_tokens=max_tokens, temperature=temperature, extra=extra)
    return encoded_body_size(empty) + len(f"data:{mime}{_BASE64_MARKER}") + base64_size(clip_bytes)


def check_body_limit(
    body_size: int, limit: int = TRTMC_SERVER_BODY_LIMIT, *, clip: str | PathLike[str] = "<clip>"
) -> None:
    """Refuse, before sending, a request body the server would reject as too large."""
    if body_size > limit:
        raise ClipError(
            clip,
            f"is too large for the server's body limit: the request body would be {body_size:,} bytes, over "
            f"{limit:,} (trtmc-server's default --max-body-bytes is {TRTMC_SERVER_BODY_LIMIT:,}; base64 adds a third)",
            "use a smaller or shorter clip (for example re-encoded at 320x180 without audio), "
            "or start the server with a larger --max-body-bytes",
        )
