"""Native/HTTP identity on the same served bundle: the rules, the two clients, the comparison and its stage.

Each (question, clip) pair of the workload goes once through HTTP chat (``POST /v1/chat/completions``, the body
AIPerf sends) and once through the native Task route (``POST /v1/tasks/<operation>``), both greedy: temperature
0 and the run's max_tokens. The two answers must be the same text after whitespace collapse and case folding.

The native body is ``{"request": {...}}`` holding only fields the Task's native request defines: the clip field
as ``{"$file": {"suffix": ".mp4", "b64": <the clip's bytes>}}``, the prompt field as the question, and
``max_new_tokens`` / ``temperature`` (0) / ``top_k`` (1) where defined. Nothing else is sent. A Task whose request
carries a clip's frames (a video-to-text Task) is sent in its own shape instead (video_request.py).

A server we did not build (``--endpoint``) has no task adapter to read: with ``--native-url`` its native route
is taken to have perf_serving's request shape, ``ENDPOINT_NATIVE_REQUEST`` (``prompt``, ``video_path``,
``max_new_tokens``, ``temperature`` on ``POST /v1/tasks/generate``).

Both clients read each answer under ``--max-response-bytes`` (decoded) and ``--request-timeout`` for the whole
request, and never follow a redirect (serving/bounded_http.py). Each body is read through a typed, tolerant model
(answers/shapes.py): a body of another shape is the pair's named error, and an answer whose text had to be
escaped (a lone surrogate) keeps its raw bytes under the row's private/ folder.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from ...aiperf.dataset import Prompt
from ...aiperf_qual.execution import request_sha
from ...answers.shapes import ChatAnswer, NativeAnswer, read_chat_completion, read_native_answer
from ...common.atomic_write import write_bytes_atomic
from ...media.errors import ClipError
from ...media.payload import chat_request_body, check_body_limit, encode_body, video_data_url
from ...results import IdentityAnswer, IdentityCheck, IdentityPair, IdentityVerdict, NativeRequest
from ...results.layout import raw_answer_file
from ...serving.bounded_http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    BadEncoding,
    BoundedClient,
    RequestDeadline,
    RequestFailed,
    ResponseTooLarge,
    UnboundedEncoding,
    redirect_note,
)
from .video_request import FrameFiles, template_problem, video_task_body

CHAT_PATH = "/v1/chat/completions"
CHAT_ROUTE = f"POST {CHAT_PATH}"
ENDPOINT_NATIVE_REQUEST = NativeRequest(
    operation="generate",
    fields=["max_new_tokens", "prompt", "temperature", "video_path"],
    clip_field="video_path",
    prompt_field="prompt",
    evidence=None,
)
ENDPOINT_REQUEST_SOURCE = "perf_serving's request shape, taken for the --native-url server (no task adapter to read)"
_EXCERPT = 200
_REQUEST_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._:-]")
_REDACTED = "<redacted>"


def normalised(text: str) -> str:
    """Whitespace collapsed, case folded: the form two answers are compared in."""
    return " ".join(text.split()).casefold()


def request_id(kind: str, prompt: Prompt) -> str:
    """``<kind>-<question>-<clip>-<8 hex>`` (kind: ``identity-chat``, ``identity-native``, ``capability-native``),
    only ``[A-Za-z0-9._:-]``."""
    raw = f"{kind}-{prompt.question_id[:60]}-{prompt.clip_id[:60]}-{uuid.uuid4().hex[:8]}"
    return _REQUEST_ID_UNSAFE.sub("_", raw)


def _shown_url(url: str) -> str:
    """The URL without any user:password part."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("@")[-1]
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _hidden(text: str, secret: str | None) -> str:
    return text.replace(secret, _REDACTED) if secret else text


# --- the two sides ---------------------------------------------------------------------------------------------


def chat_answers(
    url: str,
    model: str,
    prompts: list[Prompt],
    *,
    max_tokens: int,
    timeout_s: float,
    body_limit: int,
    api_key: str | None,
    video_url: Callable[[Prompt], str] | None = None,
    extra: dict[str, Any] | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    row_dir: Path | None = None,
) -> list[IdentityAnswer]:
    """Each prompt once through ``POST {url}/v1/chat/completions``, greedy; failures recorded, never raised.

    `video_url` gives what each prompt's video part carries (default: its clip as a data URL, the transport the
    row's capability check accepted decides); `extra` the workload's extra body fields. Each answer is read under
    `max_response_bytes` (decoded) and `timeout_s` for the whole request; one whose text had to be escaped is kept
    raw under `row_dir`'s private/ folder."""
    endpoint = url.rstrip("/") + CHAT_PATH
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    answers: list[IdentityAnswer] = []
    client = BoundedClient(timeout_s=timeout_s, max_response_bytes=max_response_bytes)
    for prompt in prompts:
        rid = request_id("identity-chat", prompt)
        answer = IdentityAnswer(route=CHAT_ROUTE, url=_shown_url(endpoint), request_id=rid)
        try:
            clip = Path(prompt.clip_path)
            video = video_url(prompt) if video_url is not None else video_data_url(clip)
            body = chat_request_body(model, prompt.text, video, max_tokens=max_tokens, extra=extra)
            content = encode_body(body)
            check_body_limit(len(content), body_limit, clip=clip)
        except (ClipError, OSError, ValueError) as error:
            answers.append(answer.model_copy(update={"error": _hidden(f"not sent: {error}", api_key)}))
            continue
        sent = _posted(client, endpoint, content, headers | {"X-Request-ID": rid}, read_chat_completion)
        answers.append(_with_outcome(answer, sent, api_key, row_dir))
    return answers


def native_body(
    request: NativeRequest,
    prompt: Prompt,
    *,
    max_tokens: int,
    frames: FrameFiles | None = None,
    body_limit: int | None = None,
) -> dict[str, Any]:
    """``{"request": {...}}`` with only the fields the Task's native request defines (ClipError/OSError on the clip);
    a request that carries a clip's frames, in its own shape, with the frames `frames` decoded (a ValueError where
    they alone pass `body_limit`)."""
    # The audit's request reader, loaded where a native body is made (a chat-only run never loads it).
    from ...inventory.task_requests import GREEDY_FIELDS, TOKEN_LIMIT_FIELD

    if request.template is not None:
        if frames is None:  # a wiring error, told as the pair's error rather than a body without its clip
            raise ValueError("a video Task's request carries the clip's frames, and none were given")
        return video_task_body(request, prompt, frames.of(prompt), max_tokens=max_tokens, body_limit=body_limit)
    fields = set(request.fields)
    values: dict[str, Any] = {}
    if request.clip_field is not None:
        clip = Path(prompt.clip_path)
        from ...media.source import read_clip_bytes  # PyAV comes with it

        data = base64.b64encode(read_clip_bytes(clip)).decode("ascii")
        values[request.clip_field] = {"$file": {"suffix": clip.suffix, "b64": data}}
    if request.prompt_field is not None:
        values[request.prompt_field] = prompt.text
    if TOKEN_LIMIT_FIELD in fields:
        values[TOKEN_LIMIT_FIELD] = max_tokens
    values.update({name: value for name, value in GREEDY_FIELDS.items() if name in fields})
    return {"request": values}


def sent_fields(request: NativeRequest) -> list[str]:
    """The native request fields the identity check sends (the rest of the Task's fields are left out)."""
    # The audit's request reader, loaded where a native body is made (a chat-only run never loads it).
    from ...inventory.task_requests import GREEDY_FIELDS, TOKEN_LIMIT_FIELD

    if isinstance(request.template, dict):
        return sorted(request.template)
    fields = set(request.fields)
    named = {request.clip_field, request.prompt_field} - {None}
    filled = {name for name in (TOKEN_LIMIT_FIELD, *GREEDY_FIELDS) if name in fields}
    return sorted({name for name in named if name is not None} | filled)


def native_answers(
    native_url: str,
    request: NativeRequest,
    prompts: list[Prompt],
    *,
    max_tokens: int,
    timeout_s: float,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    frames: FrameFiles | None = None,
    kind: str = "identity-native",
    row_dir: Path | None = None,
    body_limit: int | None = None,
) -> list[IdentityAnswer]:
    """Each prompt once through ``POST {native_url}/v1/tasks/<operation>``; failures recorded, never raised (each
    answer read under `max_response_bytes`, decoded, and `timeout_s` for the whole request, and kept raw under
    `row_dir`'s private/ folder where its text had to be escaped; a request carrying frames takes them from
    `frames`, each clip decoded once; `kind` begins the request ids; a body over `body_limit`, the server's
    --max-body-bytes, is not sent, and says so)."""
    path = f"/v1/tasks/{request.operation}"
    endpoint = native_url.rstrip("/") + path
    answers: list[IdentityAnswer] = []
    client = BoundedClient(timeout_s=timeout_s, max_response_bytes=max_response_bytes)
    for prompt in prompts:
        rid = request_id(kind, prompt)
        answer = IdentityAnswer(route=f"POST {path}", url=_shown_url(endpoint), request_id=rid)
        try:
            body = native_body(request, prompt, max_tokens=max_tokens, frames=frames, body_limit=body_limit)
            content = encode_body(body)
            if body_limit is not None and len(content) > body_limit:
                raise ValueError(
                    f"its body is {len(content):,} bytes, over --body-limit {body_limit:,}: raise it together "
                    "with the server's --max-body-bytes"
                )
        except (ClipError, OSError, ValueError) as error:
            answers.append(answer.model_copy(update={"error": f"not sent: {error}"}))
            continue
        answer = answer.model_copy(update={"request_sha": request_sha(body)})
        headers = {"Content-Type": "application/json", "X-Request-ID": rid}
        sent = _posted(client, endpoint, content, headers, read_native_answer)
        answers.append(_with_outcome(answer, sent, None, row_dir))
    return answers


@dataclass(frozen=True)
class _Outcome:
    status: int | None
    answer: str | None = None
    error: str | None = None
    raw: bytes | None = None  # the body as it came, where the answer written differs (a lone surrogate escaped)


def _posted(
    client: BoundedClient,
    url: str,
    content: bytes,
    headers: dict[str, str],
    read: Callable[[bytes], ChatAnswer | NativeAnswer],
) -> _Outcome:
    try:
        response = client.post(url, content=content, headers=headers)
    except RequestDeadline as error:
        return _Outcome(None, error=f"no answer: {error}")
    except (ResponseTooLarge, UnboundedEncoding, BadEncoding) as error:
        return _Outcome(None, error=f"answer refused: {error}")
    except RequestFailed as error:
        return _Outcome(None, error=f"no answer: {error}")
    if response.status_code != 200:
        note = f" ({redirect_note(response)})" if redirect_note(response) else ""
        return _Outcome(response.status_code, error=f"HTTP {response.status_code}: {response.text[:_EXCERPT]}{note}")
    body = read(response.content)  # typed and tolerant: a body of another shape is named, never raised
    raw = response.content if body.changed else None
    if body.malformed is not None:
        malformed = f"HTTP 200 with a malformed answer ({body.malformed}): {response.text[:_EXCERPT]}"
        return _Outcome(200, error=malformed, raw=raw)
    if body.text is None:
        return _Outcome(200, error=f"HTTP 200 without an answer text: {response.text[:_EXCERPT]}", raw=raw)
    return _Outcome(200, answer=body.text, raw=raw)


def _with_outcome(
    answer: IdentityAnswer, outcome: _Outcome, secret: str | None, row_dir: Path | None
) -> IdentityAnswer:
    shown_error = _hidden(outcome.error, secret) if outcome.error is not None else None
    kept = None
    if outcome.raw is not None and row_dir is not None:
        kept = raw_answer_file(answer.request_id)
        write_bytes_atomic(row_dir / kept, outcome.raw)
    update = {"http_status": outcome.status, "answer": outcome.answer, "error": shown_error, "raw_answer": kept}
    return answer.model_copy(update=update)


# --- the comparison --------------------------------------------------------------------------------------------


def _missing(route: str) -> IdentityAnswer:
    return IdentityAnswer(route=route, request_id="-", error="no answer recorded for this pair")


PairVerdict = Literal["same", "different", "error"]


def _pair_verdict(chat: IdentityAnswer, native: IdentityAnswer) -> PairVerdict:
    if chat.error is not None or native.error is not None or chat.answer is None or native.answer is None:
        return "error"
    return "same" if normalised(chat.answer) == normalised(native.answer) else "different"


def _error_of(pair: IdentityPair) -> str:
    side = pair.chat if pair.chat.error is not None or pair.chat.answer is None else pair.native
    return f"{pair.question_id} on {pair.clip_id}: {side.route}: {side.error or 'no answer'}"


def request_source(request: NativeRequest) -> str:
    evidence = request.evidence
    if evidence is None:
        return ENDPOINT_REQUEST_SOURCE
    return evidence.file if evidence.line is None else f"{evidence.file}:{evidence.line}"


def _overall(pairs: list[IdentityPair]) -> tuple[IdentityVerdict, str]:
    total = len(pairs)
    differing = sum(pair.verdict == "different" for pair in pairs)
    errors = [pair for pair in pairs if pair.verdict == "error"]
    if total == 0:
        return "failed", "no (question, clip) pairs to compare"
    if errors:
        reason = f"{len(errors)} of {total} pairs got no comparable answer; first: {_error_of(errors[0])}"
        return "failed", reason + (f" ({differing} of {total} differ)" if differing else "")
    if differing:
        return "differs", f"{differing} of {total} pairs differ between HTTP chat and the native route"
    return "held", f"all {total} pairs answered the same through HTTP chat and the native route"


def compare(
    prompts: list[Prompt],
    chat: list[IdentityAnswer],
    native: list[IdentityAnswer],
    *,
    native_route: str,
    request: NativeRequest,
) -> IdentityCheck:
    """Per pair same/different/error; held when all are the same, failed on any error, else differs."""
    pairs: list[IdentityPair] = []
    for index, prompt in enumerate(prompts):
        left = chat[index] if index < len(chat) else _missing(CHAT_ROUTE)
        right = native[index] if index < len(native) else _missing(native_route)
        pairs.append(
            IdentityPair(
                question_id=prompt.question_id,
                clip_id=prompt.clip_id,
                chat=left,
                native=right,
                verdict=_pair_verdict(left, right),
            )
        )
    verdict, reason = _overall(pairs)
    return IdentityCheck(
        verdict=verdict,
        reason=reason,
        native_route=native_route,
        request_fields=sent_fields(request),
        request_source=request_source(request),
        pairs=pairs,
    )


def clip_request_problem(request: NativeRequest | None) -> str | None:
    """Why this Task's native request cannot carry a clip and a question; None when it has both."""
    if request is None:
        return "the checkout's task adapter builds no native request for this Task"
    from ...inventory.task_requests import task_of

    task = task_of(request)
    named = f"the Task {task}" if task else "the Task"
    where = request_source(request)
    if request.template is not None:
        problem = template_problem(request)
        return None if problem is None else f"{named}'s native request cannot be sent: {problem} ({where})"
    if request.clip_field is not None and request.prompt_field is not None:
        return None
    fields = ", ".join(request.fields) or "none"
    return f"{named} defines no clip-plus-question native request (fields: {fields}; {where})"
