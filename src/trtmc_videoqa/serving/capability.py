"""The capability check: one real clip-plus-question request to the served model, before any measurement.

A rejection of the request's content (400, 415, 422) is evidence that the server or model cannot take video only
once the same server answers one text-only request to the same model with the same key (`check_text_only`): a
server that refuses that too was set up or named wrong (a model it is not pinned to, a wrong path or key), which
the row says is `failed`, with the hint `setup_hint` gives. Other refusals say nothing about the capability and
make the row `failed`, with the fix: 413 (the body is over the server's limit), 401/403 (the API key), 404 (the
URL or the model name), 429 ... A 5xx whose message is about the video's URL or format says the server could
not take the clip the way it was sent (`transport_refused`): another video transport may work, so the caller may
try one.

The response is read under `--max-response-bytes` (after decoding) and `--request-timeout` for the whole request
(serving/bounded_http.py); a redirect is never followed. What the server adds of its own (fields beyond OpenAI's,
`system_fingerprint`, `X-Served-By`) is kept only to a bounded size: the answer to `ANSWER_KEPT` characters, each
extra field to `FIELD_KEPT` bytes of JSON and all of them to `FIELDS_KEPT`, the rest named as dropped.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..answers.shapes import read_chat_completion
from ..media.payload import chat_request_body, check_body_limit, encode_body, video_data_url
from ..results import ServedModel, TransportAttempt, VideoTransport
from .bounded_http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    REQUEST_ERRORS,
    BadEncoding,
    BoundedClient,
    BoundedResponse,
    RequestDeadline,
    ResponseTooLarge,
    UnboundedEncoding,
    redirect_note,
)
from .served_model import MODELS_PATH, kept_name

CHAT_PATH = "/v1/chat/completions"
_EXCERPT = 500
ANSWER_KEPT = 64 * 1024  # characters of the capability answer kept (its check needs only that it is not empty)
FIELD_KEPT = 4 * 1024  # bytes of JSON kept of one field a server adds beyond OpenAI's
FIELDS_KEPT = 16 * 1024  # bytes of JSON kept of all of them together
NAME_KEPT = 64  # characters of a server's field name or X-Served-By / system_fingerprint kept
DROPPED_KEY = "_dropped_by_trtmc_videoqa"
_CHAT_FIELDS = frozenset({"id", "object", "created", "model", "choices", "usage"})  # the rest is kept, bounded
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
TEXT_ONLY_PROMPT = "This request carries no video. Reply with the one word: ready."
TEXT_ONLY_TOKENS = 8
# Words of a refusal about the model's name: transformers serve's "Server is pinned to ...", OpenAI's and vLLM's
# "model_not_found" / "The model `x` does not exist", the reference endpoint's "is not served here".
_MODEL_WORDS = re.compile(r"(?<![a-z])models?(?![a-z])|pinned|not served", re.IGNORECASE)
# Words of a server error about how the clip was carried, e.g. transformers serve's "Incorrect format used for
# video. Should be an url linking to an video or a local path" for a data URL.
TRANSPORT_WORDS = re.compile(r"\burls?\b|format|data:|base64|local path|scheme|fetch|download", re.IGNORECASE)


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
    malformed: str | None = None  # an HTTP 200 that was no chat completion: where its shape breaks
    invalid_values: list[str] = []  # numbers of the answer that cannot be held: where, what, why
    raw_answer: str | None = None  # where the caller kept the body's raw bytes (row-relative, private/)
    model: str | None = None  # the `model` the answer named, as given (cut to MODEL_KEPT characters)
    served_model: ServedModel | None = None  # every answer's model name beside --model (the caller's judgement)
    # The one text-only request to the same model with the same key, sent after the video was refused: its answer
    # tells a server that takes no video (text answered) from one set up or named wrong (text refused too).
    text_only: CapabilityResult | None = None
    # The body as it came, where what is written of it differs (a lone surrogate escaped, a number no JSON reader
    # holds): for the caller to keep under the row's private/ folder, never written here.
    raw_bytes: bytes | None = Field(default=None, exclude=True)


def is_transport_refusal(status: int, text: str) -> bool:
    """A server error (5xx) whose message is about the video's URL or format, or that says nothing at all (a bare
    "Internal Server Error", as transformers serve answers a data URL): not a rejection of video as such."""
    bare = text.strip().strip('"').lower() in ("", "internal server error")
    return status >= 500 and (bare or bool(TRANSPORT_WORDS.search(text)))


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
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> CapabilityResult:
    """`video_url` is what the video part carries (default: the clip as a data URL); `extra` the workload's extra
    body fields. A body over `body_limit` is a ClipError, raised before anything is sent. The answer is read under
    `max_response_bytes` (decoded) and `timeout_s` for the whole request."""
    video = video_url if video_url is not None else video_data_url(clip)
    body = chat_request_body(model, question, video, max_tokens=max_tokens, extra=extra)
    content = encode_body(body)
    check_body_limit(len(content), body_limit, clip=clip)
    return _sent(url, content, f"capability-{uuid.uuid4()}", api_key, timeout_s, max_response_bytes)


def check_text_only(
    url: str,
    model: str,
    *,
    timeout_s: float,
    api_key: str | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> CapabilityResult:
    """One chat request with no video (TEXT_ONLY_PROMPT, plain text content) to the same model with the same key,
    judged as the video request is: `accepted` where it was answered."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": TEXT_ONLY_PROMPT}],
        "max_tokens": TEXT_ONLY_TOKENS,
        "temperature": 0.0,
    }
    request_id = f"capability-text-{uuid.uuid4()}"
    return _sent(url, encode_body(body), request_id, api_key, timeout_s, max_response_bytes, fixes=False)


def _sent(
    url: str,
    content: bytes,
    request_id: str,
    api_key: str | None,
    timeout_s: float,
    max_response_bytes: int,
    *,
    fixes: bool = True,
) -> CapabilityResult:
    """The request sent and its answer judged; `fixes`: a refusal's detail carries the fix for its status (the
    text-only request's caller gives its own)."""
    headers = {"Content-Type": "application/json", "X-Request-ID": request_id}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    start = time.perf_counter()
    try:
        client = BoundedClient(timeout_s=timeout_s, max_response_bytes=max_response_bytes)
        response = client.post(url.rstrip("/") + CHAT_PATH, content=content, headers=headers)
    except REQUEST_ERRORS as error:
        return CapabilityResult(
            accepted=False,
            rejected=False,
            http_status=None,
            request_id=request_id,
            latency_ms=(time.perf_counter() - start) * 1000,
            detail=_unanswered(url, error),
        )
    return _judged_response(response, request_id, (time.perf_counter() - start) * 1000, fixes=fixes)


def _unanswered(url: str, error: Exception) -> str:
    if isinstance(error, RequestDeadline):
        return (
            f"no complete answer from {url} within {error.timeout_s:g} s (--request-timeout), connecting to last "
            "byte; raise --request-timeout if the server is slow to answer its first video request"
        )
    if isinstance(error, (ResponseTooLarge, UnboundedEncoding, BadEncoding)):
        return f"the answer from {url} was refused: {error}"
    return f"no answer from {url}: {error}"


def _judged_response(response: BoundedResponse, request_id: str, latency: float, *, fixes: bool) -> CapabilityResult:
    """Accepted (a non-empty chat answer), rejected (a refusal of the content) or failed, from the response."""
    served_by = _kept_name(response.headers.get("x-served-by"))
    text = response.text[:_EXCERPT]
    if response.status_code != 200:
        fix = redirect_note(response) or (_FIXES.get(response.status_code) if fixes else None)
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
    body = read_chat_completion(response.content)
    raw = response.content if body.changed else None
    if body.malformed is not None:
        return CapabilityResult(
            accepted=False,
            rejected=False,
            http_status=200,
            request_id=request_id,
            latency_ms=latency,
            detail=f"not a chat completion ({body.malformed}): {text}",
            served_by=served_by,
            malformed=body.malformed,
            raw_bytes=raw,
        )
    # The fingerprint says more than the header (a test double says so there); keep whichever the server gave.
    served_by = _kept_name(body.fingerprint) or served_by
    named = body.body.get("model")
    answer = body.text
    ok = answer is not None and bool(answer.strip())
    return CapabilityResult(
        accepted=ok,
        rejected=False,
        http_status=200,
        request_id=request_id,
        latency_ms=latency,
        answer=_kept_answer(answer) if answer is not None else None,
        detail="answered" if ok else "HTTP 200 with an empty answer",
        served_by=served_by,
        model=kept_name(named) if isinstance(named, str) and named.strip() else None,
        response_fields=bounded_fields({k: v for k, v in body.body.items() if k not in _CHAT_FIELDS}),
        invalid_values=body.invalid_values,
        raw_bytes=raw,
    )


def _kept_name(text: str | None) -> str | None:
    if not text:
        return None
    return text if len(text) <= NAME_KEPT else text[: NAME_KEPT - 3] + "..."


def _kept_answer(answer: str) -> str:
    if len(answer) <= ANSWER_KEPT:
        return answer
    return answer[:ANSWER_KEPT] + f" [cut by trtmc-videoqa: {len(answer) - ANSWER_KEPT} more characters]"


def bounded_fields(fields: dict[str, object]) -> dict[str, object]:
    """A server's extra fields, in its order, while each is at most FIELD_KEPT bytes of JSON and all of them at most
    FIELDS_KEPT; the others are named (cut to NAME_KEPT characters, with their size) under DROPPED_KEY."""
    kept: dict[str, object] = {}
    dropped: list[str] = []
    total = 0
    for name, value in fields.items():
        size = len(json.dumps({name: value}, default=str))
        if size <= FIELD_KEPT and total + size <= FIELDS_KEPT and len(name) <= NAME_KEPT:
            kept[name] = value
            total += size
        else:
            dropped.append(f"{_kept_name(name)!r} ({size} bytes)")
    if dropped:
        shown = dropped[:20] + ([f"and {len(dropped) - 20} more"] if len(dropped) > 20 else [])
        kept[DROPPED_KEY] = f"over {FIELD_KEPT} bytes each or {FIELDS_KEPT} in all: " + ", ".join(shown)
    return kept


def setup_hint(status: int | None, text: str, url: str, listed: list[str] | None) -> str:
    """The fix for a text-only request refused too (the server's `text`): the model's name and what /v1/models
    lists, the URL's path, or the API key; `listed` is that list where it was read."""
    if status is None:
        return "no answer to it either: check that the server at --endpoint is up and answering"
    if status in (401, 403):
        return _FIXES[status]
    serves = (
        f"it lists {', '.join(repr(n) for n in listed)} at {MODELS_PATH}"
        if listed
        else (f"{MODELS_PATH} lists the names it serves")
    )
    if status is not None and 400 <= status < 500 and _MODEL_WORDS.search(text):
        return f"check --model: the server does not serve that name; {serves}"
    if status in (404, 405):
        return (
            f"check --endpoint, the server's base URL (no /v1 or {CHAT_PATH} at its end): the requests went to "
            f"{url.rstrip('/') + CHAT_PATH}; or check --model ({serves})"
        )
    if status is not None and status >= 500:
        return "the server failed on a plain text request too: its own log says why"
    return f"the server refuses this request whatever it carries: check --model ({serves}), --endpoint and the key"
