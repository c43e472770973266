"""`trtmc-videoqa qualify`: the three ways in (a TRTMC checkout, an endpoint, the self-test), then the reports.

This is the edge: it starts the reference endpoint for the self-test, takes the output lock, renders progress.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..aiperf.command import API_KEY_PLACEHOLDER
from ..aiperf.locate import locate_aiperf
from ..aiperf.tokenizer import choose_tokenizer
from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.errors import EXIT_OK, EXIT_TOOL_ERROR, BadInput
from ..common.pins import load_pins
from ..results import ResultRow

if TYPE_CHECKING:
    from ..aiperf.locate import AiperfInstall
    from ..plan.settings import RunSettings
    from ..rows.finish import QualifyJob
    from ..workloads import Workload
    from ..workloads.artifacts import WorkloadFacts
    from .compare import ComparisonRun

SELF_TEST_PREFIX = "reference-self-test"


@dataclass(frozen=True)
class _RunTools:
    """What every job of one run is given besides the options: the tools found and how the run reports itself."""

    aiperf: AiperfInstall
    tokenizer: Path
    tokenizer_label: str
    command: str  # our own command line, the API key replaced by a placeholder
    progress: Callable[[str], None]
    api_key: str | None
    facts: dict[str, WorkloadFacts]  # by workload name: the clip manifests and sampling its rows carry
    clip_server: str | None = None  # the base URL of the run's loopback clip server (http transport), if any


def _progress(quiet: bool) -> Callable[[str], None]:
    # A terminal sees progress, with the time since the start; a CI log (CI set, or no terminal) stays quiet.
    if quiet or os.environ.get("CI") or not sys.stderr.isatty():
        return lambda _: None
    start = time.monotonic()
    return lambda message: print(f"  [{time.monotonic() - start:6.1f} s] {message}", file=sys.stderr, flush=True)


def _settings(args: argparse.Namespace) -> RunSettings:
    """The run's settings; RunSettings refuses a value out of range (a ValidationError, named by its option)."""
    from ..plan.settings import RunSettings

    return RunSettings(
        repeats=args.repeats,
        warmup=args.warmup,
        concurrency=args.concurrency,
        request_timeout_s=args.request_timeout,
        aiperf_wall_limit_s=args.aiperf_wall_limit,
        body_limit=args.body_limit,
        max_tokens=args.max_tokens,
        video_transport=args.video_transport,
    )


def _stated(args: argparse.Namespace) -> dict[str, str]:
    stated = {}
    for item in args.server_setting:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--server-setting {item!r} is not KEY=VALUE")
        stated[key] = value
    return stated


def _our_command(argv: list[str]) -> str:
    return " ".join(shlex.quote(part) for part in ["trtmc-videoqa", *argv])


def _workloads(args: argparse.Namespace, self_test: bool) -> list[Workload]:
    """The workloads to run; a file or name that cannot be used is a WorkloadError naming it and the fix."""
    from ..plan.self_test import load_self_test_plan
    from ..workloads import load_workload

    names = [args.workload] if args.workload else (load_self_test_plan().workloads() if self_test else ["bigbuckbunny"])
    return [load_workload(name) for name in names]


def _api_key(args: argparse.Namespace) -> str | None:
    """The server's API key: from --api-key-file (its first line), else from the --api-key-env variable."""
    if args.api_key_file is not None:
        try:
            text = args.api_key_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or type(error).__name__
            raise BadInput(
                f"--api-key-file {args.api_key_file} cannot be read ({reason}); "
                "give a readable file holding the key on its first line"
            ) from None
        key = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not key:
            raise BadInput(f"--api-key-file {args.api_key_file} is empty; put the key on its first line")
        return key
    return os.environ.get(args.api_key_env) or None


def _check_server_records(args: argparse.Namespace) -> None:
    if args.server_records is not None and not args.endpoint:
        raise BadInput(
            "--server-records goes with --endpoint (trtmc-server's records are read by --trtmc runs themselves)"
        )
    if args.server_records is not None and not args.server_records.is_file():
        raise BadInput(
            f"--server-records {args.server_records}: no such file; give the file the server writes "
            "its per-request records to (trtmc-server --records FILE)"
        )


def make_job(args: argparse.Namespace, workload: Workload, tools: _RunTools) -> QualifyJob:
    from ..rows.finish import QualifyJob

    job = QualifyJob(
        out=args.out,
        workload=workload,
        facts=tools.facts[workload.name],
        settings=_settings(args),
        aiperf=tools.aiperf,
        tokenizer=tools.tokenizer,
        tokenizer_label=tools.tokenizer_label,
        command=tools.command,
        force=args.force,
        api_key=tools.api_key,
        bundle_cache=args.bundle_cache,
        progress=tools.progress,
    )
    job.stage_timeouts["startup"] = args.startup_timeout
    if tools.clip_server is not None:
        from ..stages.capability import clip_urls

        job.clip_urls = clip_urls(tools.clip_server, workload)
    return job


# The model name in the body-size check when it is not known before the server runs (TRTMC: the served id).
_LONGEST_MODEL_NAME = "m" * 128


def _check_bodies(workloads: list[Workload], args: argparse.Namespace, model: str) -> list[str]:
    """With data URLs every clip's request body must fit the server's body limit: refused here, before anything is
    sent. An http URL carries no clip bytes, so `http` is not checked; `auto` tries data-url first and falls back to
    http, so a clip over the limit is a note on the plan (its data-url try is not sent), not a refusal."""
    from ..media import ClipError, check_body_limit, predicted_body_size

    settings = _settings(args)
    notes: list[str] = []
    if settings.video_transport == "http":
        return notes
    for workload in workloads:
        max_tokens = settings.max_tokens or workload.spec.generation.max_tokens
        longest = max((p.text for p in workload.spec.prompts), key=len)
        for clip in workload.spec.clips:
            size = predicted_body_size(
                model,
                longest,
                clip.bytes,
                clip.mime,
                max_tokens=max_tokens,
                temperature=workload.spec.generation.temperature,
                extra=dict(workload.spec.generation.extra_body) or None,
            )
            try:
                check_body_limit(size, settings.body_limit, clip=workload.clip_path(clip.id))
            except ClipError as error:
                if settings.video_transport == "auto":
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


def _no_credential_in_urls(args: argparse.Namespace) -> None:
    """A key inside a URL (http://user:KEY@host) would land in the row, every report, command.txt and `ps`: refused,
    without repeating it."""
    from urllib.parse import urlsplit

    for option, url in (("--endpoint", args.endpoint), ("--native-url", args.native_url)):
        if url and ("@" in (urlsplit(url).netloc or "")):
            raise BadInput(
                f"{option} carries a user name or key before '@': a URL is written to the row, every report and "
                "command.txt; give the server's key with --api-key-env NAME or --api-key-file FILE, and the URL "
                "without it"
            )


def _checked_inputs(args: argparse.Namespace, self_test: bool) -> tuple[list[Workload], str | None, list[str]]:
    """Every option and input checked before anything runs: the workloads, the API key and notes for the plan, or
    a UserError (or a ValidationError of the settings) naming the option and the fix."""
    from ..reference import DEFAULT_MODEL_NAME

    if args.endpoint and not args.model:
        raise BadInput("--endpoint needs --model NAME: the model name the server serves")
    if args.trtmc and args.endpoint:
        raise BadInput("give --trtmc or --endpoint, not both")
    if args.native_url and not args.endpoint:
        raise BadInput(
            "--native-url goes with --endpoint (a --trtmc run starts the checkout's own perf_serving for it)"
        )
    _no_credential_in_urls(args)
    workloads = _workloads(args, self_test)
    _stated(args)
    _settings(args)
    api_key = _api_key(args)
    _check_server_records(args)
    if not 0 < args.startup_timeout < math.inf:  # nan fails both comparisons
        raise BadInput("--startup-timeout must be positive: the seconds a server we start may take to get ready")
    model = args.model if args.endpoint else DEFAULT_MODEL_NAME if self_test else _LONGEST_MODEL_NAME
    notes = _check_bodies(workloads, args, model)
    return workloads, api_key, notes


def run_qualify(args: argparse.Namespace) -> int:
    """Check every input, then print the plan (--dry-run) or run it, write the reports and print the rows."""
    self_test = not args.trtmc and not args.endpoint
    workloads, api_key, notes = _checked_inputs(args, self_test)
    if args.dry_run:
        from .dry_run import dry_run

        return dry_run(args, workloads, self_test, notes, _settings(args))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return print_rows(args, _run(args, workloads, self_test, api_key))


def print_rows(args: argparse.Namespace, rows: list[ResultRow]) -> int:
    """Each row's status in one line, where the report is, and the exit code (--strict: 1 on a failed row)."""
    for row in rows:
        stage = f" at {row.failed_stage}" if row.failed_stage else ""
        reused = " (reused)" if row.reused else ""
        print(f"{row.profile}: {row.status}{stage}{reused} — {row.status_reason}")
    print(f"report: {args.out / 'report.html'}")
    if args.strict and any(row.status == "failed" and row.in_group for row in rows):
        return EXIT_TOOL_ERROR
    return EXIT_OK


def run_with_tools(args: argparse.Namespace, *, comparison: ComparisonRun) -> list[ResultRow]:
    """A comparison run (`trtmc-videoqa compare`): its inputs checked as qualify checks them, then the run."""
    workloads, _, notes = _checked_inputs(args, self_test=False)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return _run(args, workloads, False, None, comparison=comparison)


def _run(
    args: argparse.Namespace,
    workloads: list[Workload],
    self_test: bool,
    api_key: str | None,
    *,
    comparison: ComparisonRun | None = None,
) -> list[ResultRow]:
    """Find aiperf, then under the output lock: the tokenizer, the workloads' artifacts, the rows, the reports."""
    from ..common.output_lock import OutputLock
    from ..common.stop_signals import stop_signals_ignored
    from ..workloads.artifacts import prepare_workload_artifacts

    pins = load_pins()
    aiperf = locate_aiperf(args.aiperf, expected_version=pins.aiperf.version)
    progress = _progress(quiet=args.quiet)
    command = _our_command(sys.argv[1:] if sys.argv[1:2] in (["qualify"], ["compare"]) else ["qualify"])
    if api_key:
        command = command.replace(api_key, API_KEY_PLACEHOLDER)
    with OutputLock(args.out):
        adaptation = ""
        if comparison is not None:  # the server is asked about the copy made for it
            adapted, adaptation = comparison.workload(args.out, workloads[0])
            workloads = [adapted]
        candidates = [args.tokenizer] if args.tokenizer else []
        tokenizer, label = choose_tokenizer(candidates, args.out / "tokenizer")
        facts = {workload.name: prepare_workload_artifacts(args.out, workload) for workload in workloads}
        try:
            with _clip_server(args, workloads) as clip_server:
                tools = _RunTools(aiperf, tokenizer, label, command, progress, api_key, facts, clip_server)
                rows = _rows(args, workloads, tools, self_test, comparison, adaptation)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP: every child is stopped; report what exists
            with stop_signals_ignored():
                _report_and_publish(args, workloads, aiperf.executable, api_key)
            raise
        _report_and_publish(args, workloads, aiperf.executable, api_key)
    return rows


def _rows(
    args: argparse.Namespace,
    workloads: list[Workload],
    tools: _RunTools,
    self_test: bool,
    comparison: ComparisonRun | None,
    adaptation: str,
) -> list[ResultRow]:
    if comparison is not None:
        from .compare import compare_row

        return [compare_row(args, workloads[0], tools, comparison, adaptation)]
    if self_test:
        return _self_test(args, workloads, tools)
    if args.endpoint:
        return [_endpoint(args, workloads[0], tools)]
    return _trtmc(args, workloads[0], tools)


def _report_and_publish(
    args: argparse.Namespace, workloads: list[Workload], aiperf_executable: str, api_key: str | None
) -> None:
    """Every report over the rows that exist, then the artifacts made public-safe and checked (publish.py)."""
    from ..publish.rewrite import publish_run
    from ..report import build_report, frame_strip, write_report

    report = build_report([args.out])
    write_report(report, args.out, frame_strip(report, [args.out]))
    publish_run(args, {workload.name: workload for workload in workloads}, aiperf_executable, api_key)


@contextlib.contextmanager
def _clip_server(args: argparse.Namespace, workloads: list[Workload]) -> Iterator[str | None]:
    """The run's loopback clip server, serving exactly the workloads' clips, while the rows run (its base URL);
    None when the transport needs none. It stops with the block, on an error or SIGINT too."""
    from ..stages.capability import CLIP_SERVER_LOG, clip_routes, needs_clip_server

    if not needs_clip_server(args.video_transport):
        yield None
        return
    from ..serving.clip_server import ClipServer

    with ClipServer(clip_routes(workloads), log_path=args.out / CLIP_SERVER_LOG) as server:
        yield server.base_url


def _endpoint(args: argparse.Namespace, workload: Workload, tools: _RunTools) -> ResultRow:
    from ..ladders.endpoint import qualify_endpoint

    job = make_job(args, workload, tools)
    return qualify_endpoint(
        job,
        url=args.endpoint,
        model=args.model,
        profile=args.model.replace("/", "--"),
        stated=_stated(args),
        server_records=args.server_records,
        native_url=args.native_url,
    )


def _trtmc(args: argparse.Namespace, workload: Workload, tools: _RunTools) -> list[ResultRow]:
    from ..inventory import run_inventory
    from ..inventory.markdown import render_inventory_markdown
    from ..ladders.trtmc_rows import qualify_inventory
    from ..trtmc.commands import find_toolchain

    inventory = run_inventory(args.trtmc)
    write_model_atomic(args.out / "inventory.json", inventory)
    write_text_atomic(args.out / "inventory.md", render_inventory_markdown(inventory))
    known = {e.profile for e in inventory.entries}
    unknown = sorted(set(args.profile or []) - known)
    if unknown:
        raise BadInput(
            f"--profile {', '.join(unknown)} not in the inventory of {args.trtmc}; see inventory.md for the profiles"
        )
    job = make_job(args, workload, tools)
    return qualify_inventory(job, inventory, args.trtmc.resolve(), find_toolchain(), args.profile)


def _self_test(args: argparse.Namespace, workloads: list[Workload], tools: _RunTools) -> list[ResultRow]:
    """Start the reference endpoint (a test double) once, qualify it on every self-test workload, stop it. What it
    is expected to answer, and that its native route is checked too, is the self-test plan's (data, not code)."""
    from ..ladders.endpoint import qualify_endpoint, row_key
    from ..plan.cache_keys import reusable
    from ..plan.self_test import load_self_test_plan
    from ..reference import DEFAULT_MODEL_NAME, DEFAULT_SAMPLING_POLICY

    plan = load_self_test_plan()
    # The endpoint samples with the workloads' own declared policy where they share one, so the row's resolved
    # frames and strip are the frames it really looks at.
    firsts = {workload.sampling_policies()[0].spec for workload in workloads}
    policy = firsts.pop() if len(firsts) == 1 else DEFAULT_SAMPLING_POLICY
    stated = {"sampling_policy": policy, "sampling_where": "server", "media_cache": "none"}
    jobs = [make_job(args, workload, tools) for workload in workloads]
    profiles = [f"{SELF_TEST_PREFIX}.{workload.name}" for workload in workloads]

    native_key = "self" if plan.native_route else None  # its own URL, which changes every run

    def key(job: QualifyJob) -> str:  # as qualify_endpoint makes it: same inputs, the row is reused
        declared = plan.declared_for(job.workload.name)
        return row_key(
            job, identity=plan.server, model=DEFAULT_MODEL_NAME, stated=stated, native=native_key, declared=declared
        )

    previous = [reusable(job.row_dir(p), key(job), args.force) for job, p in zip(jobs, profiles, strict=True)]
    if all(previous):  # nothing changed: no server, no AIPerf (and none of their imports)
        return [row for row in previous if row is not None]
    from ..reference import ReferenceConfig, argv_for_subprocess, serve_command
    from ..serving.process import ServerProcess, free_loopback_port

    port = free_loopback_port()
    records = args.out / "private" / "reference" / "records.jsonl"  # raw, as is its server.log beside it
    records.parent.mkdir(parents=True, exist_ok=True)
    config = ReferenceConfig(port=port, records_path=records, max_body_bytes=args.body_limit, sampling_policy=policy)
    url = f"http://127.0.0.1:{port}"
    tools.progress(f"starting the reference endpoint on {url}")
    with ServerProcess(
        argv_for_subprocess(config), url=url, log_path=records.parent / "server.log", startup_timeout_s=60
    ) as server:
        return [
            qualify_endpoint(
                job,
                url=url,
                model=DEFAULT_MODEL_NAME,
                profile=profile,
                stated=stated,
                identity=plan.server,
                reference_self_test=True,
                server_records=records,
                alive=lambda: server.alive,
                native_url=url if plan.native_route else None,
                native_key=native_key,
                declared_no_answer=plan.declared_for(job.workload.name),
                serve_command=serve_command(config),
            )
            for job, profile in zip(jobs, profiles, strict=True)
        ]
