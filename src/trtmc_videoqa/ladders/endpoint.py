"""The endpoint ladder: an already running OpenAI-compatible video chat server, planned -> endpoint-qualified.

capability -> AIPerf -> timing -> grading -> output-check -> identity
(a server we did not build: no build, no family correctness, no serve; a task time it does not report and a native
route nobody named are stated on the row, never passed)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..plan.cache_keys import endpoint_key, reusable
from ..results import ComparisonFacts, OutputCheck, ResultRow, SamplingFacts, StageResult
from ..rows.finish import (
    QualifyJob,
    finish_row,
    measured_row,
    run_provenance,
    with_workload_facts,
)
from ..stages.identity.live import endpoint_identity, endpoint_mechanics, recorded
from ..stages.measure import EndpointMeasurement, Gates, measure_endpoint

if TYPE_CHECKING:
    from ..plan.self_test import DeclaredNoAnswer


def qualify_endpoint(
    job: QualifyJob,
    *,
    url: str,
    model: str,
    profile: str,
    stated: dict[str, str],
    identity: str | None = None,
    reference_self_test: bool = False,
    server_records: Path | None = None,
    alive: Callable[[], bool] = lambda: True,
    native_url: str | None = None,
    native_key: str | None = None,
    declared_no_answer: DeclaredNoAnswer | None = None,
    comparison: ComparisonFacts | None = None,
    serve_command: str | None = None,
) -> ResultRow:
    """An already running OpenAI-compatible video chat server: planned -> endpoint-qualified.

    `native_url` is the server's native Task route, if the user named one. `declared_no_answer` is the run plan's
    own declaration that this server answers "cannot tell" here (the self-test's test double on a real clip): such
    answers then pass the output check, and the row says it is about transport and timing only. No other run has
    one. `comparison` marks an upstream server of a checkpoint that this run started (`trtmc-videoqa compare`): the
    row carries its facts and label, and no report counts it as TRTMC. `serve_command` is how the server this run
    started was started (the self-test's, a comparison's): the row's commands name it before AIPerf's."""
    key = row_key(
        job,
        identity=identity or url,
        model=model,
        stated=stated,
        native=native_key or native_url,
        declared=declared_no_answer,
    )
    row_dir = job.row_dir(profile)
    previous = reusable(row_dir, key, job.force)
    if previous is not None:
        job.progress(f"{profile}: unchanged inputs, result reused")
        return previous
    row = _planned_row(profile, key, url, model, reference_self_test, comparison)
    row, measurement = _measure(
        job,
        with_server_sampling(with_workload_facts(job, row), job, stated),
        url,
        model,
        server_records,
        alive,
        native_url,
        declared_no_answer,
    )
    row = finish_row(
        job,
        _measured_row(job, row, measurement, url, stated, declared_no_answer),
        {"trtmc-videoqa": job.command, **({"serve": serve_command} if serve_command else {}), **measurement.commands},
    )
    if measurement.interrupted:
        raise KeyboardInterrupt  # the row is written; the run stops here
    return row


def _planned_row(
    profile: str, key: str, url: str, model: str, reference_self_test: bool, comparison: ComparisonFacts | None
) -> ResultRow:
    return ResultRow(
        profile=profile,
        status="planned",
        status_reason="endpoint given; nothing run yet",
        reference_self_test=reference_self_test,
        comparison=comparison,
        checkpoint=comparison.checkpoint if comparison else None,
        revision=comparison.revision if comparison else None,
        cache_key=key,
        stages=[StageResult(name="plan", status="passed", detail=f"endpoint {url}, model {model}")],
    )


def _measure(
    job: QualifyJob,
    row: ResultRow,
    url: str,
    model: str,
    server_records: Path | None,
    alive: Callable[[], bool],
    native_url: str | None,
    declared: DeclaredNoAnswer | None,
) -> tuple[ResultRow, EndpointMeasurement]:
    """The measurement, then identity (when every stage before it passed)."""
    row_dir = job.row_dir(row.profile)
    row = row.model_copy(update={"serving_mechanics": endpoint_mechanics(row, native_url)})
    measurement = measure_endpoint(
        url=url,
        model=model,
        workload=job.workload,
        settings=job.settings,
        aiperf=job.aiperf,
        tokenizer=job.tokenizer,
        row_dir=row_dir,
        api_key=job.api_key,
        server_records=server_records,
        alive=alive,
        progress=lambda m: job.progress(f"{row.profile}: {m}"),
        gates=Gates(require_task_time=False, declared_no_answer=declared),
        clip_urls=job.clip_urls,
    )
    if measurement.failed_stage is None and not measurement.interrupted:
        transport = measurement.video_transport or "data-url"
        identity_check = endpoint_identity(job, url=url, model=model, native_url=native_url, transport=transport)
        measurement.stages.append(recorded(row_dir, identity_check))
        row = row.model_copy(update={"identity": identity_check})
    return row, measurement


def row_key(
    job: QualifyJob,
    *,
    identity: str,
    model: str,
    stated: dict[str, str],
    native: str | None,
    declared: DeclaredNoAnswer | None,
) -> str:
    """The row's cache key: the server, the model, its stated settings, the native route checked against (named
    by `native_key` where its URL changes every run) and the no-answer the plan declares."""
    extra = {"native_url": native or "", "declared": declared.phrase if declared else ""}
    return endpoint_key(job, identity=identity, model=model, stated=stated | extra)


def _measured_row(
    job: QualifyJob,
    row: ResultRow,
    measurement: EndpointMeasurement,
    url: str,
    stated: dict[str, str],
    declared: DeclaredNoAnswer | None,
) -> ResultRow:
    """The row with the measurement's figures and the status they earn."""
    note = None
    if declared and measurement.output_check is not None:
        note = _transport_only_reason(declared, measurement.output_check)
    served_by = measurement.capability.served_by if measurement.capability else None
    provenance = run_provenance(
        job,
        mode="endpoint",
        endpoint=url,
        served_by=served_by,
        settings={"server_stated": stated, "video_transport_used": measurement.video_transport},
        tokenizer=job.tokenizer_label,
    )
    return measured_row(row, measurement, "endpoint-qualified", provenance, qualified_note=note)


def _transport_only_reason(declared: DeclaredNoAnswer, check: OutputCheck) -> str:
    no_answer = check.by_outcome.get("declared-no-answer", 0)
    return (
        f"transport and timing only: {declared.why} ({no_answer} of {check.checked} answers were the declared "
        f"no-answer {declared.phrase!r})"
    )


def with_server_sampling(row: ResultRow, job: QualifyJob, stated: dict[str, str]) -> ResultRow:
    """Where the server samples, the policy it states is the one applied: record it beside the workload's declared
    one, and say so plainly when they differ (the strip then shows the declared frames, not the server's)."""
    policy, where = stated.get("sampling_policy"), stated.get("sampling_where")
    if not policy or where != "server" or not isinstance(row.sampling, SamplingFacts):
        return row
    from ..media.sampling import SamplingPolicy

    try:
        applied = SamplingPolicy.parse(policy).spec
    except ValueError:
        applied = policy
    mismatch = None
    if applied != row.sampling.policy:
        declared = [p.spec for p in job.workload.sampling_policies()]
        mismatch = (
            f"the server samples {applied}, not {row.sampling.policy} as resolved above; "
            f"{applied} is {'one' if applied in declared else 'not one'} of the workload's "
            "declared policies"
        )
    sampling = row.sampling.model_copy(update={"applied_by_server": applied, "mismatch": mismatch})
    return row.model_copy(update={"sampling": sampling})
