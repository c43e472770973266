"""The capability check: one real clip-plus-question request to the served model, before any measurement.

A rejection of the request's content (400, 415, 422) is evidence that the server or model cannot take video, and
makes the row `unsupported`. Other refusals say nothing about the capability and make the row `failed`, with the
fix: 413 (the body is over the server's limit), 401/403 (the API key), 404 (the URL or the model name), 429 ...
A 5xx whose message is about the video's URL or format says the server could not take the clip the way it was sent
(`transport_refused`): another video transport may work, so the caller may try one.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from ..media.payload import chat_request_body, check_body_limit, encode_body, video_data_url
from ..results import TransportAttempt, VideoTransport

CHAT_PATH = "/v1/chat/completions"
_EXCERPT = 500
# The server understood the request and refused what it carries: a video part, its MIME type, its shape.
CONTENT_REJECTIONS = frozenset({400, 415, 422})
_FIXES = {
    413: "the request body is over the server's body limit: start the server with a larger --max-body-bytes "
    "(and pass the same value as --body-limit) or use a smaller clip",
    401: "the server wants an API key: give it with --api-key-env NAME or --api-key-file PATH",
    403: "the server refused the API key: check the key given with --api-key-env or --api-key-file",
    404: "check --endpoint (the server's base URL) and --model (a model id the server lists at /v1/models)",
    429: "the server is rate limiting: lower --concurrency or wait, then run again",
}
# Words of a server error about how the clip was carried, e.g. transformers serve's "Incorrect format used for
# video. Should be an url linking to an video or a local path" for a data URL.
_TRANSPORT_WORDS = re.compile(r"\burls?\b|format|data:|base64|local path|scheme|fetch|download", re.IGNORECASE)


class CapabilityResult(BaseModel):
    accepted: bool
    rejected: bool  # the server answered, and said no (4xx)
    http_status: int | None
    request_id: str
    latency_ms: float
    answer: str | None = None
    detail: str = ""
    served_by: str | None = None
    response_fields: dict[str, object] = {}
    transport_refused: bool = False  # a server error about the clip's URL or format: another transport may do
    video_transport: VideoTransport | None = None  # how the clip was carried (the accepted try, else the last)
    attempts: list[TransportAttempt] = []  # every try, in order, when the caller tried transports


def is_transport_refusal(status: int, text: str) -> bool:
    """A server error (5xx) whose message is about the video's URL or format, or that says nothing at all (a bare
    "Internal Server Error", as transformers serve answers a data URL): not a rejection of video as such."""
    bare = text.strip().strip('"').lower() in ("", "internal server error")
    return status >= 500 and (bare or bool(_TRANSPORT_WORDS.search(text)))


def check_capability(
    url: str,
    model: str,
    clip: Path,
    question: str,
    *,
    max_tokens: int,
    timeout_s: float,
    body_limit: int,
    api_key: str | None = None,
    video_url: str | None = None,
    extra: dict[str, Any] | None = None,
) -> CapabilityResult:
    """`video_url` is what the video part carries (default: the clip as a data URL); `extra` the workload's extra
    body fields. A body over `body_limit` is a ClipError, raised before anything is sent."""
    video = video_url if video_url is not None else video_data_url(clip)
    body = chat_request_body(model, question, video, max_tokens=max_tokens, extra=extra)
    content = encode_body(body)
    check_body_limit(len(content), body_limit, clip=clip)
    request_id = f"capability-{uuid.uuid4()}"
    headers = {"Content-Type": "application/json", "X-Request-ID": request_id}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    start = time.perf_counter()
    try:
        with httpx.Client(timeout=timeout_s, trust_env=False) as client:
            response = client.post(url.rstrip("/") + CHAT_PATH, content=content, headers=headers)
    except httpx.HTTPError as error:
        if isinstance(error, httpx.TimeoutException):
            detail = (
                f"no answer from {url} within {timeout_s:g} s (--request-timeout); raise --request-timeout if the "
                "server is slow to answer its first video request"
            )
        else:
            detail = f"no answer from {url}: {type(error).__name__}: {error}"
        return CapabilityResult(
            accepted=False,
            rejected=False,
            http_status=None,
            request_id=request_id,
            latency_ms=(time.perf_counter() - start) * 1000,
            detail=detail,
        )
    return _judged_response(response, request_id, (time.perf_counter() - start) * 1000)


def _judged_response(response: httpx.Response, request_id: str, latency: float) -> CapabilityResult:
    """Accepted (a non-empty chat answer), rejected (a refusal of the content) or failed, from the response."""
    served_by = response.headers.get("x-served-by")
    text = response.text[:_EXCERPT]
    if response.status_code != 200:
        fix = _FIXES.get(response.status_code)
        return CapabilityResult(
            accepted=False,
            rejected=response.status_code in CONTENT_REJECTIONS,
            transport_refused=is_transport_refusal(response.status_code, text),
            http_status=response.status_code,
            request_id=request_id,
            latency_ms=latency,
            detail=f"HTTP {response.status_code}: {text}" + (f" ({fix})" if fix else ""),
            served_by=served_by,
        )
    try:
        data = response.json()
        answer = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return CapabilityResult(
            accepted=False,
            rejected=False,
            http_status=200,
            request_id=request_id,
            latency_ms=latency,
            detail=f"not a chat completion: {text}",
            served_by=served_by,
        )
    extra = {k: v for k, v in data.items() if k not in {"id", "object", "created", "model", "choices", "usage"}}
    # The fingerprint says more than the header (a test double says so there); keep whichever the server gave.
    served_by = data.get("system_fingerprint") or served_by
    ok = isinstance(answer, str) and bool(answer.strip())
    return CapabilityResult(
        accepted=ok,
        rejected=False,
        http_status=200,
        request_id=request_id,
        latency_ms=latency,
        answer=answer if isinstance(answer, str) else None,
        detail="answered" if ok else "HTTP 200 with an empty answer",
        served_by=served_by,
        response_fields=extra,
    )
