"""`trtmc-videoqa qualify`: the three ways in (a TRTMC checkout, an endpoint, the self-test), then the reports.

This is the edge: it starts the reference endpoint for the self-test, takes the output lock, renders progress.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from .aiperf.command import API_KEY_PLACEHOLDER
from .aiperf.locate import AiperfProblem, locate_aiperf
from .aiperf.tokenizer import choose_tokenizer
from .atomic_write import write_model_atomic, write_text_atomic
from .pins import load_pins
from .results import ResultRow

SELF_TEST_WORKLOADS = ("synthetic", "bigbuckbunny")
SELF_TEST_PREFIX = "reference-self-test"
# The reference endpoint answers only the synthetic questions; about a real clip its expected answer is this.
CANNOT_TELL = "the reference endpoint (a test double) cannot tell what happens in a real clip, and says so"
EXIT_OK, EXIT_TOOL_ERROR, EXIT_BAD_INPUT = 0, 1, 2


def add_qualify_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("what to qualify (default: the reference self-test)")
    source.add_argument("--trtmc", type=Path, metavar="PATH", help="a TRTMC checkout: every capable checkpoint")
    source.add_argument("--profile", action="append", metavar="NAME", help="only this profile (repeatable)")
    source.add_argument("--endpoint", metavar="URL", help="an already running OpenAI-compatible video chat server")
    source.add_argument("--model", metavar="NAME", help="the model name to send to --endpoint")
    source.add_argument(
        "--server-records",
        type=Path,
        metavar="FILE",
        help="the per-request records file --endpoint's server writes (trtmc-server --records), "
        "read after the run for the server's task time when responses carry none",
    )
    source.add_argument(
        "--server-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server-side sampling or media-cache setting of --endpoint, recorded as stated",
    )
    run = parser.add_argument_group("the run")
    run.add_argument(
        "--workload",
        metavar="FILE|NAME",
        help="a workload file, or a built-in name "
        "(default: bigbuckbunny; the self-test uses synthetic and bigbuckbunny)",
    )
    run.add_argument("--out", type=Path, default=Path("artifacts"), metavar="DIR", help="artifact directory")
    run.add_argument("--repeats", type=int, default=5, help="times each (question, clip) is sent (default 5)")
    run.add_argument("--warmup", type=int, default=2, help="warmup requests, kept out of the results (default 2)")
    run.add_argument("--concurrency", type=int, default=1, help="concurrent requests (default 1)")
    run.add_argument("--request-timeout", type=float, default=60.0, help="seconds per request (default 60)")
    run.add_argument("--aiperf-wall-limit", type=float, default=900.0, help="seconds for one AIPerf run")
    run.add_argument(
        "--body-limit",
        type=int,
        default=4 * 1024 * 1024,
        help="the server's --max-body-bytes, large enough for the clip (default 4 MiB)",
    )
    run.add_argument("--aiperf", metavar="PATH", help="the aiperf executable (default: $TRTMC_VIDEOQA_AIPERF, PATH)")
    run.add_argument("--tokenizer", type=Path, metavar="DIR", help="a local tokenizer directory for AIPerf")
    run.add_argument(
        "--api-key-env",
        default="TRTMC_SERVE_TOKEN",
        metavar="NAME",
        help="environment variable holding the server's API key, if any (never written anywhere)",
    )
    run.add_argument(
        "--api-key-file",
        type=Path,
        metavar="PATH",
        help="a file holding the server's API key (first line; never written anywhere); wins over --api-key-env",
    )
    run.add_argument(
        "--startup-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds a server we start may take to get ready (default 600)",
    )
    run.add_argument("--bundle-cache", type=Path, metavar="DIR", help="where built bundles are kept")
    run.add_argument("--force", action="store_true", help="measure again even where inputs are unchanged")
    run.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    run.add_argument("--quiet", action="store_true", help="no progress lines (also when CI is set or on no terminal)")
    run.add_argument("--strict", action="store_true", help="exit 1 when an in-group row failed")


class _BadInput(Exception):
    pass


def _progress(quiet: bool):
    # A terminal sees progress, with the time since the start; a CI log (CI set, or no terminal) stays quiet.
    if quiet or os.environ.get("CI") or not sys.stderr.isatty():
        return lambda _: None
    start = time.monotonic()
    return lambda message: print(f"  [{time.monotonic() - start:6.1f} s] {message}", file=sys.stderr, flush=True)


def _settings(args: argparse.Namespace):
    from .endpoint_run import RunSettings

    if args.repeats < 1 or args.warmup < 0 or args.concurrency < 1:
        raise _BadInput("--repeats and --concurrency must be at least 1 and --warmup at least 0")
    return RunSettings(
        repeats=args.repeats,
        warmup=args.warmup,
        concurrency=args.concurrency,
        request_timeout_s=args.request_timeout,
        aiperf_wall_limit_s=args.aiperf_wall_limit,
        body_limit=args.body_limit,
    )


def _stated(args: argparse.Namespace) -> dict[str, str]:
    stated = {}
    for item in args.server_setting:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _BadInput(f"--server-setting {item!r} is not KEY=VALUE")
        stated[key] = value
    return stated


def _our_command(argv: list[str]) -> str:
    return " ".join(shlex.quote(part) for part in ["trtmc-videoqa", *argv])


def _workloads(args: argparse.Namespace, self_test: bool):
    from .workloads import WorkloadError, load_workload

    names = [args.workload] if args.workload else (list(SELF_TEST_WORKLOADS) if self_test else ["bigbuckbunny"])
    try:
        return [load_workload(name) for name in names]
    except WorkloadError as error:
        raise _BadInput(str(error)) from None


def _api_key(args: argparse.Namespace) -> str | None:
    """The server's API key: from --api-key-file (its first line), else from the --api-key-env variable."""
    if args.api_key_file is not None:
        try:
            text = args.api_key_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or type(error).__name__
            raise _BadInput(
                f"--api-key-file {args.api_key_file} cannot be read ({reason}); "
                "give a readable file holding the key on its first line"
            ) from None
        key = text.strip().splitlines()[0].strip() if text.strip() else ""
        if not key:
            raise _BadInput(f"--api-key-file {args.api_key_file} is empty; put the key on its first line")
        return key
    return os.environ.get(args.api_key_env) or None


def _job(args, workload, aiperf, tokenizer, label, command, progress, api_key=None):
    from .qualify import QualifyJob

    job = QualifyJob(
        out=args.out,
        workload=workload,
        settings=_settings(args),
        aiperf=aiperf,
        tokenizer=tokenizer,
        tokenizer_label=label,
        command=command,
        force=args.force,
        api_key=api_key,
        bundle_cache=args.bundle_cache,
        progress=progress,
    )
    job.stage_timeouts["startup"] = args.startup_timeout
    return job


# The model name in the body-size check when it is not known before the server runs (TRTMC: the served id).
_LONGEST_MODEL_NAME = "m" * 128


def _check_bodies(workloads, args: argparse.Namespace, model: str) -> None:
    """Every clip's request body must fit the server's body limit: refused here, before anything is sent."""
    from .media import ClipError, check_body_limit, predicted_body_size

    settings = _settings(args)
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
            )
            try:
                check_body_limit(size, settings.body_limit, clip=workload.clip_path(clip.id))
            except ClipError as error:
                raise _BadInput(
                    f"workload {workload.name!r}: {error} (the limit is --body-limit "
                    f"{settings.body_limit}: raise it together with the server's --max-body-bytes)"
                ) from None


def _dry_run(args: argparse.Namespace, workloads, self_test: bool) -> int:
    """The plan the real run would follow, by the same rules (variant holds, unknown profiles refused)."""
    from .cli import BadInput

    settings = _settings(args)
    print(f"workload(s): {', '.join(f'{w.name} ({w.digest[:12]})' for w in workloads)}")
    for workload in workloads:
        rows = len(workload.spec.questions) * len(workload.spec.clips) * settings.repeats
        print(
            f"per checkpoint on {workload.name}: capability check, then aiperf {settings.warmup} warmup + {rows} "
            f"profiling requests (every question on every clip, {settings.repeats} times), then grading"
        )
    if self_test:
        print(
            "target: the reference endpoint (a test double) on loopback; endpoint ladder planned -> endpoint-qualified"
        )
    elif args.endpoint:
        print(f"target: {args.endpoint} model {args.model}; endpoint ladder planned -> endpoint-qualified")
    else:
        from .inventory import NotACheckout, run_inventory
        from .qualify import variant_hold

        try:
            inventory = run_inventory(args.trtmc)
        except NotACheckout as error:
            raise BadInput(str(error)) from None
        unknown = sorted(set(args.profile or []) - {e.profile for e in inventory.entries})
        if unknown:
            raise BadInput(f"--profile {', '.join(unknown)} not in the inventory of {args.trtmc}")
        for entry in inventory.entries:
            if entry.in_group and (not args.profile or entry.profile in args.profile):
                held = variant_hold(entry, chosen=bool(args.profile and entry.profile in args.profile))
                if entry.verdict != "temporal-video-qa":
                    steps = f"unsupported: {entry.gap}"
                elif held is not None:
                    steps = f"{held.status}: {held.status_reason}"
                else:
                    steps = "build -> correctness -> serve -> capability -> aiperf -> grading"
                print(f"  {entry.profile}: {steps}")
    return EXIT_OK


def run_qualify(args: argparse.Namespace) -> int:
    from .cli import BadInput
    from .qualify import OutputBusy, OutputLock, WorkloadClipError, prepare_workload_artifacts
    from .report import build_report, frame_strip, write_report

    self_test = not args.trtmc and not args.endpoint
    if args.endpoint and not args.model:
        raise BadInput("--endpoint needs --model NAME: the model name the server serves")
    if args.trtmc and args.endpoint:
        raise BadInput("give --trtmc or --endpoint, not both")
    try:
        workloads = _workloads(args, self_test)
        _stated(args), _settings(args)
        api_key = _api_key(args)
        if args.server_records is not None and not args.endpoint:
            raise _BadInput(
                "--server-records goes with --endpoint (trtmc-server's records are read by --trtmc runs themselves)"
            )
        if args.server_records is not None and not args.server_records.is_file():
            raise _BadInput(
                f"--server-records {args.server_records}: no such file; give the file the server writes "
                "its per-request records to (trtmc-server --records FILE)"
            )
        if args.startup_timeout <= 0 or args.request_timeout <= 0 or args.body_limit <= 0:
            raise _BadInput("--startup-timeout, --request-timeout and --body-limit must be positive")
        from .reference import DEFAULT_MODEL_NAME

        _check_bodies(
            workloads, args, args.model if args.endpoint else DEFAULT_MODEL_NAME if self_test else _LONGEST_MODEL_NAME
        )
    except _BadInput as error:
        raise BadInput(str(error)) from None
    if args.dry_run:
        return _dry_run(args, workloads, self_test)
    pins = load_pins()
    try:
        aiperf = locate_aiperf(args.aiperf, expected_version=pins.aiperf.version)
    except AiperfProblem as problem:
        raise BadInput(str(problem)) from None
    progress = _progress(quiet=args.quiet)
    command = _our_command(sys.argv[1:] if sys.argv[1:2] == ["qualify"] else ["qualify"])
    if api_key:
        command = command.replace(api_key, API_KEY_PLACEHOLDER)
    try:
        with OutputLock(args.out):
            candidates = [args.tokenizer] if args.tokenizer else []
            tokenizer, label = choose_tokenizer(candidates, args.out / "tokenizer")
            for workload in workloads:
                prepare_workload_artifacts(args.out, workload)
            if self_test:
                rows = _self_test(args, workloads, aiperf, tokenizer, label, command, progress, api_key)
            elif args.endpoint:
                job = _job(args, workloads[0], aiperf, tokenizer, label, command, progress, api_key)
                from .qualify import qualify_endpoint

                profile = args.model.replace("/", "--")
                rows = [
                    qualify_endpoint(
                        job,
                        url=args.endpoint,
                        model=args.model,
                        profile=profile,
                        stated=_stated(args),
                        server_records=args.server_records,
                    )
                ]
            else:
                rows = _trtmc(args, workloads[0], aiperf, tokenizer, label, command, progress, api_key)
            report = build_report([args.out])
            write_report(report, args.out, frame_strip(report, [args.out]))
    except (OutputBusy, WorkloadClipError) as error:
        raise BadInput(str(error)) from None
    for row in rows:
        stage = f" at {row.failed_stage}" if row.failed_stage else ""
        reused = " (reused)" if row.reused else ""
        print(f"{row.profile}: {row.status}{stage}{reused} — {row.status_reason}")
    print(f"report: {args.out / 'report.html'}")
    if args.strict and any(row.status == "failed" and row.in_group for row in rows):
        return EXIT_TOOL_ERROR
    return EXIT_OK


def _trtmc(args, workload, aiperf, tokenizer, label, command, progress, api_key) -> list[ResultRow]:
    from .cli import BadInput
    from .inventory import NotACheckout, run_inventory
    from .inventory.markdown import render_inventory_markdown
    from .qualify import qualify_inventory
    from .trtmc_steps import find_toolchain

    try:
        inventory = run_inventory(args.trtmc)
    except NotACheckout as error:
        raise BadInput(str(error)) from None
    write_model_atomic(args.out / "inventory.json", inventory)
    write_text_atomic(args.out / "inventory.md", render_inventory_markdown(inventory))
    known = {e.profile for e in inventory.entries}
    unknown = sorted(set(args.profile or []) - known)
    if unknown:
        raise BadInput(
            f"--profile {', '.join(unknown)} not in the inventory of {args.trtmc}; see inventory.md for the profiles"
        )
    job = _job(args, workload, aiperf, tokenizer, label, command, progress, api_key)
    return qualify_inventory(job, inventory, args.trtmc.resolve(), find_toolchain(), args.profile)


def _self_test(args, workloads, aiperf, tokenizer, label, command, progress, api_key) -> list[ResultRow]:
    """Start the reference endpoint (a test double) once, qualify it on every self-test workload, stop it."""
    from .qualify import endpoint_key, qualify_endpoint, reusable
    from .reference import DEFAULT_MODEL_NAME, DEFAULT_SAMPLING_POLICY

    identity = "reference endpoint of trtmc-videoqa (test double)"
    # The endpoint samples with the workloads' own declared policy where they share one, so the row's resolved
    # frames and strip are the frames it really looks at.
    firsts = {workload.sampling_policies()[0].spec for workload in workloads}
    policy = firsts.pop() if len(firsts) == 1 else DEFAULT_SAMPLING_POLICY
    stated = {"sampling_policy": policy, "sampling_where": "server", "media_cache": "none"}
    jobs = [_job(args, workload, aiperf, tokenizer, label, command, progress, api_key) for workload in workloads]
    profiles = [f"{SELF_TEST_PREFIX}.{workload.name}" for workload in workloads]
    previous = [
        reusable(
            job.row_dir(profile),
            endpoint_key(job, identity=identity, model=DEFAULT_MODEL_NAME, stated=stated),
            args.force,
        )
        for job, profile in zip(jobs, profiles)
    ]
    if all(previous):  # nothing changed: no server, no AIPerf (and none of their imports)
        return [row for row in previous if row is not None]
    from .reference import ReferenceConfig, argv_for_subprocess
    from .serving.process import ServerProcess, free_loopback_port

    port = free_loopback_port()
    records = args.out / "reference" / "records.jsonl"
    records.parent.mkdir(parents=True, exist_ok=True)
    config = ReferenceConfig(port=port, records_path=records, max_body_bytes=args.body_limit, sampling_policy=policy)
    url = f"http://127.0.0.1:{port}"
    progress(f"starting the reference endpoint on {url}")
    with ServerProcess(
        argv_for_subprocess(config), url=url, log_path=args.out / "reference" / "server.log", startup_timeout_s=60
    ) as server:
        return [
            qualify_endpoint(
                job,
                url=url,
                model=DEFAULT_MODEL_NAME,
                profile=profile,
                stated=stated,
                identity=identity,
                reference_self_test=True,
                server_records=records,
                alive=lambda: server.alive,
                transport_only=None if job.workload.name == "synthetic" else CANNOT_TELL,
            )
            for job, profile in zip(jobs, profiles)
        ]
