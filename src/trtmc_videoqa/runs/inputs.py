"""What a run is given, checked before anything runs (qualify and compare alike): its workloads (each clip a file
AIPerf sends), the server's API key, and that every clip's request body fits the body limit. Each refusal is a
UserError naming the option and the fix."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import media  # PyAV loads on first use of what needs it
from ..common.errors import BadInput
from ..plan.self_test import load_self_test_plan
from ..transports.table import body_limit_checked, over_body_limit_refused
from ..workloads import load_workload
from ..workloads.seal import aiperf_clip_problem

if TYPE_CHECKING:
    from ..plan.settings import RunSettings
    from ..workloads import Workload
    from .requests import RunRequest

# The model name in the body-size check when it is not known before the server runs (TRTMC: the served id).
LONGEST_MODEL_NAME = "m" * 128


def checked_run_inputs(
    request: RunRequest, *, self_test: bool, model: str
) -> tuple[list[Workload], str | None, list[str]]:
    """The workloads, the API key and notes for the plan; a WorkloadError or BadInput naming the input otherwise."""
    workloads = _workloads(request.settings.workload, self_test)
    _check_clip_formats(workloads)
    key = _api_key(request)
    return workloads, key, _check_bodies(workloads, request.settings, model)


def _workloads(workload: str | None, self_test: bool) -> list[Workload]:
    """The workloads to run; a file or name that cannot be used is a WorkloadError naming it and the fix."""
    names = [workload] if workload else (load_self_test_plan().workloads() if self_test else ["bigbuckbunny"])
    return [load_workload(name) for name in names]


def _check_clip_formats(workloads: list[Workload]) -> None:
    """Every clip is a file AIPerf 0.13.0 sends (mp4 or webm): refused here, before anything runs, rather than
    after a run in which AIPerf sent nothing."""
    for workload in workloads:
        for clip in workload.spec.clips:
            problem = aiperf_clip_problem(workload.clip_path(clip.id))
            if problem:
                raise BadInput(f"workload {workload.name!r}: clip {clip.id!r}: {problem}")


def _api_key(request: RunRequest) -> str | None:
    """The server's API key: from --api-key-file (its first line), else from the --api-key-env variable."""
    if request.settings.api_key_file is not None:
        try:
            text = request.settings.api_key_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or type(error).__name__
            raise BadInput(
                f"--api-key-file {request.settings.api_key_file} cannot be read ({reason}); "
                "give a readable file holding the key on its first line"
            ) from None
        key = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not key:
            raise BadInput(f"--api-key-file {request.settings.api_key_file} is empty; put the key on its first line")
        return key
    return os.environ.get(request.settings.api_key_env) or None


def _check_bodies(workloads: list[Workload], settings: RunSettings, model: str) -> list[str]:
    """With data URLs every clip's request body must fit the server's body limit: refused here, before anything is
    sent. An http URL carries no clip bytes, so `http` is not checked; `auto` tries data-url first and falls back to
    http, so a clip over the limit is a note on the plan (its data-url try is not sent), not a refusal."""
    notes: list[str] = []
    if not body_limit_checked(settings.video_transport):
        return notes
    for workload in workloads:
        max_tokens = settings.max_tokens or workload.spec.generation.max_tokens
        longest = max((p.text for p in workload.spec.prompts), key=len)
        for clip in workload.spec.clips:
            size = media.predicted_body_size(
                model,
                longest,
                clip.bytes,
                clip.mime,
                max_tokens=max_tokens,
                temperature=workload.spec.generation.temperature,
                extra=dict(workload.spec.generation.extra_body) or None,
            )
            try:
                media.check_body_limit(size, settings.body_limit, clip=workload.clip_path(clip.id))
            except media.ClipError as error:
                if not over_body_limit_refused(settings.video_transport):
                    notes.append(
                        f"workload {workload.name!r}: clip {clip.id!r} as a data URL would be a {size:,}-byte body, "
                        f"over --body-limit {settings.body_limit:,}: its data-url try is not sent, http is tried"
                    )
                    continue
                raise BadInput(
                    f"workload {workload.name!r}: {error} (the limit is --body-limit "
                    f"{settings.body_limit}: raise it together with the server's --max-body-bytes, "
                    "or send the clip by URL with --video-transport http)"
                ) from None
    return notes
