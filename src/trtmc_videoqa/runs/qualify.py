"""`qualify`'s run, read top to bottom: open the run (`owner.py`: the lock, the tools), ready its workloads, let one
of its three row sources (a TRTMC checkout, an endpoint, the self-test) make the rows, then the run's finish (the
report and the public check, always). The reference endpoint is started for the self-test only when a row must be
measured."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import reference, serving  # rooms that load their web stack and http client on first use
from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.errors import BadInput
from ..ladders.endpoint import qualify_endpoint
from ..plan.cache_keys import endpoint_key, reusable
from ..plan.endpoint_target import EndpointTarget, LiveEndpoint
from ..plan.job import QualifyJob
from ..plan.self_test import load_self_test_plan
from ..plan.trtmc_checks import row_names
from ..reference import DEFAULT_MODEL_NAME
from ..results import RecordedCommand, ResultRow
from ..results.layout import INVENTORY_FILE, INVENTORY_MD, REFERENCE_LOG, REFERENCE_RECORDS
from ..trtmc.commands import find_toolchain
from .inputs import LONGEST_MODEL_NAME, checked_run_inputs
from .owner import RunConsole, RunOutcome, RunTools, owned_run
from .requests import QualifyRequest

if TYPE_CHECKING:
    from ..workloads import Workload

SELF_TEST_PREFIX = "reference-self-test"


def qualify_inputs(request: QualifyRequest) -> tuple[list[Workload], str | None, list[str]]:
    """The workloads, the API key and the notes for the plan, every input checked before anything runs."""
    model = request.model if request.endpoint else DEFAULT_MODEL_NAME if request.self_test else LONGEST_MODEL_NAME
    return checked_run_inputs(request, self_test=request.self_test, model=model or "")


def run_qualify(
    request: QualifyRequest, workloads: list[Workload], api_key: str | None, console: RunConsole, argv: list[str]
) -> RunOutcome:
    """The run opened, its rows made by the way in the request names, and the run's finish (always)."""
    with owned_run(request, workloads, api_key, console, argv=argv) as run:
        run.rows = qualify_rows(request, workloads, run.tools)
    assert run.outcome is not None  # set as the run finished; an exception would have left the block
    return run.outcome


def qualify_rows(request: QualifyRequest, workloads: list[Workload], tools: RunTools) -> list[ResultRow]:
    """The rows of the way in: an endpoint (--url always comes with --model), a TRTMC checkout, else the
    self-test."""
    if request.endpoint and request.model:
        return _endpoint(request, request.endpoint, request.model, workloads[0], tools)
    if request.trtmc is not None:
        return _trtmc(request, request.trtmc, workloads[0], tools)
    return _self_test(request, workloads, tools)


def endpoint_rows(
    pairs: list[tuple[QualifyJob, EndpointTarget]], server: AbstractContextManager[LiveEndpoint]
) -> list[ResultRow]:
    """Each row reused where its key is unchanged (said on the progress line); `server`, not yet entered, is
    entered only when a row must be measured: no server, no AIPerf (and none of their imports) otherwise."""
    keyed = []
    for job, target in pairs:
        key = endpoint_key(job, target)
        reused = reusable(job.row_dir(target.profile), key, job.force)
        if reused is not None:
            job.progress(f"{target.profile}: unchanged inputs, result reused")
        keyed.append((job, target, key, reused))
    if all(reused for *_, reused in keyed):
        return [reused for *_, reused in keyed if reused is not None]
    with server as live:
        return [reused or qualify_endpoint(job, target, live, key) for job, target, key, reused in keyed]


def _endpoint(request: QualifyRequest, url: str, model: str, workload: Workload, tools: RunTools) -> list[ResultRow]:
    """A server the user runs: nothing to start, so every row is measured through it at once."""
    folder = request.model_dir()  # a local folder's path: the row is named by the folder
    target = EndpointTarget(
        profile=folder.name if folder is not None else model.replace("/", "--"),
        model=model,
        identity=url,
        stated=request.server_settings,
        native_key=request.native_url,
    )
    live = LiveEndpoint(url=url, records=request.server_records, native_url=request.native_url)
    return endpoint_rows([(tools.jobs[workload.name], target)], contextlib.nullcontext(live))


def _trtmc(request: QualifyRequest, trtmc: Path, workload: Workload, tools: RunTools) -> list[ResultRow]:
    """The checkout's inventory written, the profiles named checked against it, then its rows' ladders."""
    # lazy: the audit and the TRTMC ladder load the inventory's schemas, which no other way in needs
    from ..inventory import run_inventory
    from ..inventory.markdown import render_inventory_markdown
    from ..ladders.trtmc_rows import inventory_digest, qualify_inventory

    inventory = run_inventory(trtmc)
    written = write_model_atomic(request.out / INVENTORY_FILE, inventory)
    write_text_atomic(request.out / INVENTORY_MD, render_inventory_markdown(inventory))
    known = {e.profile for e in inventory.entries} | set(row_names(inventory.entries).values())
    unknown = sorted(set(request.profiles or []) - known)
    if unknown:
        raise BadInput(
            f"--profile {', '.join(unknown)} not in the inventory of {trtmc}; see inventory.md for the profiles"
        )
    job = replace(tools.jobs[workload.name], inventory_digest=inventory_digest(written, inventory))
    return qualify_inventory(job, inventory, trtmc.resolve(), find_toolchain(), request.profiles)


def _self_test(request: QualifyRequest, workloads: list[Workload], tools: RunTools) -> list[ResultRow]:
    """The reference endpoint (a test double), started once when a row must be measured, qualified on every
    self-test workload, stopped. What it is expected to answer, and that its native route is checked too, is the
    self-test plan's (data, not code)."""
    plan = load_self_test_plan()
    # The endpoint samples with the workloads' own declared policy where they share one, so the row's resolved
    # frames and strip are the frames it really looks at.
    firsts = {workload.sampling_policies()[0].spec for workload in workloads}
    policy = firsts.pop() if len(firsts) == 1 else reference.DEFAULT_SAMPLING_POLICY
    stated = {"sampling_policy": policy, "sampling_where": "server", "media_cache": "none"}
    targets = [
        EndpointTarget(
            profile=f"{SELF_TEST_PREFIX}.{workload.name}",
            model=DEFAULT_MODEL_NAME,
            identity=plan.server,
            stated=stated,
            native_key="self" if plan.native_route else None,  # its own URL, which changes every run
            declared_no_answer=plan.declared_for(workload.name),
            reference_self_test=True,
        )
        for workload in workloads
    ]
    pairs = [(tools.jobs[workload.name], target) for workload, target in zip(workloads, targets, strict=True)]
    return endpoint_rows(pairs, _reference_endpoint(request, policy, plan.native_route, tools))


@contextlib.contextmanager
def _reference_endpoint(
    request: QualifyRequest, policy: str, native_route: bool, tools: RunTools
) -> Iterator[LiveEndpoint]:
    """The self-test's reference endpoint on a free loopback port, its records file and server.log under
    private/, running while the block runs."""
    records = request.out / REFERENCE_RECORDS
    records.parent.mkdir(parents=True, exist_ok=True)
    config = reference.ReferenceConfig(
        port=serving.free_loopback_port(),
        records_path=records,
        max_body_bytes=request.settings.body_limit,
        sampling_policy=policy,
        stream=request.settings.streaming,  # --streaming on the self-test: its endpoint streams
    )
    url = f"http://127.0.0.1:{config.port}"
    tools.progress(f"starting the reference endpoint on {url}")
    log = request.out / REFERENCE_LOG
    with serving.ServerProcess(
        reference.argv_for_subprocess(config), url=url, log_path=log, startup_timeout_s=60
    ) as server:
        yield LiveEndpoint(
            url=url,
            records=records,
            alive=server.alive,
            native_url=url if native_route else None,
            serve_command=RecordedCommand.of(reference.serve_command(config)),
        )
