"""The identity stage against live servers, for both ladders: the HTTP chat answers while the served bundle is up,
the native Task answers from its own route, then the comparison (identity_check.py holds the rules).

TRTMC mode asks trtmc-server's chat first and perf_serving's Task route after it, one server at a time on the GPU.
With `--endpoint` the native route is the one the user names (`--native-url`); without one, identity is
not-applicable, and every report says so.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...aiperf_qual.execution import EVIDENCE
from ...climb.prompts import workload_prompts
from ...climb.protocol import Climb, EndpointRow, Stop, measuring, recorded, served
from ...results import (
    IdentityAnswer,
    IdentityCheck,
    ResultRow,
    ServingMechanics,
    StageResult,
    VideoTransport,
)
from ...transports.clips import chat_video_url
from ...transports.table import FALLBACK_TRANSPORT, used_transport
from .verdict import identity_stage, not_applicable, write_identity

if TYPE_CHECKING:
    from ...plan.job import QualifyJob
    from ...results import NativeRequest
    from .video_request import FrameFiles

NO_NATIVE_URL = "no native route named for this server (give --native-url URL, in perf_serving's request shape)"


def max_tokens(job: QualifyJob) -> int:
    return job.settings.max_tokens or job.workload.spec.generation.max_tokens


def chat_side(
    job: QualifyJob, url: str, model: str, transport: VideoTransport = FALLBACK_TRANSPORT, *, row_dir: Path
) -> list[IdentityAnswer]:
    """Each (question, clip) of the workload once through HTTP chat, greedy, its clip carried by `transport` (the
    one the row's capability check accepted) and with the workload's extra body fields; an answer whose text had
    to be escaped is kept raw under `row_dir`'s private/ folder."""
    from .compare import chat_answers  # lazy: identity's comparison loads the inventory's schemas (NativeRequest)

    return chat_answers(
        url,
        model,
        workload_prompts(job.workload),
        max_tokens=max_tokens(job),
        timeout_s=job.settings.request_timeout_s,
        max_response_bytes=job.settings.max_response_bytes,
        body_limit=job.settings.body_limit,
        api_key=job.api_key,
        video_url=lambda prompt: chat_video_url(transport, prompt, job.clip_urls),
        extra=dict(job.workload.spec.generation.extra_body) or None,
        row_dir=row_dir,
    )


def native_side(
    job: QualifyJob, native_url: str, request: NativeRequest, frames: FrameFiles | None = None, *, row_dir: Path
) -> list[IdentityAnswer]:
    """The same pairs once through the native Task route, greedy, with only the fields the Task defines (a
    video-to-text Task's frames from `frames`); raw answers kept as `chat_side` keeps them."""
    from .compare import native_answers  # lazy: as chat_side's

    return native_answers(
        native_url,
        request,
        workload_prompts(job.workload),
        max_tokens=max_tokens(job),
        timeout_s=job.settings.request_timeout_s,
        max_response_bytes=job.settings.max_response_bytes,
        frames=frames,
        row_dir=row_dir,
        body_limit=job.settings.body_limit,
    )


def compared(
    job: QualifyJob, chat: list[IdentityAnswer], native: list[IdentityAnswer], route: str, request: NativeRequest
) -> IdentityCheck:
    from .compare import compare  # lazy: as chat_side's

    return compare(workload_prompts(job.workload), chat, native, native_route=route, request=request)


def identity_written(row_dir: Path, check: IdentityCheck) -> StageResult:
    """identity.json written; the stage it makes."""
    write_identity(row_dir, check)
    return identity_stage(check)


def endpoint_mechanics(row: ResultRow, native_url: str | None) -> ServingMechanics:
    """What served a row measured off TRTMC: no TRTMC serving mechanics, named as such."""
    if row.reference_self_test:
        server = "the reference endpoint (a test double, not TRTMC)"
    elif row.comparison is not None:
        server = f"{row.comparison.server} (a comparison, not TRTMC)"
    else:
        server = "the server at --endpoint (not started by this tool)"
    native = f"none: {NO_NATIVE_URL}"
    if native_url:
        where = server if row.reference_self_test else "the --native-url server"
        native = f"{where} POST /v1/tasks/generate (perf_serving's request shape)"
    return ServingMechanics(
        chat=f"{server} POST /v1/chat/completions; its task time where it reports one (task_time_field)",
        native=native,
        evidence=EVIDENCE,
    )


def endpoint_identity_stage(row: EndpointRow, climb: Climb) -> Climb | Stop:
    """The `identity` stage of an endpoint row: against the native route the user named, else not-applicable;
    identity.json written."""
    climb, result = measuring(climb)
    target = served(climb)
    transport = used_transport(result.video_transport)
    check = endpoint_identity(
        row.job, url=target.url, model=target.model, native_url=row.native_url, transport=transport, row_dir=row.row_dir
    )
    climb = replace(climb, row=climb.row.model_copy(update={"identity": check}))
    return recorded(climb, result, identity_written(row.row_dir, check), stops=False)


def endpoint_identity(
    job: QualifyJob,
    *,
    url: str,
    model: str,
    native_url: str | None,
    transport: VideoTransport = FALLBACK_TRANSPORT,
    row_dir: Path,
) -> IdentityCheck:
    """A server we did not build: identity against the native route the user named, else not-applicable (the
    clients and the native request's reader are not loaded for that)."""
    from .compare import ENDPOINT_NATIVE_REQUEST  # lazy: as chat_side's

    if not native_url:
        return not_applicable(NO_NATIVE_URL)

    job.progress("identity: each question and clip once through chat and once through the native route")
    chat = chat_side(job, url, model, transport, row_dir=row_dir)
    native = native_side(job, native_url, ENDPOINT_NATIVE_REQUEST, row_dir=row_dir)
    route = f"POST /v1/tasks/{ENDPOINT_NATIVE_REQUEST.operation} (the --native-url server)"
    return compared(job, chat, native, route, ENDPOINT_NATIVE_REQUEST)
