"""`trtmc-videoqa qualify`: the three ways in (a TRTMC checkout, an endpoint, the self-test), then the reports.

This is the edge: it starts the reference endpoint for the self-test; the run's machinery (the output lock, the
tools, the reports) is `run_tools`'s, shared with `compare`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.errors import BadInput
from ..common.text_escape import one_line
from ..results import ResultRow
from ..results.layout import PRIVATE_DIR
from .requests import QualifyRequest
from .run_inputs import LONGEST_MODEL_NAME, checked_run_inputs
from .run_tools import RunTools, make_job, print_rows, run_with_tools

if TYPE_CHECKING:
    from ..plan.job import QualifyJob
    from ..reference import ReferenceConfig
    from ..workloads import Workload

SELF_TEST_PREFIX = "reference-self-test"


def run_qualify(request: QualifyRequest) -> int:
    """Check every input, then print the plan (--dry-run) or run it, write the reports and print the rows."""
    from ..reference import DEFAULT_MODEL_NAME

    model = request.model if request.endpoint else DEFAULT_MODEL_NAME if request.self_test else LONGEST_MODEL_NAME
    workloads, api_key, notes = checked_run_inputs(request, self_test=request.self_test, model=model or "")
    if request.dry_run:
        from .dry_run import dry_run

        return dry_run(request, workloads, notes)
    for note in notes:
        print(f"note: {one_line(note)}", file=sys.stderr)

    def make_rows(workloads: list[Workload], tools: RunTools) -> list[ResultRow]:
        if request.endpoint and request.model:  # from_cli: --endpoint always comes with --model
            return [_endpoint(request, request.endpoint, request.model, workloads[0], tools)]
        if request.trtmc is not None:
            return _trtmc(request, request.trtmc, workloads[0], tools)
        return _self_test(request, workloads, tools)

    return print_rows(request, run_with_tools(request, workloads, api_key, make_rows))


def _endpoint(request: QualifyRequest, url: str, model: str, workload: Workload, tools: RunTools) -> ResultRow:
    from ..ladders.endpoint import EndpointTarget, qualify_endpoint

    job = make_job(request, workload, tools)
    return qualify_endpoint(
        job,
        EndpointTarget(
            url=url,
            model=model,
            profile=model.replace("/", "--"),
            stated=request.server_settings,
            server_records=request.server_records,
            native_url=request.native_url,
        ),
    )


def _trtmc(request: QualifyRequest, trtmc: Path, workload: Workload, tools: RunTools) -> list[ResultRow]:
    from ..inventory import run_inventory
    from ..inventory.markdown import render_inventory_markdown
    from ..ladders.trtmc_rows import qualify_inventory
    from ..trtmc.commands import find_toolchain

    inventory = run_inventory(trtmc)
    write_model_atomic(request.out / "inventory.json", inventory)
    write_text_atomic(request.out / "inventory.md", render_inventory_markdown(inventory))
    known = {e.profile for e in inventory.entries}
    unknown = sorted(set(request.profiles or []) - known)
    if unknown:
        raise BadInput(
            f"--profile {', '.join(unknown)} not in the inventory of {trtmc}; see inventory.md for the profiles"
        )
    job = make_job(request, workload, tools)
    return qualify_inventory(job, inventory, trtmc.resolve(), find_toolchain(), request.profiles)


def _self_test(request: QualifyRequest, workloads: list[Workload], tools: RunTools) -> list[ResultRow]:
    """Start the reference endpoint (a test double) once, qualify it on every self-test workload, stop it. What it
    is expected to answer, and that its native route is checked too, is the self-test plan's (data, not code)."""
    from ..ladders.endpoint import EndpointTarget, qualify_endpoint, row_key
    from ..plan.cache_keys import reusable
    from ..plan.self_test import load_self_test_plan
    from ..reference import DEFAULT_MODEL_NAME, DEFAULT_SAMPLING_POLICY

    plan = load_self_test_plan()
    # The endpoint samples with the workloads' own declared policy where they share one, so the row's resolved
    # frames and strip are the frames it really looks at.
    firsts = {workload.sampling_policies()[0].spec for workload in workloads}
    policy = firsts.pop() if len(firsts) == 1 else DEFAULT_SAMPLING_POLICY
    stated = {"sampling_policy": policy, "sampling_where": "server", "media_cache": "none"}
    jobs = [make_job(request, workload, tools) for workload in workloads]
    profiles = [f"{SELF_TEST_PREFIX}.{workload.name}" for workload in workloads]

    native_key = "self" if plan.native_route else None  # its own URL, which changes every run

    def key(job: QualifyJob) -> str:  # as qualify_endpoint makes it: same inputs, the row is reused
        declared = plan.declared_for(job.workload.name)
        return row_key(
            job, identity=plan.server, model=DEFAULT_MODEL_NAME, stated=stated, native=native_key, declared=declared
        )

    previous = [reusable(job.row_dir(p), key(job), request.force) for job, p in zip(jobs, profiles, strict=True)]
    if all(previous):  # nothing changed: no server, no AIPerf (and none of their imports)
        return [row for row in previous if row is not None]
    from ..reference import argv_for_subprocess, serve_command
    from ..serving.process import ServerProcess

    config, records = _reference_config(request.out, request.settings.body_limit, policy)
    url = f"http://127.0.0.1:{config.port}"
    tools.progress(f"starting the reference endpoint on {url}")
    with ServerProcess(
        argv_for_subprocess(config), url=url, log_path=records.parent / "server.log", startup_timeout_s=60
    ) as server:
        return [
            qualify_endpoint(
                job,
                EndpointTarget(
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
                ),
            )
            for job, profile in zip(jobs, profiles, strict=True)
        ]


def _reference_config(out: Path, body_limit: int, policy: str) -> tuple[ReferenceConfig, Path]:
    """The self-test's reference endpoint: a free loopback port, and its records file (raw, as is its server.log
    beside it, under private/)."""
    from ..reference import ReferenceConfig
    from ..serving.process import free_loopback_port

    records = out / PRIVATE_DIR / "reference" / "records.jsonl"
    records.parent.mkdir(parents=True, exist_ok=True)
    config = ReferenceConfig(
        port=free_loopback_port(), records_path=records, max_body_bytes=body_limit, sampling_policy=policy
    )
    return config, records


def cmd_qualify(args: argparse.Namespace) -> int:
    return run_qualify(QualifyRequest.from_cli(args))


def add_arguments(qualify: argparse.ArgumentParser) -> None:
    """The `qualify` command's options; its handler."""
    from .qualify_args import add_qualify_arguments, settings_options

    qualify.description = (
        "Run the step chain for every capable checkpoint of a TRTMC checkout (--trtmc), or for an "
        "already running video chat server (--endpoint); with neither, the self-test against the "
        "reference endpoint (a test double). Writes result rows and the reports."
    )
    add_qualify_arguments(qualify)
    qualify.set_defaults(handler=cmd_qualify, option_for_field=settings_options())
