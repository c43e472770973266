"""One run's machinery, shared by qualify and compare: find aiperf, then under the output lock the tokenizer, the
workloads' artifacts and the clip server; the rows (made by the command's own function); the reports and the
public-safe rewrite. Also each job's making and the rows' one-line summary with the exit code."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..aiperf.command import API_KEY_PLACEHOLDER, reproducible_command
from ..aiperf.locate import locate_aiperf
from ..aiperf.tokenizer import choose_tokenizer
from ..common.errors import EXIT_OK, EXIT_TOOL_ERROR
from ..common.pins import load_pins
from ..common.progress import Progress
from ..common.scrub import known_secrets
from ..common.text_escape import one_line, shown_name
from ..results import ResultRow

if TYPE_CHECKING:
    from ..aiperf.locate import AiperfInstall
    from ..plan.job import QualifyJob
    from ..workloads import Workload
    from ..workloads.artifacts import WorkloadFacts
    from .requests import RunRequest


@dataclass(frozen=True)
class RunTools:
    """What every job of one run is given besides the request: the tools found and how the run reports itself."""

    aiperf: AiperfInstall
    tokenizer: Path
    tokenizer_label: str
    command: str  # our own command line, the API key replaced by a placeholder
    progress: Callable[[str], None]
    api_key: str | None
    facts: dict[str, WorkloadFacts]  # by workload name: the clip manifests and sampling its rows carry
    clip_server: str | None = None  # the base URL of the run's loopback clip server (http transport), if any


# The rows of a run, given the workloads it serves and its tools (the command's own ladder or ladders).
MakeRows = Callable[[list["Workload"], RunTools], list[ResultRow]]
# Before anything else under the output lock: the workloads the server is asked about, made from the given ones.
Adapt = Callable[[list["Workload"]], list["Workload"]]


def make_job(request: RunRequest, workload: Workload, tools: RunTools) -> QualifyJob:
    from ..plan.job import QualifyJob

    job = QualifyJob(
        out=request.out,
        workload=workload,
        facts=tools.facts[workload.name],
        settings=request.settings,
        aiperf=tools.aiperf,
        tokenizer=tools.tokenizer,
        tokenizer_label=tools.tokenizer_label,
        command=tools.command,
        force=request.force,
        api_key=tools.api_key,
        bundle_cache=request.bundle_cache,
        progress=tools.progress,
    )
    job.stage_timeouts["startup"] = request.startup_timeout_s
    if tools.clip_server is not None:
        from ..stages.capability import clip_urls

        job.clip_urls = clip_urls(tools.clip_server, workload)
    return job


def print_rows(request: RunRequest, rows: list[ResultRow]) -> int:
    """Each row's status in one line, where the report is, and the exit code (--strict: 1 on a failed row)."""
    for row in rows:
        stage = f" at {row.failed_stage}" if row.failed_stage else ""
        reused = " (reused)" if row.reused else ""
        print(f"{shown_name(row.profile)}: {row.status}{stage}{reused} — {one_line(row.status_reason)}")
    print(one_line(f"report: {request.out / 'report.html'}"))
    if request.strict and any(row.status == "failed" and row.in_group for row in rows):
        return EXIT_TOOL_ERROR
    return EXIT_OK


def run_with_tools(
    request: RunRequest,
    workloads: list[Workload],
    api_key: str | None,
    make_rows: MakeRows,
    *,
    adapt: Adapt | None = None,
) -> list[ResultRow]:
    """Find aiperf, then under the output lock: the tokenizer, the workloads' artifacts, the rows, the reports."""
    from ..common.output_lock import OutputLock
    from ..common.stop_signals import stop_signals_ignored
    from ..workloads.artifacts import prepare_workload_artifacts

    pins = load_pins()
    aiperf = locate_aiperf(request.aiperf, expected_version=pins.aiperf.version)
    progress = _progress(request.quiet, api_key)
    command = _our_command(sys.argv[1:] if sys.argv[1:2] in (["qualify"], ["compare"]) else ["qualify"])
    if api_key:
        command = command.replace(api_key, API_KEY_PLACEHOLDER)
    with OutputLock(request.out):
        try:
            if adapt is not None:  # the server is asked about the copy made for it
                workloads = adapt(workloads)
            candidates = [request.tokenizer] if request.tokenizer else []
            tokenizer, label = choose_tokenizer(candidates, request.out / "tokenizer")
            facts = {workload.name: prepare_workload_artifacts(request.out, workload) for workload in workloads}
            with _clip_server(request, workloads) as clip_server:
                tools = RunTools(aiperf, tokenizer, label, command, progress, api_key, facts, clip_server)
                rows = make_rows(workloads, tools)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP: every child is stopped; report what exists
            with stop_signals_ignored():
                if not _has_rows(request.out):  # before the first row: a report that says so
                    _write_interrupted_report(request.out)
                _report_and_publish(request, workloads, aiperf.executable, api_key, rebuild=_has_rows(request.out))
            raise
        _report_and_publish(request, workloads, aiperf.executable, api_key)
    return rows


def _progress(quiet: bool, api_key: str | None) -> Callable[[str], None]:
    """The run's progress on stderr (common/progress.py): on a terminal a long step's line is rewritten in place;
    without one (or with CI set) plain lines, a long step's every 10 s and at its end; --quiet: none."""
    if quiet:
        return lambda _: None
    terminal = sys.stderr.isatty() and not os.environ.get("CI")
    # main's stderr drops every control character, the one that rewrites a line too: on a terminal progress writes
    # to the process's own stderr, each of its lines made inert (and scrubbed) by Progress itself.
    stream = (sys.__stderr__ or sys.stderr) if terminal else sys.stderr
    width = shutil.get_terminal_size().columns if terminal else 0
    return Progress(stream, terminal=terminal, secrets=known_secrets(api_key), width=width)


def _our_command(argv: list[str]) -> str:
    """Our own command line as command.txt records it: one line, however its values were written."""
    return reproducible_command(["trtmc-videoqa", *argv])


def _report_and_publish(
    request: RunRequest, workloads: list[Workload], aiperf_executable: str, api_key: str | None, rebuild: bool = True
) -> None:
    """Every report over the rows that exist (unless `rebuild` is off: the interrupted report stands), then the
    artifacts made public-safe and checked (publish/)."""
    from ..publish.rewrite import publish_run
    from ..report import build_report, frame_strip, write_report

    if rebuild:
        report = build_report([request.out])
        write_report(report, request.out, frame_strip(report, [request.out]))
    publish_run(
        request.out,
        {workload.name: workload for workload in workloads},
        aiperf_executable,
        api_key,
        trtmc=request.trtmc,
        bundle_cache=request.bundle_cache,
        server_urls=request.server_urls(),
        warn=lambda message: print(one_line(message), file=sys.stderr),  # one line of ours, not Python's warning
    )


def _has_rows(out: Path) -> bool:
    from ..results.layout import CHECKPOINTS_DIR, RESULT_FILE

    return any((out / CHECKPOINTS_DIR).glob(f"*/{RESULT_FILE}"))


def _write_interrupted_report(out: Path) -> None:
    """A run stopped (SIGINT, SIGTERM, SIGHUP) before its first row: every report format says so, and nothing was
    measured; the exit code is the signal's (128 + its number), as documented."""
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
    write_report(report, out)


@contextlib.contextmanager
def _clip_server(request: RunRequest, workloads: list[Workload]) -> Iterator[str | None]:
    """The run's loopback clip server, serving exactly the workloads' clips, while the rows run (its base URL);
    None when the transport needs none. It stops with the block, on an error or SIGINT too."""
    from ..results.layout import CLIP_SERVER_LOG
    from ..stages.capability import clip_routes, needs_clip_server

    if not needs_clip_server(request.settings.video_transport):
        yield None
        return
    from ..serving.clip_server import ClipServer

    with ClipServer(clip_routes(workloads), log_path=request.out / CLIP_SERVER_LOG) as server:
        yield server.base_url
