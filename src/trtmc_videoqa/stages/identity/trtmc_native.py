"""The native side of a TRTMC row's identity check: perf_serving on the same bundle file with its own worker, asked
each (question, clip) with the request fields the checkout's task adapter defines for the row's Task."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...aiperf.command import reproducible_command
from ...aiperf_qual.execution import EVIDENCE
from ...results import IdentityAnswer, IdentityCheck, ServingMechanics
from ...results.layout import PRIVATE_DIR
from ...trtmc.commands import (
    PERF_SERVING_PACKAGE,
    PERF_SERVING_ROOT,
    has_perf_serving,
    perf_serving_argv,
    perf_serving_env,
    perf_serving_problem,
)
from ..join import read_server_records, record_task_time
from ..protocol import Bundle, Climb, Stop, built, measuring, recorded, served
from .live import chat_side, compared, identity_written, native_side

NATIVE_RECORDS = "native-records.jsonl"
NATIVE_FRAMES = "native-frames"  # under private/: a video-to-text Task's frames as sent, PNG files and times.json
TRTMC_CHAT = (
    "trtmc-server POST /v1/chat/completions, started with --records; each task time joined by X-Request-ID "
    "(task_time_field names where it was read)"
)

if TYPE_CHECKING:
    from ..checkpoint import Checkpoint


def trtmc_identity(cp: Checkpoint, climb: Climb) -> Climb | Stop:
    """The `identity` stage of a TRTMC row: trtmc-server's chat answers while it is up, then it stops and
    perf_serving answers the same pairs through the Task route on the same bundle file (one server at a time on
    the GPU); identity.json written."""
    climb, result = measuring(climb)
    target = served(climb)
    chat = chat_side(cp.job, target.url, target.model, result.video_transport or "data-url")
    cp.resources.close()  # trtmc-server stops here: perf_serving takes the GPU next
    check, commands = native_identity(cp, built(climb), chat)
    climb = replace(climb, row=climb.row.model_copy(update={"identity": check}), commands=climb.commands | commands)
    return recorded(climb, result, identity_written(cp.row_dir, check), stops=False)


def native_identity(cp: Checkpoint, bundle: Bundle, chat: list[IdentityAnswer]) -> tuple[IdentityCheck, dict]:
    """perf_serving on the same bundle file with its own worker, the Task's own request fields, the comparison;
    blocked, with the reason, where the checkout or this machine lacks what that needs."""
    from ...serving.process import ServerProblem, ServerProcess, free_loopback_port
    from .compare import blocked, clip_request_problem

    job, entry = cp.job, cp.entry
    problem = perf_serving_problem(cp.toolchain, cp.checkout) or clip_request_problem(entry.native_request)
    if problem is not None or entry.native_request is None:
        return blocked(problem or "the Task defines no native request"), {}
    port = free_loopback_port()
    private = cp.row_dir / PRIVATE_DIR  # its log and records are raw: never published
    private.mkdir(parents=True, exist_ok=True)
    records = private / NATIVE_RECORDS
    argv = perf_serving_argv(
        cp.toolchain,
        cp.checkout,
        bundle.path,
        profile=entry.profile,
        port=port,
        records=records,
        scratch=cp.row_dir / "native-scratch",
        request_timeout_s=job.settings.request_timeout_s,
    )
    commands = {"native": reproducible_command(argv)}
    frames, choice = None, None
    if entry.native_request.template is not None:
        from .frame_choice import frame_choice
        from .video_request import FrameFiles, asks_for_frames

        choice = frame_choice(entry, job.workload) if asks_for_frames(entry.native_request) else None
        frames = FrameFiles(private / NATIVE_FRAMES, cp.row_dir, choice)
    job.progress(f"{entry.profile}: identity: the native Task route (perf_serving)")
    url = f"http://127.0.0.1:{port}"
    try:
        with ServerProcess(
            argv,
            url=url,
            log_path=private / "native-server.log",
            startup_timeout_s=job.stage_timeouts["startup"],
            env=perf_serving_env(cp.checkout, dict(os.environ)),
        ):
            native = native_side(job, url, entry.native_request, frames)
    except ServerProblem as error:
        return IdentityCheck(verdict="failed", reason=f"perf_serving did not start: {error}"), commands
    route = f"perf_serving POST /v1/tasks/{entry.native_request.operation}"
    check = with_native_records(compared(job, chat, native, route, entry.native_request), records)
    if frames is not None:
        from .video_request import sampling_source

        sent = frames.sent()
        sampling = sampling_source(entry.native_request, sent, choice)
        check = check.model_copy(update={"clips": sent, "sampling": sampling})
    return check, commands


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
        f"{PRIVATE_DIR}/{NATIVE_RECORDS} (perf_serving's --records), joined by X-Request-ID: "
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
