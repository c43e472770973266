"""The `capability` stage of a TRTMC row: one video request through trtmc-server's chat first; where chat refuses
the video and the row's Task is a video-to-text Task whose native request the checkout defines, one request in the
Task's own shape through perf_serving's Task route, the only route left.

TRTMC's trtmc-server may take no video in chat while a family answers video questions through its Task. Then the
native answer is the capability's evidence (`capability-native.json`), and the row stops `blocked` at `aiperf`:
AIPerf speaks OpenAI chat, which refused the video, so nothing can measure the Task the way this tool measures.
A chat route that accepts the video, or a Task with no native video request, is the plain capability stage.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..climb.prompts import workload_prompts
from ..climb.protocol import Climb, Stop, built, recorded
from ..common.atomic_write import write_model_atomic
from ..results import IdentityAnswer, NativeCapability, StageResult
from ..results.layout import CAPABILITY_FILE, NATIVE_CAPABILITY_FILE
from ..serving.process import ServerProblem
from ..trtmc.commands import perf_serving_problem
from .capability import capability
from .identity.compare import clip_request_problem, native_answers, request_source
from .identity.live import max_tokens
from .identity.trtmc_native import NativeRoute

if TYPE_CHECKING:
    from ..climb.checkpoint import Checkpoint
    from .identity.trtmc_native import NativeRoute

AIPERF_UNREACHABLE = (
    "AIPerf speaks OpenAI chat, and trtmc-server's chat refused the video ({chat}); this Task answers only through "
    f"perf_serving's native Task route ({NATIVE_CAPABILITY_FILE}), which AIPerf does not reach"
)


def trtmc_capability(cp: Checkpoint, climb: Climb) -> Climb | Stop:
    """The capability stage; after a chat refusal of the video, the Task's native route where it is the only one."""
    outcome = capability(cp, climb)
    request = cp.entry.native_request
    if not isinstance(outcome, Stop) or outcome.stage.status != "rejected" or request is None:
        return outcome

    if request.template is None or perf_serving_problem(cp.toolchain, cp.checkout) or clip_request_problem(request):
        return outcome  # no video Task route to try: the refusal stands as it is
    return _native_only(cp, outcome)


def _native_only(cp: Checkpoint, refused: Stop) -> Stop:

    climb = refused.at
    assert climb.measurement is not None and cp.entry.native_request is not None
    cp.resources.close()  # trtmc-server stops: perf_serving takes the GPU
    native = NativeRoute(cp, built(climb))
    cp.progress(f"capability check: chat refused the video; one request through the native route ({native.route})")
    answer = _one_native_answer(cp, native)
    evidence = NativeCapability(
        chat_refusal=refused.stage.detail,
        native_route=native.route,
        request_source=request_source(cp.entry.native_request),
        answer=answer,
        sampling=native.sampling(),
        clips=native.frames.sent() if native.frames is not None else [],
    )
    write_model_atomic(cp.row_dir / NATIVE_CAPABILITY_FILE, evidence)
    climb = replace(climb, commands=climb.commands | native.commands)
    measurement = climb.measurement
    assert measurement is not None
    measurement.stages.pop()  # the chat refusal, told again below with the native route's outcome
    files = [CAPABILITY_FILE, NATIVE_CAPABILITY_FILE]
    if answer.error is not None or answer.answer is None:
        detail = f"{refused.stage.detail}; the native Task route was tried too ({native.route}): {answer.error}"
        still = refused.stage.model_copy(update={"detail": detail, "evidence": files})
        return _stopped(recorded(climb, measurement, still, stops=True))
    shown = repr(answer.answer[:200])
    passed = StageResult(
        name="capability",
        status="passed",
        detail=f"answered through the native Task route only ({native.route}): {shown}; chat refused the video",
        wall_s=refused.stage.wall_s,
        evidence=files,
    )
    measurement.stages.append(passed)
    blocked = StageResult(
        name="aiperf", status="blocked", detail=AIPERF_UNREACHABLE.format(chat=CAPABILITY_FILE), evidence=files
    )
    return _stopped(recorded(climb, measurement, blocked, stops=True))


def _stopped(end: Climb | Stop) -> Stop:
    assert isinstance(end, Stop), "recorded(..., stops=True) ends the row"
    return end


def _one_native_answer(cp: Checkpoint, native: NativeRoute) -> IdentityAnswer:
    """The workload's first (question, clip) once through the native route, as the chat capability check asks it."""

    request = native.request
    try:
        with native.process():
            (answer,) = native_answers(
                native.url,
                request,
                workload_prompts(cp.job.workload)[:1],
                max_tokens=max_tokens(cp.job),
                timeout_s=cp.job.settings.request_timeout_s,
                max_response_bytes=cp.job.settings.max_response_bytes,
                frames=native.frames,
                kind="capability-native",
                row_dir=cp.row_dir,
                body_limit=cp.job.settings.body_limit,
            )
    except ServerProblem as error:
        return IdentityAnswer(route=f"POST /v1/tasks/{request.operation}", request_id="-", error=f"{error}")
    return answer
