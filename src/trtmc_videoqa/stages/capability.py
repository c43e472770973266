"""The capability check tried over the video transports, and what a request carries by each.

The transports, the choices of --video-transport and what each choice tries are one table, results/transports.py.
Here: the routes and URLs of the run's loopback clip server (serving/clip_server.py), the video part of a chat body
and of AIPerf's rows by transport (a data URL, or the clip's URL on that server), and the check: one request per
transport the choice tries, in order, until one is accepted. The first accepted transport is the row's for the rest
of it (AIPerf, identity), and every try is evidence on the row.

When no transport is accepted, a refusal of the video content (a 4xx, see serving/capability.py) on any try makes
the stage `rejected` (the row `unsupported`); otherwise the stage `failed`, naming each transport tried and, where
the server's error was about the clip's URL or format, the transport to try instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..aiperf.dataset import Prompt
from ..common.atomic_write import write_bytes_atomic, write_model_atomic
from ..common.server_answers import parse_server_json
from ..results import StageResult, StageStatus, TransportAttempt, VideoTransport
from ..results.layout import CAPABILITY_FILE, raw_answer_file
from ..results.transports import CHOICES, TRANSPORTS
from .prompts import workload_prompts
from .protocol import Climb, RowJob, Stop, measuring, recorded, served

if TYPE_CHECKING:
    from ..plan.settings import RunSettings
    from ..serving.capability import CapabilityResult
    from ..serving.clip_server import ServedFile
    from ..workloads import Workload


def clip_route(workload: Workload, clip_id: str) -> str:
    """`/clips/<workload>/<clip id><suffix>`: both names are lowercase slugs by the workload schema."""
    return f"/clips/{workload.name}/{clip_id}{Path(workload.clip(clip_id).file).suffix}"


def clip_routes(workloads: Iterable[Workload]) -> dict[str, ServedFile]:
    """Every clip of every workload, by its URL path, with the MIME type the workload records for it."""
    from ..serving.clip_server import ServedFile  # here: only a run that serves its clips loads an http server

    return {
        clip_route(workload, clip.id): ServedFile(workload.clip_path(clip.id), clip.mime)
        for workload in workloads
        for clip in workload.spec.clips
    }


def clip_urls(base_url: str, workload: Workload) -> dict[str, str]:
    """Clip id -> the clip's URL on the clip server at `base_url`."""
    return {clip.id: base_url + clip_route(workload, clip.id) for clip in workload.spec.clips}


def chat_video_url(transport: VideoTransport, prompt: Prompt, urls: Mapping[str, str]) -> str:
    """What a chat body's video part carries: the clip as a data URL, or its http URL (ClipError, OSError)."""
    if TRANSPORTS[transport].by_url:
        if prompt.clip_id not in urls:
            raise ValueError(f"no clip server URL for clip {prompt.clip_id!r}: the {transport} transport needs one")
        return urls[prompt.clip_id]
    from ..media.payload import video_data_url  # PyAV comes with it

    return video_data_url(Path(prompt.clip_path))


def aiperf_videos(transport: VideoTransport, urls: Mapping[str, str]) -> dict[str, str]:
    """Clip id -> what AIPerf's `video` field carries instead of the clip's path: the http URLs, or nothing."""
    return dict(urls) if TRANSPORTS[transport].by_url else {}


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
    )
    outcome = check_over_transports(request, settings, row.row_dir)
    result.capability, result.transport_attempts = outcome.capability, outcome.attempts
    result.video_transport = outcome.transport
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
        outcome.capability = decisive.model_copy(update={"attempts": list(outcome.attempts)})
        write_model_atomic(row_dir / CAPABILITY_FILE, outcome.capability)
    outcome.stage = _stage(outcome, sent)
    return outcome


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
    from ..serving.capability import check_capability

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
            other = TRANSPORTS[refusal.video_transport].instead
            detail = (
                f"the server could not take the clip as {refusal.video_transport}: {attempt.detail}; this transport "
                f"failed, not video as such: try --video-transport {other} (or auto, which tries both)"
            )
    else:
        detail = f"every video transport failed (tried {tried}): " + "; ".join(
            f"{a.transport}: {a.detail}" for a in outcome.attempts
        )
    return StageResult(name="capability", status=status, detail=detail, wall_s=wall, evidence=evidence)


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
