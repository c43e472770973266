"""The `serve` stage of a TRTMC row: `trtmc-server` on loopback with the row's bundle, ready only on its health
route, its per-request records written where the timing stage reads them. The server stays up for the measuring
stages (it is entered into the row's resources) and stops when identity's native side needs the GPU, or when the
row ends."""

from __future__ import annotations

import os
import time
from dataclasses import replace

from ..climb.checkpoint import Checkpoint, redacted
from ..climb.protocol import Climb, Served, Stop, built
from ..common.progress import watched_log
from ..common.scrub import SERVER_TOKEN_ENV
from ..results import StageResult, StageStatus
from ..results.layout import SERVER_LOG, SERVER_RECORDS
from ..serving.process import ServerProblem, ServerProcess, free_loopback_port, served_model
from ..trtmc.commands import server_argv


def serve(cp: Checkpoint, climb: Climb) -> Climb | Stop:
    """trtmc-server started on a free loopback port; the climb then knows where it answers and under which name."""

    job = cp.job
    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    records = cp.row_dir / SERVER_RECORDS
    records.parent.mkdir(parents=True, exist_ok=True)  # the server may not make the folder of its records file
    argv = server_argv(
        cp.toolchain,
        built(climb).path,
        model_name=cp.entry.profile,
        port=port,
        body_limit=job.settings.body_limit,
        records=records,
        startup_timeout_s=job.stage_timeouts.startup,
        request_timeout_s=job.settings.request_timeout_s,
    )
    climb = replace(climb, commands=climb.commands | {"serve": redacted(argv)})
    env = dict(os.environ)
    if job.api_key:
        env[SERVER_TOKEN_ENV] = job.api_key  # the server reads it from its environment, never from argv
    cp.progress("starting trtmc-server")
    started = time.monotonic()
    process = ServerProcess(
        argv, url=url, log_path=cp.row_dir / SERVER_LOG, startup_timeout_s=job.stage_timeouts.startup, env=env
    )
    try:
        with watched_log(job.progress, f"{cp.entry.profile}: serve", cp.row_dir / SERVER_LOG):  # until ready
            server = cp.resources.enter_context(process)
    except ServerProblem as problem:  # raised only while it starts: it never got ready
        failed = _serve_stage("failed", str(problem), started)
        return Stop(climb, failed, "failed", f"serve: {problem}", failed="serve")
    climb = climb.with_stage(_serve_stage("passed", f"ready after {server.ready_after_s:.1f} s", started))
    model = served_model(url, cp.entry.profile, api_key=job.api_key)
    return replace(climb, served=Served(url=url, model=model, records=records, alive=server.alive))


def _serve_stage(status: StageStatus, detail: str, started: float) -> StageResult:
    wall = round(time.monotonic() - started, 3)
    return StageResult(name="serve", status=status, detail=detail, wall_s=wall, evidence=[SERVER_LOG])
