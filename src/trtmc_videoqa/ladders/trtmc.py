"""The TRTMC ladder: one capable checkpoint of a TRTMC checkout, planned -> aiperf-qualified.

    plan checks -> build -> family correctness (same bundle) -> trtmc-server -> capability -> AIPerf -> timing
    -> grading -> output-check -> identity (trtmc-server's chat against perf_serving's Task route, same bundle)

Each stage takes the row as far as it has climbed and returns the next one, or a Stop that says where and why the
row ends; the row is written once, by the stage that ends it.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..common.scrub import SERVER_TOKEN_ENV
from ..plan.cache_keys import reusable, trtmc_key
from ..plan.hub_cache import checkpoint_tokenizer, revision_check
from ..plan.trtmc_checks import CORRECTNESS_LOG, correctness_problem, manifest_path_problem
from ..results import (
    CheckpointEntry,
    IdentityAnswer,
    Inventory,
    Provenance,
    QualificationStatus,
    ResultRow,
    StageName,
    StageResult,
    StageStatus,
)
from ..results.layout import PRIVATE_DIR
from ..rows.finish import (
    QualifyJob,
    finish_row,
    measured_row,
    run_provenance,
    unsupported_row,
    with_workload_facts,
)
from ..stages.identity.live import chat_side, recorded
from ..stages.identity.trtmc_native import native_identity, trtmc_mechanics
from ..stages.measure import EndpointMeasurement, Gates, measure_endpoint
from ..trtmc.commands import (
    Toolchain,
    build_argv,
    bundle_header,
    bundle_path,
    correctness_argv,
    correctness_env,
    correctness_test,
    effective_precision,
    family_test_outcome,
    file_digest,
    partial_path,
    server_argv,
)

# The raw logs and the server's per-request records, relative to the row directory: under private/, never published.
BUILD_LOG = f"{PRIVATE_DIR}/build.log"
SERVER_LOG = f"{PRIVATE_DIR}/server.log"
SERVER_RECORDS = f"{PRIVATE_DIR}/server-records.jsonl"


@dataclass(frozen=True)
class Checkpoint:
    """What stays the same along one checkpoint's ladder."""

    job: QualifyJob
    entry: CheckpointEntry
    inventory: Inventory
    checkout: Path
    toolchain: Toolchain
    tokenizer: Path
    tokenizer_label: str
    revision_check: str

    @property
    def row_dir(self) -> Path:
        return self.job.row_dir(self.entry.profile)


@dataclass(frozen=True)
class Bundle:
    """The bundle this row built (or found in the cache) and its identity."""

    path: Path
    digest: str  # sha256:<hex>


@dataclass(frozen=True)
class Climb:
    """The row as far as it has climbed, with what its provenance needs so far."""

    row: ResultRow
    commands: dict[str, str]
    precision: tuple[str | None, str]  # (effective precision, where it was read)
    bundle: Bundle | None = None  # once built


@dataclass(frozen=True)
class Stop:
    """Where the ladder ends short of its top: the row as it was, the status and reason, the stage that ended it."""

    at: Climb
    status: QualificationStatus
    reason: str
    stage: StageResult
    failed: StageName | None = None


def qualify_entry(
    job: QualifyJob, entry: CheckpointEntry, inventory: Inventory, checkout: Path, toolchain: Toolchain
) -> ResultRow:
    """One capable checkpoint through every step, as far as this machine and the evidence allow."""
    tokenizer, tokenizer_label = checkpoint_tokenizer(job, entry)
    key = trtmc_key(job, entry, inventory, tokenizer_label)
    previous = reusable(job.row_dir(entry.profile), key, job.force)
    if previous is not None:
        job.progress(f"{entry.profile}: unchanged inputs, result reused")
        return previous
    cp = Checkpoint(job, entry, inventory, checkout, toolchain, tokenizer, tokenizer_label, revision_check(entry))
    climb = _planned(cp, key)
    stop = _check_plan(cp, climb)
    if stop is not None:
        return _stopped(cp, stop)
    built = _build(cp, climb)
    if isinstance(built, Stop):
        return _stopped(cp, built)
    climb, bundle = built
    validated = _correctness(cp, climb, bundle)
    if isinstance(validated, Stop):
        return _stopped(cp, validated)
    return _serve_and_measure(cp, validated, bundle)


def _planned(cp: Checkpoint, key: str) -> Climb:
    entry = cp.entry
    plan = StageResult(
        name="plan",
        status="passed",
        detail=f"verdict {entry.verdict}",
        evidence=[f"{e.file}:{e.line}" for e in entry.evidence if e.line][:4],
    )
    row = unsupported_row(entry).model_copy(
        update=dict(
            status="planned",
            status_reason="temporal video QA capability found; nothing run yet",
            cache_key=key,
            stages=[plan],
            # a fact of the checkout, so a row stopped before serving says it too (the older layout: none)
            serving_mechanics=trtmc_mechanics(cp, entry.native_request.operation if entry.native_request else None),
        )
    )
    return Climb(
        row=with_workload_facts(cp.job, row),
        commands={"trtmc-videoqa": cp.job.command},
        precision=(entry.precision, "the manifest's declared precision (no bundle built yet)"),
    )


def _check_plan(cp: Checkpoint, climb: Climb) -> Stop | None:
    """Names that would lead outside their place fail the row; a machine without TRTMC or a GPU blocks it."""
    escape = manifest_path_problem(cp.entry, cp.checkout, cp.inventory.layout)
    if escape:
        stage = StageResult(name="plan", status="failed", detail=escape, evidence=[cp.entry.manifest])
        return Stop(climb, "failed", escape, stage, failed="plan")
    missing = "; ".join(cp.toolchain.missing())
    if missing:
        return Stop(climb, "blocked", missing, StageResult(name="build", status="blocked", detail=missing))
    return None


def _build(cp: Checkpoint, climb: Climb) -> tuple[Climb, Bundle] | Stop:
    """The bundle, built unless the cache (by profile, commit and revision) has it; then its digest and precision."""
    job, entry = cp.job, cp.entry
    path = bundle_path(job.bundle_cache or (job.out / "bundles"), entry, cp.inventory.commit)
    job.stage = "build"
    climb = replace(climb, commands=climb.commands | {"build": _redacted(build_argv(cp.toolchain, entry, path))})
    if not path.is_file():
        failed = _run_build(cp, path)
        if failed is not None:
            return Stop(climb, "failed", f"build {failed.detail}", failed, failed="build")
    bundle = Bundle(path, file_digest(path))
    passed = StageResult(
        name="build",
        status="passed",
        detail=f"{path.name} {bundle.digest}",
        evidence=[BUILD_LOG] if (cp.row_dir / BUILD_LOG).exists() else [],
    )
    row = climb.row.model_copy(
        update=dict(
            status="implemented", status_reason="bundle built; workload adapted", stages=climb.row.stages + [passed]
        )
    )
    precision = effective_precision(bundle_header(path), entry.precision)
    return replace(climb, row=row, precision=precision, bundle=bundle), bundle


def _run_build(cp: Checkpoint, bundle: Path) -> StageResult | None:
    """Build under a temporary name, renamed only when the build succeeded: a killed or timed-out build never
    leaves a file that a later run would take for a finished bundle. The failed stage, or None once built."""
    cp.job.progress(f"{cp.entry.profile}: building the bundle")
    bundle.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(bundle)
    try:
        code, wall = _run_step(
            build_argv(cp.toolchain, cp.entry, partial),
            log=cp.row_dir / BUILD_LOG,
            timeout_s=cp.job.stage_timeouts["build"],
        )
        if code == 0 and partial.is_file():
            partial.replace(bundle)
    finally:
        partial.unlink(missing_ok=True)
    if bundle.is_file():
        return None
    why = "timed out" if code is None else f"exit {code}" if code else "no bundle written"
    return StageResult(name="build", status="failed", detail=why, wall_s=wall, evidence=[BUILD_LOG])


def _correctness(cp: Checkpoint, climb: Climb, bundle: Bundle) -> Climb | Stop:
    """The family's own correctness command, unchanged, on this exact bundle; its evidence checked, not assumed."""
    job, entry = cp.job, cp.entry
    test = correctness_test(cp.checkout, entry, cp.inventory.layout)
    if test is None:
        reason = f"family {entry.family!r} has no E2E correctness test in the checkout"
        blocked = StageResult(name="correctness", status="blocked", detail="no family E2E test found")
        return Stop(climb, "blocked", reason, blocked)
    artifacts = cp.row_dir / "correctness"
    shutil.rmtree(artifacts, ignore_errors=True)  # an earlier run's verdict or bundle must not speak for this one
    argv = correctness_argv(cp.toolchain, cp.checkout, test, entry, artifacts, engine_dir=bundle.path.parent)
    climb = replace(climb, commands=climb.commands | {"correctness": _redacted(argv)})
    job.progress(f"{entry.profile}: the family's correctness tests")
    job.stage = "correctness"
    code, wall = _run_step(
        argv,
        log=cp.row_dir / CORRECTNESS_LOG,
        timeout_s=job.stage_timeouts["correctness"],
        cwd=cp.checkout,
        env=correctness_env(cp.checkout, dict(os.environ)),
    )
    if code != 0:
        why = "timed out" if code is None else f"exit {code}"
        failed = StageResult(name="correctness", status="failed", detail=why, wall_s=wall, evidence=[CORRECTNESS_LOG])
        return Stop(climb, "failed", f"family correctness {why}", failed, failed="correctness")
    problem = correctness_problem(bundle.path, bundle.digest, artifacts, entry.profile)
    if problem is not None:
        reason, detail, evidence = problem
        failed = StageResult(name="correctness", status="failed", wall_s=wall, detail=detail, evidence=evidence)
        return Stop(climb, "failed", reason, failed, failed="correctness")
    passed = StageResult(
        name="correctness",
        status="passed",
        wall_s=wall,
        detail=f"{test.relative_to(cp.checkout)} on {bundle.digest}: {_test_counts(artifacts)}",
        evidence=[CORRECTNESS_LOG],
    )
    row = climb.row.model_copy(
        update=dict(
            status="family-validated",
            status_reason="the family's own correctness passed on this bundle",
            stages=climb.row.stages + [passed],
        )
    )
    return replace(climb, row=row)


def _serve_and_measure(cp: Checkpoint, climb: Climb, bundle: Bundle) -> ResultRow:
    """trtmc-server on loopback, the measurement beside it and identity's chat side; then perf_serving for the
    native side. The row ends here whatever the outcome."""
    from ..serving.process import ServerProblem, ServerProcess, free_loopback_port

    job = cp.job
    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    records = cp.row_dir / SERVER_RECORDS
    records.parent.mkdir(parents=True, exist_ok=True)  # the server may not make the folder of its records file
    argv = server_argv(
        cp.toolchain,
        bundle.path,
        model_name=cp.entry.profile,
        port=port,
        body_limit=job.settings.body_limit,
        records=records,
        startup_timeout_s=job.stage_timeouts["startup"],
        request_timeout_s=job.settings.request_timeout_s,
    )
    climb = replace(climb, commands=climb.commands | {"serve": _redacted(argv)})
    env = dict(os.environ)
    if job.api_key:
        env[SERVER_TOKEN_ENV] = job.api_key  # the server reads it from its environment, never from argv
    job.progress(f"{cp.entry.profile}: starting trtmc-server")
    job.stage = "serve"
    started = time.monotonic()
    log = cp.row_dir / SERVER_LOG
    chat: list[IdentityAnswer] | None = None
    try:
        with ServerProcess(
            argv, url=url, log_path=log, startup_timeout_s=job.stage_timeouts["startup"], env=env
        ) as server:
            served = _with_stage(climb, _serve_stage("passed", f"ready after {server.ready_after_s:.1f} s", started))
            measurement = _measure_served(cp, url, records, alive=lambda: server.alive)
            if measurement.failed_stage is None and not measurement.interrupted:
                job.stage = "identity"
                chat = chat_side(job, url, served_model_name(cp, url), measurement.video_transport or "data-url")
    except ServerProblem as problem:  # raised only while it starts: it never got ready
        failed = _serve_stage("failed", str(problem), started)
        return _stopped(cp, Stop(climb, "failed", f"serve: {problem}", failed, failed="serve"))
    identity = None
    if chat is not None:
        identity, commands = native_identity(cp, bundle, chat)
        measurement.stages.append(recorded(cp.row_dir, identity))
        served = replace(served, commands=served.commands | commands)
    row = _measured_row(cp, served, measurement, url).model_copy(update={"identity": identity})
    row = finish_row(job, row, served.commands | measurement.commands)
    if measurement.interrupted:
        raise KeyboardInterrupt  # the row is written and the server stopped; the run stops here
    return row


def _test_counts(artifacts: Path) -> str:
    outcome = family_test_outcome(artifacts)  # read again: correctness_problem has just checked it exists
    return outcome.counts() if outcome is not None else "no JUnit report"


def served_model_name(cp: Checkpoint, url: str) -> str:
    from ..serving.process import served_model

    return served_model(url, cp.entry.profile, api_key=cp.job.api_key)


def _serve_stage(status: StageStatus, detail: str, started: float) -> StageResult:
    wall = round(time.monotonic() - started, 3)
    return StageResult(name="serve", status=status, detail=detail, wall_s=wall, evidence=[SERVER_LOG])


def _with_stage(climb: Climb, stage: StageResult) -> Climb:
    return replace(climb, row=climb.row.model_copy(update={"stages": climb.row.stages + [stage]}))


def _measure_served(cp: Checkpoint, url: str, records: Path, alive: Callable[[], bool]) -> EndpointMeasurement:
    """Capability, AIPerf, timing (every task time required), grading and the output check against the server we
    started (they record their own failures)."""
    job = cp.job
    job.stage = "capability"
    return measure_endpoint(
        gates=Gates(require_task_time=True),
        url=url,
        model=served_model_name(cp, url),
        workload=job.workload,
        settings=job.settings,
        aiperf=job.aiperf,
        tokenizer=cp.tokenizer,
        row_dir=cp.row_dir,
        api_key=job.api_key,
        server_records=records,
        alive=alive,
        progress=lambda m: job.progress(f"{cp.entry.profile}: {m}"),
        clip_urls=job.clip_urls,  # the same transport for trtmc-server as for any endpoint
    )


def _measured_row(cp: Checkpoint, climb: Climb, measurement: EndpointMeasurement, url: str) -> ResultRow:
    """The row with the measurement's figures and the status they earn."""
    served_by = measurement.capability.served_by if measurement.capability else None
    provenance = _provenance(cp, climb, endpoint=url, served_by=served_by, transport=measurement.video_transport)
    return measured_row(climb.row, measurement, "aiperf-qualified", provenance)


def _stopped(cp: Checkpoint, stop: Stop) -> ResultRow:
    """The row ended by `stop`, written."""
    row = stop.at.row.model_copy(
        update=dict(
            status=stop.status,
            status_reason=stop.reason,
            failed_stage=stop.failed,
            stages=stop.at.row.stages + [stop.stage],
            status_evidence=stop.stage.evidence,
            provenance=_provenance(cp, stop.at),
        )
    )
    return finish_row(cp.job, row, stop.at.commands)


def _provenance(
    cp: Checkpoint,
    climb: Climb,
    *,
    endpoint: str | None = None,
    served_by: str | None = None,
    transport: str | None = None,
) -> Provenance:
    settings = {
        "precision_source": climb.precision[1],
        "build": cp.entry.build_settings,
        "revision_check": cp.revision_check,
        "video_transport_used": transport,
    }
    return run_provenance(
        cp.job,
        mode="trtmc",
        settings=settings,
        tokenizer=cp.tokenizer_label,
        endpoint=endpoint,
        served_by=served_by,
        trtmc_commit=cp.inventory.commit,
        server_version=f"trtmc-server built from TRTMC {cp.inventory.commit}",
        effective_precision=climb.precision[0],
        bundle_digest=climb.bundle.digest if climb.bundle else None,
    )


def _run_step(
    argv: list[str], *, log: Path, timeout_s: float, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int | None, float]:
    """(exit code, or None when it overstayed its wall limit; wall seconds)."""
    from ..aiperf.runner import run_with_wall_limit

    outcome = run_with_wall_limit(argv, wall_limit_s=timeout_s, log_path=log, cwd=cwd, env=env)
    return (None if outcome.timed_out else outcome.exit_code), outcome.wall_s


def _redacted(argv: list[str]) -> str:
    from ..aiperf.command import reproducible_command

    return reproducible_command(argv)
