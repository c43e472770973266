"""The native side of a TRTMC row's identity check: perf_serving on the same bundle file with its own worker, asked
each (question, clip) with the request fields the checkout's task adapter defines for the row's Task."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .aiperf.command import reproducible_command
from .identity_run import compared, native_side
from .public_check import PRIVATE_DIR
from .results import IdentityAnswer, IdentityCheck
from .trtmc_steps import perf_serving_argv, perf_serving_env, perf_serving_problem

if TYPE_CHECKING:
    from .trtmc_ladder import Bundle, Checkpoint


def native_identity(cp: Checkpoint, bundle: Bundle, chat: list[IdentityAnswer]) -> tuple[IdentityCheck, dict]:
    """perf_serving on the same bundle file with its own worker, the Task's own request fields, the comparison;
    blocked, with the reason, where the checkout or this machine lacks what that needs."""
    from .identity_check import blocked, clip_request_problem
    from .serving.process import ServerProblem, ServerProcess, free_loopback_port

    job, entry = cp.job, cp.entry
    problem = perf_serving_problem(cp.toolchain, cp.checkout) or clip_request_problem(entry.native_request)
    if problem is not None or entry.native_request is None:
        return blocked(problem or "the Task defines no native request"), {}
    port = free_loopback_port()
    private = cp.row_dir / PRIVATE_DIR  # its log and records are raw: never published
    private.mkdir(parents=True, exist_ok=True)
    argv = perf_serving_argv(
        cp.toolchain,
        cp.checkout,
        bundle.path,
        profile=entry.profile,
        port=port,
        records=private / "native-records.jsonl",
        scratch=cp.row_dir / "native-scratch",
        request_timeout_s=job.settings.request_timeout_s,
    )
    commands = {"native": reproducible_command(argv)}
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
            native = native_side(job, url, entry.native_request)
    except ServerProblem as error:
        return IdentityCheck(verdict="failed", reason=f"perf_serving did not start: {error}"), commands
    route = f"perf_serving POST /v1/tasks/{entry.native_request.operation}"
    return compared(job, chat, native, route, entry.native_request), commands
