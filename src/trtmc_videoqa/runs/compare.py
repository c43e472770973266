"""`compare`'s run: an upstream implementation of a checkpoint beside trtmc-server.

It starts Hugging Face `transformers serve` on the checkpoint (the hub id, fetched with the user's token from the
environment, or a local folder), on loopback, only when the row must be measured, and runs the endpoint ladder
against it with the same workload over the http transport. The row is labelled "comparison (not a TRTMC
capability)": upstream availability never makes a TRTMC model, and no report counts it in the group.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .. import inventory, serving  # rooms that load on first use: the audit's schemas, the supervisor's http client
from ..climb.protocol import Climb, Stop
from ..common.errors import BadInput
from ..common.progress import watched_log
from ..common.safe_names import safe_name
from ..common.scrub import known_secrets
from ..ladders.endpoint import finish_endpoint_stop
from ..plan.cache_keys import endpoint_key
from ..plan.endpoint_target import EndpointTarget, LiveEndpoint
from ..plan.job import QualifyJob
from ..plan.row_start import with_server_sampling
from ..results import ComparisonFacts, RecordedCommand, ResultRow, StageName, StageResult
from ..results.layout import COMPARISON_SERVER_LOG, COMPARISON_WORKLOAD_DIR
from ..serving.transformers_serve import (
    HEALTH_PATH,
    ServeTarget,
    error_line,
    find_transformers,
    lack_in_log,
    log_tail,
    machine_lacks,
    public_line,
    serve_argv,
    serve_notes,
    serve_target,
    server_version,
)
from ..workloads.silent_audio_copy import adaptation_note, frame_count, silent_audio_workload
from .inputs import LONGEST_MODEL_NAME, checked_run_inputs
from .owner import RunConsole, RunOutcome, RunTools, owned_run
from .qualify import endpoint_rows
from .requests import Adaptation, CompareRequest

if TYPE_CHECKING:
    from ..serving.process import ServerProblem
    from ..workloads import Workload

PROFILE_SUFFIX = ".transformers-serve"


@dataclass(frozen=True)
class ComparisonRun:
    """What one comparison serves and how: fixed before anything starts."""

    target: ServeTarget
    executable: Path
    device: str
    dtype: str
    adaptation: Adaptation
    compared_profile: str | None
    startup_timeout_s: float

    @property
    def profile(self) -> str:
        """The row's name: beside the TRTMC profile it compares with (sorted next to it), else the checkpoint's."""
        base = self.compared_profile or self.target.checkpoint.replace("/", "--")
        return base + PROFILE_SUFFIX

    def workload(self, out: Path, original: Workload) -> tuple[Workload, str]:
        """The workload the server is asked about, and the row's words for what was changed in it."""
        if self.adaptation == "none":
            return original, "none: the workload's clips and requests as they are"
        copy = silent_audio_workload(
            original,
            out / COMPARISON_WORKLOAD_DIR / original.name,
            why="Made by trtmc-videoqa compare for transformers serve 5.19-5.24, which reads audio from every video.",
        )
        return copy, adaptation_note(original, frame_count(original))

    def facts(self, server_version: str | None, media_adaptation: str) -> ComparisonFacts:
        return ComparisonFacts(
            server="transformers serve",
            server_version=server_version,
            checkpoint=self.target.checkpoint,
            revision=self.target.revision,
            compared_profile=self.compared_profile,
            device=self.device,
            media_adaptation=media_adaptation,
        )

    def identity(self, facts: ComparisonFacts) -> str:
        """The server's part of the row's cache key: what it is, what it serves, on what, with which media."""
        parts = [facts.server, facts.server_version or "", self.target.model, self.device, self.dtype]
        return " ".join([*parts, facts.media_adaptation, self._local_digest()])

    def _local_digest(self) -> str:
        """A local checkpoint's file names and sizes, so a rebuilt folder of the same name is measured again."""
        if self.target.cwd is None:
            return ""
        folder = self.target.cwd / self.target.model
        listing = sorted(f"{p.relative_to(folder)}:{p.stat().st_size}" for p in folder.rglob("*") if p.is_file())
        return hashlib.sha256("\n".join(listing).encode()).hexdigest()[:16]


def _target(request: CompareRequest) -> tuple[ServeTarget, str | None]:
    """The checkpoint to serve, and the TRTMC profile it stands beside (if named)."""
    profile, trtmc = request.profile, request.trtmc
    if profile is not None and not safe_name(profile):
        raise BadInput(f"--profile {profile!r} is not a profile name (letters, digits, '.', '_', '-')")
    if trtmc is not None:
        if profile is None:
            raise BadInput("--trtmc needs --profile NAME: the profile whose checkpoint is served")
        entries = {entry.profile: entry for entry in inventory.run_inventory(trtmc).entries}
        entry = entries.get(profile)
        if entry is None or not entry.checkpoint:
            raise BadInput(
                f"--profile {profile} is not a profile with a checkpoint in the inventory of {trtmc}; "
                "see `trtmc-videoqa inventory` for the profiles"
            )
        return serve_target(request.checkpoint or entry.checkpoint, request.revision or entry.revision), profile
    if not request.checkpoint:
        raise BadInput("compare needs --checkpoint ID|DIR, or --trtmc PATH with --profile NAME")
    return serve_target(request.checkpoint, request.revision), profile


def comparison_run(request: CompareRequest) -> ComparisonRun:
    target, compared = _target(request)
    return ComparisonRun(
        target=target,
        executable=find_transformers(request.transformers),
        device=request.device,
        dtype=request.dtype,
        adaptation=request.media_adaptation,
        compared_profile=compared,
        startup_timeout_s=request.settings.startup_timeout_s,
    )


def compare_inputs(request: CompareRequest) -> tuple[list[Workload], list[str]]:
    """The workloads and the notes for the plan, checked as qualify checks its inputs; the API key is read (a bad
    --api-key-file is refused) but never sent: the server is the one started here."""
    workloads, _, notes = checked_run_inputs(request, self_test=False, model=LONGEST_MODEL_NAME)
    return workloads, notes


def run_compare(
    request: CompareRequest,
    comparison: ComparisonRun,
    workloads: list[Workload],
    console: RunConsole,
    argv: list[str],
) -> RunOutcome:
    """The run opened, the workload copy made for the server (under the output lock), the row measured (the server
    started only when it must be), and the run's finish (always)."""
    with owned_run(request, workloads, None, console, argv=argv, ready=False) as run:
        adapted, adaptation = comparison.workload(request.out, workloads[0])
        with run.tools_for([adapted]) as tools:
            run.rows = compare_rows(request, adapted, tools, comparison, adaptation)
    assert run.outcome is not None  # set as the run finished; an exception would have left the block
    return run.outcome


def compare_rows(
    request: CompareRequest, workload: Workload, tools: RunTools, comparison: ComparisonRun, adaptation: str
) -> list[ResultRow]:
    """The comparison row on `workload` (the copy made for the server, changed as `adaptation` says): the server
    started only when the row must be measured, qualified as an endpoint, stopped. A server that never answered
    ends the row at `serve`: `blocked` where this machine lacks what it needs, else `failed`."""
    tools.progress(f"{comparison.profile}: reading transformers serve's version")
    facts = comparison.facts(server_version(comparison.executable), adaptation)
    stated = {"sampling_where": "server", "media_adaptation": facts.media_adaptation, "device": comparison.device}
    frames = workload.spec.generation.extra_body.get("chat_template_kwargs", {}).get("num_frames")
    if isinstance(frames, int):
        stated["sampling_policy"] = f"uniform:{frames}"
    target = EndpointTarget(
        profile=comparison.profile,
        model=comparison.target.model,
        identity=comparison.identity(facts),
        stated=stated,
        comparison=facts,
    )
    job = tools.jobs[workload.name]
    try:
        return endpoint_rows([(job, target)], _served(request, comparison, tools))
    except NotServed as never:
        return [unserved_row(job, target, never)]


class NotServed(Exception):
    """The comparison's server never answered: the row's `serve` stage says why (public-safe), in its place."""

    def __init__(
        self,
        status: Literal["failed", "blocked"],
        detail: str,
        *,
        url: str | None = None,
        wall_s: float | None = None,
        command: RecordedCommand | None = None,
    ) -> None:
        super().__init__(detail)
        self.status, self.detail, self.url, self.wall_s, self.command = status, detail, url, wall_s, command


def unserved_row(job: QualifyJob, target: EndpointTarget, never: NotServed) -> ResultRow:
    """The row of a comparison whose server never answered, ended at `serve` and finished like any row (written
    whole in its staging folder, then put in place: ladders/endpoint.py `finish_endpoint_stop`)."""
    live = LiveEndpoint(url=never.url or "", serve_command=never.command)
    stage = StageResult(name="serve", status=never.status, detail=never.detail, wall_s=never.wall_s)
    failed: StageName | None = "serve" if never.status == "failed" else None

    def stop(climb: Climb) -> Stop:
        start = replace(climb, row=with_server_sampling(climb.row, job, target.stated))
        return Stop(start, stage, never.status, f"serve: {never.detail}", failed=failed)

    return finish_endpoint_stop(job, target, live, endpoint_key(job, target), stop)


@contextmanager
def _served(request: CompareRequest, comparison: ComparisonRun, tools: RunTools) -> Iterator[LiveEndpoint]:
    """`transformers serve` on loopback (it fetches the clips from this run's loopback clip server too), watched
    while it loads; what this machine lacks for it is found first, where that is quick, and nothing is started."""
    profile, target = comparison.profile, comparison.target
    lacks = machine_lacks(target, comparison.device)
    if lacks:
        raise NotServed("blocked", "; ".join(f"{lack.what}: {lack.hint}" for lack in lacks))
    port = serving.free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    argv = serve_argv(
        comparison.executable, target, host="127.0.0.1", port=port, device=comparison.device, dtype=comparison.dtype
    )
    log = request.out / COMPARISON_SERVER_LOG
    tools.progress(
        f"{profile}: starting transformers serve on {url} ({target.model}, {comparison.device}); "
        "it loads the model before it answers"
    )
    process = serving.ServerProcess(
        argv,
        url=url,
        log_path=log,
        startup_timeout_s=comparison.startup_timeout_s,
        cwd=target.cwd,
        ready_path=HEALTH_PATH,
    )
    command = RecordedCommand.of(argv, serve_notes(comparison.target))
    started = time.monotonic()
    with ExitStack() as stack:
        try:
            with watched_log(tools.progress, f"{profile}: transformers serve loading", log):  # until it answers
                server = stack.enter_context(process)
        except serving.ServerProblem as problem:
            wall = round(time.monotonic() - started, 3)
            raise _not_started(problem, comparison, log, url, wall, command) from None
        tools.progress(f"{profile}: transformers serve ready after {server.ready_after_s or 0:.1f} s")
        yield LiveEndpoint(url=url, alive=server.alive, serve_command=command)


def _not_started(
    problem: ServerProblem, comparison: ComparisonRun, log_path: Path, url: str, wall_s: float, command: RecordedCommand
) -> NotServed:
    """Why the server never answered, from its exit and its log: `blocked` where the log says this machine lacks
    what it needs (a CUDA device, the checkpoint), else `failed`; the log's last error line, public-safe, and a hint."""
    secrets = known_secrets()
    if problem.exit_code is not None:
        what = f"transformers serve exited with code {problem.exit_code} before it was ready"
    else:
        what = public_line(str(problem), secrets)
    log = log_tail(log_path)
    line = public_line(error_line(log), secrets)
    said = f"; its log's last error: {line}" if line else "; its log is empty"
    where = f"its whole log: {COMPARISON_SERVER_LOG} under --out (kept private)"
    lack = lack_in_log(log, comparison.target)
    if lack is not None:
        detail = f"{lack.what}: {what}{said}; {lack.hint}"
        return NotServed("blocked", detail, url=url, wall_s=wall_s, command=command)
    hint = "; raise --startup-timeout if it was still loading" if problem.exit_code is None else ""
    return NotServed("failed", f"{what}{said}; {where}{hint}", url=url, wall_s=wall_s, command=command)
