"""The native side of a TRTMC row's identity check: perf_serving on the same bundle file with its own worker, asked
each (question, clip) with the request fields the checkout's task adapter defines for the row's Task (a video-to-text
Task in its own shape: video_request.py). `NativeRoute` starts it, here and for the native capability check."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...aiperf_qual.execution import EVIDENCE
from ...climb.join import read_server_records, record_task_time
from ...climb.protocol import Bundle, Climb, Stop, built, measuring, recorded, served
from ...results import IdentityAnswer, IdentityCheck, RecordedCommand, ServingMechanics
from ...results.layout import NATIVE_FRAMES, NATIVE_RECORDS, NATIVE_SCRATCH, NATIVE_SERVER_LOG, PRIVATE_DIR
from ...serving.process import ServerProblem, ServerProcess, free_loopback_port
from ...transports.table import used_transport
from ...trtmc.commands import (
    PERF_SERVING_PACKAGE,
    PERF_SERVING_ROOT,
    has_perf_serving,
    perf_serving_argv,
    perf_serving_env,
    perf_serving_problem,
)
from .compare import clip_request_problem
from .frame_choice import frame_choice
from .live import chat_side, compared, identity_written, native_side
from .verdict import blocked
from .video_request import FrameFiles, asks_for_frames, sampling_source

TRTMC_CHAT = (
    "trtmc-server POST /v1/chat/completions, started with --records; each task time joined by X-Request-ID "
    "(task_time_field names where it was read)"
)

if TYPE_CHECKING:
    from ...climb.checkpoint import Checkpoint
    from ...serving.process import ServerProcess
    from .frame_choice import FrameChoice
    from .video_request import FrameFiles


def trtmc_identity(cp: Checkpoint, climb: Climb) -> Climb | Stop:
    """The `identity` stage of a TRTMC row: trtmc-server's chat answers while it is up, then it stops and
    perf_serving answers the same pairs through the Task route on the same bundle file (one server at a time on
    the GPU); identity.json written."""
    climb, result = measuring(climb)
    target = served(climb)
    chat = chat_side(cp.job, target.url, target.model, used_transport(result.video_transport), row_dir=cp.row_dir)
    cp.resources.close()  # trtmc-server stops here: perf_serving takes the GPU next
    check, commands = native_identity(cp, built(climb), chat)
    climb = replace(climb, row=climb.row.model_copy(update={"identity": check}), commands=climb.commands | commands)
    return recorded(climb, result, identity_written(cp.row_dir, check), stops=False)


def native_identity(cp: Checkpoint, bundle: Bundle, chat: list[IdentityAnswer]) -> tuple[IdentityCheck, dict]:
    """perf_serving on the same bundle file with its own worker, the Task's own request fields, the comparison;
    blocked, with the reason, where the checkout or this machine lacks what that needs."""

    job, entry, request = cp.job, cp.entry, cp.entry.native_request
    problem = perf_serving_problem(cp.toolchain, cp.checkout) or clip_request_problem(request)
    if problem is not None or request is None:
        return blocked(problem or "the Task defines no native request"), {}
    native = NativeRoute(cp, bundle)
    job.progress(f"{entry.profile}: identity: the native Task route (perf_serving)")
    try:
        with native.process():
            answers = native_side(job, native.url, request, native.frames, row_dir=cp.row_dir)
    except ServerProblem as error:
        return IdentityCheck(verdict="failed", reason=f"perf_serving did not start: {error}"), native.commands
    check = with_native_records(compared(job, chat, answers, native.route, request), native.records)
    if native.frames is not None:
        check = check.model_copy(update={"clips": native.frames.sent(), "sampling": native.sampling()})
    return check, native.commands


class NativeRoute:
    """perf_serving on a row's bundle, on a free loopback port, its log and --records under private/; and, for a
    video-to-text Task, the frames its requests carry (each clip decoded once)."""

    def __init__(self, cp: Checkpoint, bundle: Bundle) -> None:

        request = cp.entry.native_request
        assert request is not None, "a native route needs the Task's native request"
        self.cp, self.request = cp, request
        self.private = cp.row_dir / PRIVATE_DIR  # its log and records are raw: never published
        self.private.mkdir(parents=True, exist_ok=True)
        self.records = cp.row_dir / NATIVE_RECORDS
        port = free_loopback_port()
        self.url = f"http://127.0.0.1:{port}"
        self.route = f"perf_serving POST /v1/tasks/{request.operation}"
        self.argv = perf_serving_argv(
            cp.toolchain,
            cp.checkout,
            bundle.path,
            profile=cp.entry.profile,
            port=port,
            records=self.records,
            scratch=cp.row_dir / NATIVE_SCRATCH,  # the files its requests carried, as it wrote them: raw
            request_timeout_s=cp.job.settings.request_timeout_s,
        )
        self.commands = {"native": RecordedCommand.of(self.argv)}
        self.frames: FrameFiles | None = None
        self.choice: FrameChoice | None = None
        if request.template is not None:
            from ...media.frames import FrameBudget

            self.choice = frame_choice(cp.entry, cp.job.workload) if asks_for_frames(request) else None
            settings = cp.job.settings
            budget = FrameBudget(max_frames=settings.max_frames, max_pixels=settings.max_pixels)
            self.frames = FrameFiles(cp.row_dir / NATIVE_FRAMES, cp.row_dir, budget, self.choice)

    def process(self) -> ServerProcess:
        """The server, to be entered (ServerProblem while it starts)."""

        return ServerProcess(
            self.argv,
            url=self.url,
            log_path=self.cp.row_dir / NATIVE_SERVER_LOG,
            startup_timeout_s=self.cp.job.stage_timeouts.startup,
            env=perf_serving_env(self.cp.checkout, dict(os.environ)),
        )

    def sampling(self) -> str | None:

        return None if self.frames is None else sampling_source(self.request, self.frames.sent(), self.choice)


def with_native_records(check: IdentityCheck, records: Path) -> IdentityCheck:
    """Each native answer with perf_serving's own task time for it, read from its --records file by X-Request-ID
    (perf_serving records no request_sha: ours is of the body we sent)."""
    found = read_server_records(records)
    pairs, fields = [], []
    for pair in check.pairs:
        time = record_task_time(found.get(pair.native.request_id))
        fields += [time.field] if time.field else []
        pairs.append(pair.model_copy(update={"native": pair.native.model_copy(update={"server_task_ms": time.ms})}))
    where = f" from `{fields[0]}`" if fields else ""
    summary = (
        f"{NATIVE_RECORDS} (perf_serving's --records), joined by X-Request-ID: "
        f"{len(fields)} of {len(pairs)} native task times found{where}"
    )
    return check.model_copy(update={"pairs": pairs, "native_records": summary})


def trtmc_mechanics(cp: Checkpoint, operation: str | None) -> ServingMechanics:
    """TRTMC's own serving mechanics a row ran through: trtmc-server for chat, perf_serving for the native Task
    route where the checkout has it (the older layout has none, and the row says so)."""
    if has_perf_serving(cp.checkout):
        native = (
            f"perf_serving ({PERF_SERVING_ROOT.as_posix()}, trtmc backend, same bundle) POST /v1/tasks/"
            f"{operation or '<operation>'}; task times from its --records, joined by X-Request-ID"
        )
        problem = perf_serving_problem(cp.toolchain, cp.checkout)
        native += f" (not run here: {problem})" if problem else ""
    else:
        native = (
            f"none: the checkout has no {PERF_SERVING_PACKAGE.as_posix()}/ (the older layout), so no perf_serving "
            "mechanics and no native Task route"
        )
    return ServingMechanics(chat=TRTMC_CHAT, native=native, evidence=EVIDENCE)
