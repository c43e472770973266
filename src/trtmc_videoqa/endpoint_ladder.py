"""The endpoint ladder: an already running OpenAI-compatible video chat server, planned -> endpoint-qualified.

capability -> AIPerf -> grading      (a server we did not build: no build, no family correctness, no serve)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .cache_keys import endpoint_key, reusable
from .endpoint_run import EndpointMeasurement, measure_endpoint
from .qualify import (
    QualifyJob,
    finish_row,
    measured_fields,
    run_provenance,
    status_after_measurement,
    with_workload_facts,
)
from .results import Accuracy, ResultRow, SamplingFacts, StageResult


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
    transport_only: str | None = None,
) -> ResultRow:
    """An already running OpenAI-compatible video chat server: planned -> endpoint-qualified.

    `transport_only` says why this server is not expected to answer the questions (the reference endpoint on a
    real clip: it answers "cannot tell"); the row is then about transport and timing, and says so."""
    key = endpoint_key(job, identity=identity or url, model=model, stated=stated)
    row_dir = job.row_dir(profile)
    previous = reusable(row_dir, key, job.force)
    if previous is not None:
        job.progress(f"{profile}: unchanged inputs, result reused")
        return previous
    row = ResultRow(
        profile=profile,
        status="planned",
        status_reason="endpoint given; nothing run yet",
        reference_self_test=reference_self_test,
        cache_key=key,
        stages=[StageResult(name="plan", status="passed", detail=f"endpoint {url}, model {model}")],
    )
    row = with_server_sampling(with_workload_facts(job, row), job, stated)
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
        progress=lambda m: job.progress(f"{profile}: {m}"),
    )
    row = finish_row(
        job,
        _measured_row(job, row, measurement, url, stated, transport_only),
        {"trtmc-videoqa": job.command, **measurement.commands},
    )
    if measurement.interrupted:
        raise KeyboardInterrupt  # the row is written; the run stops here
    return row


def _measured_row(
    job: QualifyJob,
    row: ResultRow,
    measurement: EndpointMeasurement,
    url: str,
    stated: dict[str, str],
    transport_only: str | None,
) -> ResultRow:
    """The row with the measurement's figures and the status they earn."""
    status, reason, failed, evidence = status_after_measurement(measurement, "endpoint-qualified")
    if transport_only and status == "endpoint-qualified" and measurement.accuracy is not None:
        reason = _transport_only_reason(transport_only, measurement.accuracy)
    served_by = measurement.capability.served_by if measurement.capability else None
    provenance = run_provenance(
        job,
        mode="endpoint",
        endpoint=url,
        served_by=served_by,
        settings={"server_stated": stated},
        tokenizer=job.tokenizer_label,
    )
    return row.model_copy(
        update=measured_fields(row, measurement)
        | dict(
            status=status,
            status_reason=reason,
            failed_stage=failed,
            status_evidence=evidence,
            provenance=provenance,
        )
    )


def _transport_only_reason(why: str, accuracy: Accuracy) -> str:
    every = accuracy.unparseable == accuracy.graded
    return (
        f"complete AIPerf run, every request accounted for; transport and timing only: {why} "
        f"({accuracy.unparseable} of {accuracy.graded} answers were no answer"
        f"{', as expected' if every else '; the rest were not expected'})"
    )


def with_server_sampling(row: ResultRow, job: QualifyJob, stated: dict[str, str]) -> ResultRow:
    """Where the server samples, the policy it states is the one applied: record it beside the workload's declared
    one, and say so plainly when they differ (the strip then shows the declared frames, not the server's)."""
    policy, where = stated.get("sampling_policy"), stated.get("sampling_where")
    if not policy or where != "server" or not isinstance(row.sampling, SamplingFacts):
        return row
    from .media.sampling import SamplingPolicy

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
