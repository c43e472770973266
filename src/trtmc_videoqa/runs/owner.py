"""The owner of one run, whichever command asked for it: find aiperf, then under the output lock the tokenizer, the
workloads' artifacts and the clip server; the rows (made by the command's own function, each row's failure kept in
its row); and **always** the report, rebuilt from every row on disk, then the public-safe rewrite and its check:
after a row crashed, after Ctrl-C, after a failure outside any row once a row exists, and over rows earlier runs
left in `--out`.

Runs that may still end without a report: another run holds the output lock (refused before anything is written),
bad input refused before the lock is taken (a folder of the user's own files as `--out` among it), and a failure
before the first row was written (a workload's clip refused while its artifacts are made), which its one message
says."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..aiperf.command import API_KEY_PLACEHOLDER
from ..aiperf.locate import locate_aiperf
from ..aiperf.tokenizer import choose_tokenizer
from ..common.pins import load_pins
from ..common.recorded_paths import with_absolute_paths
from ..common.scratch import children_temp_dir
from ..plan.settings import RunSettings, setting_flag
from ..results import RecordedCommand, ResultRow
from ..results.layout import (
    CHECKPOINTS_DIR,
    CLIP_SERVER_LOG,
    REPORT_HTML,
    RESULT_FILE,
    RUN_SCRATCH_DIR,
    TOKENIZER_DIR,
)
from ..rows.staging import recover_rows
from ..transports.table import needs_clip_server
from .foreign_output import refuse_foreign_output

if TYPE_CHECKING:
    from ..aiperf.locate import AiperfInstall
    from ..plan.job import QualifyJob
    from ..workloads import Workload
    from ..workloads.artifacts import WorkloadFacts
    from .requests import RunRequest


@dataclass(frozen=True)
class RunConsole:
    """How a run speaks, given by the command line (core rooms never print): `progress(api_key)` makes the run's
    progress callback (the key is scrubbed from what it shows), `warn` says one line on stderr."""

    progress: Callable[[str | None], Callable[[str], None]]
    warn: Callable[[str], None]


@dataclass(frozen=True)
class RunTools:
    """What every job of one run is given besides the request: the tools found and how the run reports itself."""

    aiperf: AiperfInstall
    tokenizer: Path
    tokenizer_label: str
    command: RecordedCommand  # our own command line, the API key replaced by a placeholder
    progress: Callable[[str], None]
    api_key: str | None
    facts: dict[str, WorkloadFacts]  # by workload name: the clip manifests and sampling its rows carry
    clip_server: str | None = None  # the base URL of the run's loopback clip server (http transport), if any

    def job(self, settings_of: RunRequest, workload: Workload, inventory_digest: str | None = None) -> QualifyJob:
        """The job every row on `workload` shares: built once, whole, before its first row."""
        from ..plan.job import QualifyJob

        clip_urls: dict[str, str] = {}
        if self.clip_server is not None:
            from ..transports.clips import clip_urls as urls_of

            clip_urls = urls_of(self.clip_server, workload)
        return QualifyJob(
            workload=workload,
            facts=self.facts[workload.name],
            settings=settings_of.settings,
            aiperf=self.aiperf,
            tokenizer=self.tokenizer,
            tokenizer_label=self.tokenizer_label,
            command=self.command,
            api_key=self.api_key,
            progress=self.progress,
            inventory_digest=inventory_digest,
            clip_urls=MappingProxyType(clip_urls),
        )


@dataclass(frozen=True)
class RunOutcome:
    """What a run ended with: its rows (this run's), the report it wrote, and the exit code they call for."""

    rows: list[ResultRow]
    report: Path
    exit_code: int


# The rows of a run, given the workloads it serves and its tools (the command's own ladder or ladders).
MakeRows = Callable[[list["Workload"], RunTools], list[ResultRow]]
# Before anything else under the output lock: the workloads the server is asked about, made from the given ones.
Adapt = Callable[[list["Workload"]], list["Workload"]]


def exit_code(rows: list[ResultRow], request: RunRequest) -> int:
    """The run's verdict as its exit code (runs/verdict.py): the rows named with --profile, if any, are those asked
    about."""
    from .verdict import run_exit_code

    named = bool(getattr(request, "profiles", None))
    return run_exit_code(rows, named=named, exit_zero=request.settings.exit_zero)


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


def owned_run(
    request: RunRequest,
    workloads: list[Workload],
    api_key: str | None,
    make_rows: MakeRows,
    console: RunConsole,
    *,
    argv: list[str],
    adapt: Adapt | None = None,
) -> RunOutcome:
    """Find aiperf, then under the output lock: the tokenizer, the workloads' artifacts, the rows, and always the
    reports and the public check. `argv` is our own command line as typed, recorded in command.txt."""
    from ..common.output_lock import OutputLock
    from ..common.stop_signals import stop_signals_ignored

    settings = request.settings
    pins = load_pins()
    aiperf = locate_aiperf(settings.aiperf, expected_version=pins.aiperf.version)
    progress = console.progress(api_key)
    command = recorded_command(argv, api_key)
    refuse_foreign_output(request.out)  # before the lock: nothing is written into a folder of the user's own
    with OutputLock(request.out), children_temp_dir(request.out / RUN_SCRATCH_DIR):
        recover_rows(request.out)  # a run that died between a row's two renames: its earlier row put back
        try:
            if adapt is not None:  # the server is asked about the copy made for it
                workloads = adapt(workloads)
            candidates = [settings.tokenizer] if settings.tokenizer else []
            tokenizer, label = choose_tokenizer(candidates, request.out / TOKENIZER_DIR)
            from ..workloads.artifacts import prepare_workload_artifacts

            facts = {workload.name: prepare_workload_artifacts(request.out, workload) for workload in workloads}
            with _clip_server(request, workloads) as clip_server:
                tools = RunTools(aiperf, tokenizer, label, command, progress, api_key, facts, clip_server)
                rows = make_rows(workloads, tools)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP: every child is stopped; report what exists
            with stop_signals_ignored():  # a row the signal cut short is already in place, `interrupted`
                if not _has_rows(request.out):  # before the first row was written: a report that says so
                    _write_interrupted_report(request.out)
                _report_and_publish(
                    request, workloads, aiperf.executable, api_key, console, rebuild=_has_rows(request.out)
                )
            raise
        except Exception:  # outside any row (a server that never got ready, ...): the rows on disk still reported
            if _has_rows(request.out):
                _report_after_failure(request, workloads, aiperf.executable, api_key, console)
            raise
        _report_and_publish(request, workloads, aiperf.executable, api_key, console)
    return RunOutcome(rows, request.out / REPORT_HTML, exit_code(rows, request))


def _report_and_publish(
    request: RunRequest,
    workloads: list[Workload],
    aiperf_executable: str,
    api_key: str | None,
    console: RunConsole,
    rebuild: bool = True,
) -> None:
    """The artifacts made public-safe (publish/), then every report rendered from the rows made public (unless
    `rebuild` is off: the interrupted report, written again), each value it holds rewritten before any format escapes
    it, then the check over everything."""
    from ..publish.rewrite import publish_run
    from ..report import build_report, frame_strip, write_report

    def render(public: Callable[[str], str]) -> None:  # from the rows already made public, every value checked too
        if rebuild:
            report = build_report([request.out])
            write_report(report, request.out, frame_strip(report, [request.out]), public=public)
        else:
            _write_interrupted_report(request.out, public)

    publish_run(
        request.out,
        {workload.name: workload for workload in workloads},
        aiperf_executable,
        api_key,
        trtmc=request.trtmc,
        bundle_cache=request.settings.bundle_cache,
        server_urls=request.server_urls(),
        model_dir=request.model_dir(),
        warn=console.warn,
        programs=_toolchain_programs() if request.trtmc else (),
        render=render,
    )


def _toolchain_programs() -> list[str | None]:
    """The TRTMC tools a --trtmc run found on PATH: the publish step names each by its name alone."""
    from ..trtmc.commands import find_toolchain

    tools = find_toolchain()
    return [tools.trtmc, tools.trtmc_server, tools.benchmark_worker, tools.python]


def _report_after_failure(
    request: RunRequest, workloads: list[Workload], aiperf_executable: str, api_key: str | None, console: RunConsole
) -> None:
    """The report and the public check after a failure outside any row; one that fails too is said in one line, so
    the failure that ended the run stays the one reported."""
    try:
        _report_and_publish(request, workloads, aiperf_executable, api_key, console)
    except Exception as error:
        console.warn(f"the report could not be rebuilt after the failure below: {type(error).__name__}: {error}")


def _has_rows(out: Path) -> bool:
    return any((out / CHECKPOINTS_DIR).glob(f"*/{RESULT_FILE}"))


def _write_interrupted_report(out: Path, public: Callable[[str], str] | None = None) -> None:
    """A run stopped (SIGINT, SIGTERM, SIGHUP) before its first row was written: every report format says so. A
    row the signal cut short once it had started is written `interrupted` (rows/end.py), so no row here means
    nothing was measured; the exit code is the signal's (128 + its number), as documented."""
    from .. import __version__
    from ..common.stop_signals import interrupted_by
    from ..report import write_report
    from ..results import GroupLine, Report

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


@contextlib.contextmanager
def _clip_server(request: RunRequest, workloads: list[Workload]) -> Iterator[str | None]:
    """The run's loopback clip server, serving exactly the workloads' clips, while the rows run (its base URL);
    None when the transport needs none. It stops with the block, on an error or SIGINT too."""
    from ..transports.clips import clip_routes

    if not needs_clip_server(request.settings.video_transport):
        yield None
        return
    from ..serving.clip_server import ClipServer

    with ClipServer(clip_routes(workloads), log_path=request.out / CLIP_SERVER_LOG) as server:
        yield server.base_url
