"""The owner of one run, whichever command asked for it, as a straight sequence its command reads top to bottom:

    with owned_run(request, workloads, api_key, console, argv) as run:  # aiperf found, the output locked, the
        run.rows = <the command's row source>(request, run.tools)        # tools readied: tokenizer, artifacts,
    return run.outcome                                                  # clip server, one job per workload

(`compare` readies its tools itself, `ready=False`, once it has made the workload copy its server is asked about,
under the lock.) Leaving the block **always** finishes the run (`finish_run` below): the report rebuilt from every
row on disk, then the public-safe rewrite and its check; after a row crashed, after Ctrl-C, after a failure outside
any row once a row exists, and over rows earlier runs left in `--out`. A run that ends normally then sets its
outcome: the rows, the report, the exit code.

Runs that may still end without a report: another run holds the output lock (refused before anything is written),
bad input refused before the lock is taken (a folder of the user's own files as `--out` among it), and a failure
before the first row was written (a workload's clip refused while its artifacts are made), which its one message
says."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from .. import __version__
from ..aiperf.command import API_KEY_PLACEHOLDER
from ..aiperf.locate import locate_aiperf
from ..aiperf.tokenizer import choose_tokenizer
from ..common.output_lock import OutputLock
from ..common.pins import load_pins
from ..common.recorded_paths import with_absolute_paths
from ..common.scratch import children_temp_dir
from ..common.stop_signals import interrupted_by, stop_signals_ignored
from ..plan.job import QualifyJob
from ..plan.settings import RunSettings, setting_flag
from ..publish.rewrite import publish_run
from ..report import build_report, frame_strip, write_report
from ..results import GroupLine, RecordedCommand, Report, ResultRow, RowDifference
from ..results.layout import CHECKPOINTS_DIR, CLIP_SERVER_LOG, REPORT_HTML, RESULT_FILE, RUN_SCRATCH_DIR, TOKENIZER_DIR
from ..rows.staging import recover_rows
from ..transports.clips import clip_routes, clip_urls
from ..transports.table import needs_clip_server
from ..trtmc.commands import find_toolchain
from ..workloads.artifacts import prepare_workload_artifacts
from .foreign_output import refuse_foreign_output
from .verdict import run_exit_code

if TYPE_CHECKING:
    from ..aiperf.locate import AiperfInstall
    from ..workloads import Workload
    from .requests import RunRequest


@dataclass(frozen=True)
class RunConsole:
    """How a run speaks, given by the command line (core rooms never print): `progress` shows one line of the
    run's progress (the API key already scrubbed from it), `warn` says one line on stderr."""

    progress: Callable[[str], None]
    warn: Callable[[str], None]


@dataclass(frozen=True)
class RunTools:
    """What the rows of one run are given: one job per workload (by its name), built once, whole, before the first
    row, and how the run reports its progress."""

    jobs: dict[str, QualifyJob]
    progress: Callable[[str], None]


@dataclass(frozen=True)
class RunOutcome:
    """What a run ended with: its rows (this run's), the report it wrote, and the exit code they call for."""

    rows: list[ResultRow]
    report: Path
    exit_code: int
    differences: tuple[RowDifference, ...] = ()  # the report's rows compared, B against A (report/differences.py)


@dataclass
class OwnedRun:
    """A run opened from its request: the output locked, aiperf found, then its tools readied for the workloads its
    rows run on; the command's row source puts its rows in `rows`, the run's end its `outcome`."""

    request: RunRequest
    workloads: list[Workload]  # what the finish publishes: the ones given, then the ones the rows ran on
    api_key: str | None
    console: RunConsole
    aiperf: AiperfInstall
    command: RecordedCommand
    tools: RunTools  # no job until `tools_for` readies them
    rows: list[ResultRow] = field(default_factory=list)
    outcome: RunOutcome | None = None  # once the run has finished

    @contextlib.contextmanager
    def tools_for(self, workloads: list[Workload]) -> Iterator[RunTools]:
        """The tokenizer, the workloads' artifacts and, where the transport needs it, the clip server serving
        exactly their clips while the rows run (it stops with the block, on an error or SIGINT too); then one job
        per workload."""
        self.workloads = workloads
        settings, out = self.request.settings, self.request.out
        tokenizer, label = choose_tokenizer([settings.tokenizer] if settings.tokenizer else [], out / TOKENIZER_DIR)
        facts = {workload.name: prepare_workload_artifacts(out, workload) for workload in workloads}
        with _clip_server(self.request, workloads) as clip_server:
            jobs = {
                workload.name: QualifyJob(
                    workload=workload,
                    facts=facts[workload.name],
                    settings=settings,
                    aiperf=self.aiperf,
                    tokenizer=tokenizer,
                    tokenizer_label=label,
                    command=self.command,
                    api_key=self.api_key,
                    progress=self.console.progress,
                    clip_urls=MappingProxyType(clip_urls(clip_server, workload) if clip_server is not None else {}),
                )
                for workload in workloads
            }
            self.tools = RunTools(jobs, self.console.progress)
            yield self.tools


# The options of qualify and compare whose value is a path: the run settings' (by their metavar) and the commands'
# own; a workload or checkpoint is a path only where it names something on this machine (else a built-in or hub id).
_PATH_OPTIONS = frozenset(
    {setting_flag(name).name for name in RunSettings.model_fields if setting_flag(name).metavar in {"DIR", "PATH"}}
    | {"--trtmc", "--server-records", "--transformers"}
)
_LOCAL_OPTIONS = frozenset({"--workload", "--checkpoint"})


def recorded_command(argv: list[str], api_key: str | None) -> RecordedCommand:
    """Our own command line as typed, as command.txt records it: the API key as its placeholder, every path
    absolute, as the other recorded commands hold them (common/recorded_paths.py)."""
    typed = ["trtmc-videoqa", *with_absolute_paths(argv, _PATH_OPTIONS, _LOCAL_OPTIONS)]
    return RecordedCommand.of([part.replace(api_key, API_KEY_PLACEHOLDER) for part in typed] if api_key else typed)


@contextlib.contextmanager
def owned_run(
    request: RunRequest,
    workloads: list[Workload],
    api_key: str | None,
    console: RunConsole,
    *,
    argv: list[str],
    ready: bool = True,
) -> Iterator[OwnedRun]:
    """Find aiperf, then under the output lock: the run opened for its rows, its tools readied for `workloads`
    (unless `ready` is off), and on leaving, always the reports and the public check, then the run's outcome.
    `argv` is our own command line as typed, recorded in command.txt."""
    aiperf = locate_aiperf(request.settings.aiperf, expected_version=load_pins().aiperf.version)
    command = recorded_command(argv, api_key)
    refuse_foreign_output(request.out)  # before the lock: nothing is written into a folder of the user's own
    with OutputLock(request.out), children_temp_dir(request.out / RUN_SCRATCH_DIR):
        recover_rows(request.out)  # a run that died between a row's two renames: its earlier row put back
        run = OwnedRun(request, workloads, api_key, console, aiperf, command, RunTools({}, console.progress))
        try:
            with run.tools_for(workloads) if ready else contextlib.nullcontext(run.tools):
                yield run
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP: every child is stopped; report what exists
            with stop_signals_ignored():  # a row the signal cut short is already in place, `interrupted`
                finish_interrupted(run)
            raise
        except Exception:  # outside any row (a server that never got ready, ...): the rows on disk still reported
            if has_rows(request.out):
                finish_after_failure(run)
            raise
        differences = finish_run(run)
        # The run's verdict as its exit code (runs/verdict.py): the rows named with --profile, if any, are those
        # asked about.
        named = bool(getattr(request, "profiles", None))
        code = run_exit_code(run.rows, named=named, exit_zero=request.settings.exit_zero)
        run.outcome = RunOutcome(run.rows, request.out / REPORT_HTML, code, differences)


@contextlib.contextmanager
def _clip_server(request: RunRequest, workloads: list[Workload]) -> Iterator[str | None]:
    """The run's loopback clip server, serving exactly the workloads' clips, while the rows run (its base URL);
    None when the transport needs none."""
    if not needs_clip_server(request.settings.video_transport):
        yield None
        return
    from ..serving.clip_server import ClipServer  # lazy: only a run that serves its clips loads an http server

    with ClipServer(clip_routes(workloads), log_path=request.out / CLIP_SERVER_LOG) as server:
        yield server.base_url


# --- the end of every run ----------------------------------------------------------------------------------------


def has_rows(out: Path) -> bool:
    return any((out / CHECKPOINTS_DIR).glob(f"*/{RESULT_FILE}"))


def finish_run(end: OwnedRun, rebuild: bool = True) -> tuple[RowDifference, ...]:
    """The artifacts made public-safe (publish/), then every report rendered from the rows made public (unless
    `rebuild` is off: the interrupted report, written again), each value it holds rewritten before any format escapes
    it, then the check over everything. Returns the report's differences, for the terminal."""
    request = end.request

    differences: list[RowDifference] = []

    def render(public: Callable[[str], str]) -> None:  # from the rows already made public, every value checked too
        if rebuild:
            report = build_report([request.out])
            differences[:] = report.differences
            write_report(report, request.out, frame_strip(report, [request.out]), public=public)
        else:
            write_interrupted_report(request.out, public)

    publish_run(
        request.out,
        {workload.name: workload for workload in end.workloads},
        end.aiperf.executable,
        end.api_key,
        trtmc=request.trtmc,
        bundle_cache=request.settings.bundle_cache,
        server_urls=request.server_urls(),
        model_dir=request.model_dir(),
        warn=end.console.warn,
        programs=_toolchain_programs() if request.trtmc else (),
        render=render,
    )
    return tuple(differences)


def finish_interrupted(end: OwnedRun) -> None:
    """A stop signal ended the run: a row it cut short is already in place, `interrupted`; before the first row
    was written, a report that says so."""
    if not has_rows(end.request.out):
        write_interrupted_report(end.request.out)
    finish_run(end, rebuild=has_rows(end.request.out))


def finish_after_failure(end: OwnedRun) -> None:
    """The report and the public check after a failure outside any row; one that fails too is said in one line, so
    the failure that ended the run stays the one reported."""
    try:
        finish_run(end)
    except Exception as error:
        end.console.warn(f"the report could not be rebuilt after the failure below: {type(error).__name__}: {error}")


def _toolchain_programs() -> list[str | None]:
    """The TRTMC tools a --trtmc run found on PATH: the publish step names each by its name alone."""
    tools = find_toolchain()
    return [tools.trtmc, tools.trtmc_server, tools.benchmark_worker, tools.python]


def write_interrupted_report(out: Path, public: Callable[[str], str] | None = None) -> None:
    """A run stopped (SIGINT, SIGTERM, SIGHUP) before its first row was written: every report format says so. A
    row the signal cut short once it had started is written `interrupted` (rows/end.py), so no row here means
    nothing was measured; the exit code is the signal's (128 + its number), as documented."""
    by = interrupted_by()
    line = (
        f"Interrupted ({'SIGINT' if by == 'interrupted' else by}) before any row was written: nothing was "
        "measured; run again to qualify"
    )
    report = Report(
        title="trtmc-videoqa qualification (interrupted)",
        generated_by=f"trtmc-videoqa {__version__}",
        sources=[str(out)],
        reference_self_test=False,
        group=GroupLine(status="failed", line=line),
        rows=[],
        counts={},
    )
    write_report(report, out, public=public)
