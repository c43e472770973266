"""The capability check tried over the video transports.

The transports, the choices of --video-transport and what each choice tries are one table, transports/table.py;
what carries a clip by each (a data URL, or the clip's URL on the run's clip server) is transports/clips.py. Here:
the check, one request per transport the choice tries, in order, until one is accepted. The first accepted
transport is the row's for the rest of it (AIPerf, identity), and every try is evidence on the row.

When no transport is accepted, a refusal of the video content (a 4xx, see serving/capability.py) on any try is
followed by one text-only request to the same model with the same key: answered, the stage is `rejected` (the row
`unsupported`, both answers its evidence); refused too, the stage `failed` with the server's words and the fix (a
setup error, not a capability gap). Otherwise the stage `failed`, naming each transport tried and, where the
server's error was about the clip's URL or format, a transport to try instead that the server has not refused.

Whatever answered, the model it named is compared with --model (serving/served_model.py): another model fails the
stage, naming both; the names are on capability.json and on the row (`served_model`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..aiperf.dataset import Prompt
from ..climb.prompts import workload_prompts
from ..climb.protocol import Climb, RowJob, Stop, measuring, recorded, served
from ..common.atomic_write import write_bytes_atomic, write_model_atomic
from ..common.progress import silent
from ..common.server_json import parse_server_json
from ..results import ServedModel, StageResult, StageStatus, TransportAttempt, VideoTransport
from ..results.layout import CAPABILITY_FILE, raw_answer_file
from ..serving.capability import TRANSPORT_WORDS, check_capability, check_text_only, setup_hint
from ..serving.served_model import judge_served_model, listed_models, same_model
from ..transports.clips import chat_video_url
from ..transports.table import CHOICES, TRANSPORTS

if TYPE_CHECKING:
    from ..plan.settings import RunSettings
    from ..serving.capability import CapabilityResult


@dataclass
class CapabilityOutcome:
    stage: StageResult
    capability: CapabilityResult | None = None  # the accepted try, else the last one answered
    transport: VideoTransport | None = None  # the accepted one
    attempts: list[TransportAttempt] = field(default_factory=list)


@dataclass(frozen=True)
class CapabilityRequest:
    """The one clip-plus-question request of the capability check, whatever carries the clip."""

    url: str
    model: str
    api_key: str | None
    prompt: Prompt
    max_tokens: int
    extra_body: dict[str, Any]
    clip_urls: dict[str, str]
    progress: Callable[[str], None] = silent


def capability(row: RowJob, climb: Climb) -> Climb | Stop:
    """The `capability` stage: one real clip-plus-question request per transport tried, before any measurement; a
    4xx refusal of the content is evidence of a missing capability (`rejected`), a server error about the clip's
    URL or format a transport that failed. The row stops unless one transport was accepted."""
    climb, result = measuring(climb)
    target, job = served(climb), row.job
    workload, settings = job.workload, job.settings
    row.progress(f"capability check: one video request ({settings.video_transport})")
    request = CapabilityRequest(
        url=target.url,
        model=target.model,
        api_key=job.api_key,
        prompt=workload_prompts(workload)[0],
        max_tokens=settings.max_tokens or workload.spec.generation.max_tokens,
        extra_body=dict(workload.spec.generation.extra_body),
        clip_urls=dict(job.clip_urls),
        progress=row.progress,
    )
    outcome = check_over_transports(request, settings, row.row_dir)
    result.capability, result.transport_attempts = outcome.capability, outcome.attempts
    result.video_transport = outcome.transport
    served_model = outcome.capability.served_model if outcome.capability else None
    climb = replace(climb, row=climb.row.model_copy(update={"served_model": served_model}))
    return recorded(climb, result, outcome.stage, stops=outcome.stage.status != "passed")


def check_over_transports(request: CapabilityRequest, settings: RunSettings, row_dir: Path) -> CapabilityOutcome:
    """The capability check with each transport `settings.video_transport` allows, in order, until one is
    accepted; capability.json holds the decisive try and every attempt."""
    outcome = CapabilityOutcome(stage=StageResult(name="capability", status="failed"))
    sent: list[CapabilityResult] = []
    for transport in CHOICES[settings.video_transport].tries:
        result, not_sent = _try(request, transport, settings)
        if result is None:
            outcome.attempts.append(TransportAttempt(transport=transport, accepted=False, detail=not_sent))
            continue
        sent.append(result)
        outcome.attempts.append(
            TransportAttempt(
                transport=transport, http_status=result.http_status, accepted=result.accepted, detail=result.detail
            )
        )
        if result.accepted:
            outcome.transport = transport
            break
    sent = [_raw_kept(result, row_dir) for result in sent]
    if sent:
        decisive = next((r for r in sent if r.accepted), sent[-1])
        text_only = None
        if outcome.transport is None and any(r.rejected for r in sent):  # the video refused: is it the video?
            request.progress("capability check: the video was refused; one plain text request to the same model")
            text_only = _raw_kept(_text_only(request, settings), row_dir)
        served_model = _served_model(request, [*sent, *([text_only] if text_only else [])], text_only)
        update = {"attempts": list(outcome.attempts), "served_model": served_model, "text_only": text_only}
        outcome.capability = decisive.model_copy(update=update)
        write_model_atomic(row_dir / CAPABILITY_FILE, outcome.capability)
    outcome.stage = _setup_problem(request, outcome, sent) or _stage(outcome, sent)
    return outcome


def _answered(result: CapabilityResult) -> bool:
    """The server took the request: a chat completion came back (an empty answer still took it)."""
    return result.http_status == 200 and result.malformed is None


def _text_only(request: CapabilityRequest, settings: RunSettings) -> CapabilityResult:

    return check_text_only(
        request.url,
        request.model,
        timeout_s=settings.request_timeout_s,
        api_key=request.api_key,
        max_response_bytes=settings.max_response_bytes,
    )


def _served_model(
    request: CapabilityRequest, results: list[CapabilityResult], text_only: CapabilityResult | None
) -> ServedModel | None:
    """The names the answers gave beside --model; GET /v1/models asked only where they do not settle it (no name,
    another name) or a plain text request was refused too (its list is the hint). None: nothing answered."""

    text_refused = text_only is not None and not _answered(text_only)
    answers = [r for r in results if _answered(r)]
    if not answers and not text_refused:
        return None
    cwd = Path.cwd()
    names = [r.model for r in answers if r.model]
    listed, note = None, None
    if text_refused or not names or not all(same_model(request.model, name, cwd) for name in names):
        listed, note = listed_models(request.url, api_key=request.api_key)
    return judge_served_model(request.model, names, listed, note, cwd=cwd)


def _setup_problem(
    request: CapabilityRequest, outcome: CapabilityOutcome, sent: list[CapabilityResult]
) -> StageResult | None:
    """The stage `failed` where the setup is wrong, whatever the video's fate: a plain text request refused as the
    video was, or answers that name another model than --model. None: no such problem."""

    capability = outcome.capability
    if capability is None:
        return None
    served, text = capability.served_model, capability.text_only
    listed = served.listed if served else None
    wall = sum(r.latency_ms for r in [*sent, *([text] if text else [])]) / 1000
    if text is not None and not _answered(text):
        video = outcome.attempts[-1]
        detail = (
            f"a plain text request to this model was refused too, so the video is not what the server refused: "
            f"{text.detail}; {setup_hint(text.http_status, text.detail, request.url, listed)} (the video request, "
            f"as {video.transport}: {_short(video)})"
        )
        return StageResult(name="capability", status="failed", detail=detail, wall_s=wall, evidence=[CAPABILITY_FILE])
    if served is not None and served.verdict == "differs":
        detail = (
            f"the server serves another model than --model {served.asked!r}: {served.detail}; name the model it "
            f"serves with --model, or start the server on {served.asked!r} (GET /v1/models lists what it serves)"
        )
        return StageResult(name="capability", status="failed", detail=detail, wall_s=wall, evidence=[CAPABILITY_FILE])
    return None


def _raw_kept(result: CapabilityResult, row_dir: Path) -> CapabilityResult:
    """The result, its body's raw bytes kept under the row's private/ folder where what capability.json holds of it
    differs from what the server sent (a lone surrogate escaped, a number no JSON reader holds)."""
    if result.raw_bytes is None:
        return result
    kept = raw_answer_file(result.request_id)
    write_bytes_atomic(row_dir / kept, result.raw_bytes)
    return result.model_copy(update={"raw_answer": kept, "raw_bytes": None})


def _try(
    request: CapabilityRequest, transport: VideoTransport, settings: RunSettings
) -> tuple[CapabilityResult | None, str]:
    """One try: its result, or None and why it was not sent (the clip unreadable, the body over the limit)."""
    from ..media import ClipError

    try:
        result = check_capability(
            request.url,
            request.model,
            Path(request.prompt.clip_path),
            request.prompt.text,
            max_tokens=request.max_tokens,
            timeout_s=settings.request_timeout_s,  # one request, like every other: --request-timeout names it
            max_response_bytes=settings.max_response_bytes,
            body_limit=settings.body_limit,
            api_key=request.api_key,
            video_url=chat_video_url(transport, request.prompt, request.clip_urls),
            extra=request.extra_body or None,
        )
    except (ClipError, OSError, ValueError) as error:
        return None, f"not sent: {error}"
    return result.model_copy(update={"video_transport": transport}), ""


def _stage(outcome: CapabilityOutcome, sent: list[CapabilityResult]) -> StageResult:
    tried = ", ".join(a.transport for a in outcome.attempts)
    evidence = [CAPABILITY_FILE] if sent else []
    wall = sum(r.latency_ms for r in sent) / 1000 if sent else None
    if outcome.transport is not None and outcome.capability is not None:
        refused = [a for a in outcome.attempts if not a.accepted]
        before = "".join(f"; {a.transport} refused first: {_short(a)}" for a in refused)
        answer = outcome.capability.answer or ""
        shown = repr(answer if len(answer) <= 200 else answer[:200] + "...")  # the whole answer: capability.json
        detail = f"answered: {shown} (video as {outcome.transport}{before})"
        return StageResult(name="capability", status="passed", detail=detail, wall_s=wall, evidence=evidence)
    status: StageStatus = "rejected" if any(r.rejected for r in sent) else "failed"
    if len(outcome.attempts) == 1:
        attempt = outcome.attempts[0]
        detail = f"{attempt.detail} (video as {attempt.transport})"
        refusal = next((r for r in sent if r.transport_refused), None)
        if refusal is not None and refusal.video_transport is not None:
            detail = _transport_advice(refusal.video_transport, attempt, outcome.attempts)
    else:
        detail = f"every video transport failed (tried {tried}): " + "; ".join(
            f"{a.transport}: {a.detail}" for a in outcome.attempts
        )
    text = outcome.capability.text_only if outcome.capability else None
    if status == "rejected" and text is not None:
        detail += (
            f"; a plain text request to the same model was answered (HTTP {text.http_status}), so the server "
            "refused the video itself"
        )
    return StageResult(name="capability", status=status, detail=detail, wall_s=wall, evidence=evidence)


def _transport_advice(tried: VideoTransport, attempt: TransportAttempt, attempts: list[TransportAttempt]) -> str:
    """A server error on the video request, in the server's words, and a transport to try instead only where its
    words are about the clip's URL or format (or a bare 500 to a clip in the body, as servers that fetch only URLs
    answer one) and the server has not already refused that transport."""

    other = TRANSPORTS[tried].instead
    refused = {a.transport for a in attempts if not a.accepted}
    about_transport = bool(TRANSPORT_WORDS.search(_message_of(attempt.detail)))
    bare_to_body = not about_transport and TRANSPORTS[other].by_url and not TRANSPORTS[tried].by_url
    if other in refused or not (about_transport or bare_to_body):
        return (
            f"the server failed on the video request (video as {tried}): {attempt.detail}; its own log says why "
            "(a server this run started logs in a private/ folder under --out)"
        )
    return (
        f"the server could not take the clip as {tried}: {attempt.detail}; this transport failed, not video as "
        f"such: try --video-transport {other} (or auto, which tries both)"
    )


def _short(attempt: TransportAttempt) -> str:
    """`HTTP 500 (the server's own message)`: the message out of an OpenAI-style error body where there is one."""
    status = f"HTTP {attempt.http_status}" if attempt.http_status is not None else "not sent"
    text = attempt.detail.removeprefix(f"HTTP {attempt.http_status}: ") if attempt.http_status else attempt.detail
    return f"{status} ({' '.join(_message_of(text).split())[:160]})"


def _message_of(text: str) -> str:
    body = parse_server_json(text).value  # None where it is no JSON; its text escaped where it is
    error = body.get("error") if isinstance(body, dict) else None
    for holder, key in ((error, "message"), (body, "detail"), (body, "message")):
        if isinstance(holder, dict) and isinstance(holder.get(key), str):
            return str(holder[key])
    return text
