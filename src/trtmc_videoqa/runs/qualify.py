"""`qualify`'s run: its three ways in (a TRTMC checkout, an endpoint, the self-test), each row's ladder, and the
reference endpoint started for the self-test, only when a row must be measured. The owner (`owner.py`) holds the
lock and the tools and always ends in the report and the public check."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.errors import BadInput
from ..results import RecordedCommand, ResultRow
from ..results.layout import INVENTORY_FILE, INVENTORY_MD, REFERENCE_LOG, REFERENCE_RECORDS
from .inputs import LONGEST_MODEL_NAME, checked_run_inputs
from .owner import RunConsole, RunOutcome, RunTools, owned_run
from .requests import QualifyRequest

if TYPE_CHECKING:
    from ..ladders.endpoint import LiveEndpoint
    from ..plan.endpoint_target import EndpointTarget
    from ..plan.job import QualifyJob
    from ..reference import ReferenceConfig
    from ..workloads import Workload

SELF_TEST_PREFIX = "reference-self-test"

# The server of a group of endpoint rows, started only when one of them must be measured: entered, it gives each
# row's live endpoint.
Serve = Callable[[], AbstractContextManager[Callable[["EndpointTarget"], "LiveEndpoint"]]]


def qualify_inputs(request: QualifyRequest) -> tuple[list[Workload], str | None, list[str]]:
    """The workloads, the API key and the notes for the plan, every input checked before anything runs."""
    from ..reference import DEFAULT_MODEL_NAME

    model = request.model if request.endpoint else DEFAULT_MODEL_NAME if request.self_test else LONGEST_MODEL_NAME
    return checked_run_inputs(request, self_test=request.self_test, model=model or "")


def run_qualify(
    request: QualifyRequest, workloads: list[Workload], api_key: str | None, console: RunConsole, argv: list[str]
) -> RunOutcome:
    """The run, its rows, the reports and the public check."""

    def make_rows(workloads: list[Workload], tools: RunTools) -> list[ResultRow]:
        if request.endpoint and request.model:  # the request: --endpoint always comes with --model
            return _endpoint(request, request.endpoint, request.model, workloads[0], tools)
        if request.trtmc is not None:
            return _trtmc(request, request.trtmc, workloads[0], tools)
        return _self_test(request, workloads, tools)

    return owned_run(request, workloads, api_key, make_rows, console, argv=argv)


def endpoint_rows(pairs: list[tuple[QualifyJob, EndpointTarget]], serve: Serve) -> list[ResultRow]:
    """Each row reused where its inputs are unchanged; the server started only when one must be measured, and the
    others measured through it, in order."""
    from ..ladders.endpoint import qualify_endpoint
    from ..plan.cache_keys import endpoint_key, reusable

    keyed = [(job, target, endpoint_key(job, target)) for job, target in pairs]
    previous = [reusable(job.row_dir(target.profile), key, job.force) for job, target, key in keyed]
    for (job, target, _), row in zip(keyed, previous, strict=True):
        if row is not None:
            job.progress(f"{target.profile}: unchanged inputs, result reused")
    if all(previous):  # nothing changed: no server, no AIPerf (and none of their imports)
        return [row for row in previous if row is not None]
    with serve() as live:
        return [
            row if row is not None else qualify_endpoint(job, target, live(target), key)
            for (job, target, key), row in zip(keyed, previous, strict=True)
        ]


def _endpoint(request: QualifyRequest, url: str, model: str, workload: Workload, tools: RunTools) -> list[ResultRow]:
    from contextlib import nullcontext

    from ..ladders.endpoint import LiveEndpoint
    from ..plan.endpoint_target import EndpointTarget

    folder = request.model_dir()  # a local folder's path: the row is named by the folder
    target = EndpointTarget(
        profile=folder.name if folder is not None else model.replace("/", "--"),
        model=model,
        identity=url,
        stated=request.server_settings,
        native_key=request.native_url,
    )
    live = LiveEndpoint(url=url, records=request.server_records, native_url=request.native_url)
    return endpoint_rows([(tools.job(request, workload), target)], lambda: nullcontext(lambda _: live))


def _trtmc(request: QualifyRequest, trtmc: Path, workload: Workload, tools: RunTools) -> list[ResultRow]:
    from ..inventory import run_inventory
    from ..inventory.markdown import render_inventory_markdown
    from ..ladders.trtmc_rows import inventory_digest, qualify_inventory
    from ..plan.trtmc_checks import row_names
    from ..trtmc.commands import find_toolchain

    inventory = run_inventory(trtmc)
    written = write_model_atomic(request.out / INVENTORY_FILE, inventory)
    write_text_atomic(request.out / INVENTORY_MD, render_inventory_markdown(inventory))
    known = {e.profile for e in inventory.entries} | set(row_names(inventory.entries).values())
    unknown = sorted(set(request.profiles or []) - known)
    if unknown:
        raise BadInput(
            f"--profile {', '.join(unknown)} not in the inventory of {trtmc}; see inventory.md for the profiles"
        )
    job = tools.job(request, workload, inventory_digest(written, inventory))
    return qualify_inventory(job, inventory, trtmc.resolve(), find_toolchain(), request.profiles)


def _self_test(request: QualifyRequest, workloads: list[Workload], tools: RunTools) -> list[ResultRow]:
    """The reference endpoint (a test double), started once when a row must be measured, qualified on every
    self-test workload, stopped. What it is expected to answer, and that its native route is checked too, is the
    self-test plan's (data, not code)."""
    from ..plan.endpoint_target import EndpointTarget
    from ..plan.self_test import load_self_test_plan
    from ..reference import DEFAULT_MODEL_NAME, DEFAULT_SAMPLING_POLICY

    plan = load_self_test_plan()
    # The endpoint samples with the workloads' own declared policy where they share one, so the row's resolved
    # frames and strip are the frames it really looks at.
    firsts = {workload.sampling_policies()[0].spec for workload in workloads}
    policy = firsts.pop() if len(firsts) == 1 else DEFAULT_SAMPLING_POLICY
    stated = {"sampling_policy": policy, "sampling_where": "server", "media_cache": "none"}
    pairs = [
        (
            tools.job(request, workload),
            EndpointTarget(
                profile=f"{SELF_TEST_PREFIX}.{workload.name}",
                model=DEFAULT_MODEL_NAME,
                identity=plan.server,
                stated=stated,
                native_key="self" if plan.native_route else None,  # its own URL, which changes every run
                declared_no_answer=plan.declared_for(workload.name),
                reference_self_test=True,
            ),
        )
        for workload in workloads
    ]
    return endpoint_rows(pairs, lambda: _reference_endpoint(request, policy, plan.native_route, tools.progress))


def _reference_endpoint(
    request: QualifyRequest, policy: str, native_route: bool, progress: Callable[[str], None]
) -> AbstractContextManager[Callable[[EndpointTarget], LiveEndpoint]]:
    from contextlib import contextmanager

    from ..ladders.endpoint import LiveEndpoint
    from ..reference import argv_for_subprocess, serve_command
    from ..serving.process import ServerProcess

    @contextmanager
    def started() -> Iterator[Callable[[EndpointTarget], LiveEndpoint]]:
        config, records = _reference_config(request.out, request.settings.body_limit, policy)
        # --streaming on the self-test: its endpoint streams, as a server that accepts stream=true does.
        config = config.model_copy(update={"stream": request.settings.streaming})
        url = f"http://127.0.0.1:{config.port}"
        progress(f"starting the reference endpoint on {url}")
        with ServerProcess(
            argv_for_subprocess(config), url=url, log_path=request.out / REFERENCE_LOG, startup_timeout_s=60
        ) as server:
            live = LiveEndpoint(
                url=url,
                records=records,
                alive=lambda: server.alive,
                native_url=url if native_route else None,
                serve_command=RecordedCommand.of(serve_command(config)),
            )
            yield lambda _: live

    return started()


def _reference_config(out: Path, body_limit: int, policy: str) -> tuple[ReferenceConfig, Path]:
    """The self-test's reference endpoint: a free loopback port, and its records file (raw, as is its server.log
    beside it, under private/)."""
    from ..reference import ReferenceConfig
    from ..serving.process import free_loopback_port

    records = out / REFERENCE_RECORDS
    records.parent.mkdir(parents=True, exist_ok=True)
    config = ReferenceConfig(
        port=free_loopback_port(), records_path=records, max_body_bytes=body_limit, sampling_policy=policy
    )
    return config, records
