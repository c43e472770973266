"""The endpoint ladder: an already running OpenAI-compatible video chat server, planned -> endpoint-qualified.

    plan -> capability -> aiperf -> timing -> grading -> output-check -> identity

A server we did not build: no build, no family correctness, no serve; a task time it does not report and a native
route nobody named are stated on the row, never passed. The ladder is data, as the TRTMC one is: a tuple of steps
of stages/, and the row is written once, here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.atomic_write import write_text_atomic
from ..plan.cache_keys import cache_key
from ..plan.job import QualifyJob
from ..plan.row_start import with_workload_facts
from ..results import (
    ComparisonFacts,
    OutputCheck,
    Provenance,
    RecordedCommand,
    ResultRow,
    SamplingFacts,
    StageResult,
)
from ..results.layout import SERVED_MODEL_FILE
from ..rows.finish import crashed_row, finish_row, measured_row, run_provenance, stopped_row
from ..stages.aiperf import aiperf
from ..stages.capability import capability
from ..stages.grading import grading
from ..stages.identity.live import endpoint_identity_stage, endpoint_mechanics
from ..stages.output_check import output_check
from ..stages.protocol import (
    Climb,
    EndpointRow,
    Gates,
    Measurement,
    Served,
    Step,
    Stop,
    climb_ladder,
    measured_end,
    reached,
    served,
)
from ..stages.timing import timing

if TYPE_CHECKING:
    from ..plan.self_test import DeclaredNoAnswer


def _plan(row: EndpointRow, climb: Climb) -> Climb | Stop:
    """The `plan` stage of an endpoint row: it was planned when the row started; here it learns what serves it, and
    records the model name sent as given (the user's own value, which the public check reads past)."""
    write_text_atomic(row.row_dir / SERVED_MODEL_FILE, json.dumps({"model": served(climb).model}) + "\n")
    mechanics = endpoint_mechanics(climb.row, row.native_url)
    return replace(climb, row=climb.row.model_copy(update={"serving_mechanics": mechanics}))


ENDPOINT_LADDER: tuple[Step[EndpointRow], ...] = (
    Step("plan", _plan),
    Step("capability", capability),
    Step("aiperf", aiperf),
    Step("timing", timing),
    Step("grading", grading),
    Step("output-check", output_check),
    Step("identity", endpoint_identity_stage),
)


@dataclass(frozen=True, kw_only=True)
class EndpointTarget:
    """A server as the run names it, fixed before it runs: what makes the row's cache key. `identity` names the
    server (its URL where the user gave one; what it is where its URL changes every run: the self-test's, a
    comparison's); `native_key` names the native Task route checked against, if any; `declared_no_answer` is the
    run plan's own declaration that this server answers "cannot tell" here (the self-test's test double on a real
    clip), so such answers pass the output check and the row says it is about transport and timing only;
    `comparison` marks an upstream server this run starts (`trtmc-videoqa compare`), never counted as TRTMC."""

    profile: str
    model: str
    identity: str
    stated: dict[str, str] = field(default_factory=dict)
    native_key: str | None = None
    declared_no_answer: DeclaredNoAnswer | None = None
    reference_self_test: bool = False
    comparison: ComparisonFacts | None = None


@dataclass(frozen=True, kw_only=True)
class LiveEndpoint:
    """The server once it runs: its URL, per-request records, whether it still runs, its native Task route (if
    any) and how this run started it (None: the user did)."""

    url: str
    records: Path | None = None
    alive: Callable[[], bool] = lambda: True
    native_url: str | None = None
    serve_command: RecordedCommand | None = None


def endpoint_key(job: QualifyJob, target: EndpointTarget) -> str:
    """The row's cache key, made here only: the server, the model, its stated settings, the native route checked
    against and the no-answer the plan declares."""
    declared = target.declared_no_answer
    extra = {"native_url": target.native_key or "", "declared": declared.phrase if declared else ""}
    identity = {"mode": "endpoint", "endpoint": target.identity, "model": target.model, "stated": target.stated | extra}
    return cache_key(identity, job)


def qualify_endpoint(job: QualifyJob, target: EndpointTarget, live: LiveEndpoint, key: str) -> ResultRow:
    """An already running OpenAI-compatible video chat server: planned -> endpoint-qualified; `key` is the row's
    `endpoint_key`. Whatever raises while the row is measured is the row's `failed` at the stage it reached."""
    planned = _planned_row(target, live, key)
    commands = {"trtmc-videoqa": job.command, **({"serve": live.serve_command} if live.serve_command else {})}
    try:
        return _climbed(job, target, live, planned, commands)
    except Exception as error:  # outside the steps (the row's start or finishing): still this row's outcome
        return crashed_row(job, planned, "plan", error, commands)


def _climbed(
    job: QualifyJob,
    target: EndpointTarget,
    live: LiveEndpoint,
    planned: ResultRow,
    commands: dict[str, RecordedCommand],
) -> ResultRow:
    row = EndpointRow(
        job=job,
        profile=target.profile,
        tokenizer=job.tokenizer,
        gates=Gates(
            require_task_time=False,
            declared_no_answer=target.declared_no_answer,
            min_both_right=job.settings.min_both_right,
        ),
        native_url=live.native_url,
    )
    start = with_server_sampling(with_workload_facts(job, planned), job, target.stated)
    served = Served(url=live.url, model=target.model, records=live.records, alive=live.alive)
    end = climb_ladder(ENDPOINT_LADDER, row, Climb(row=start, commands=commands, served=served))
    try:
        return _finished(job, target, live, end)
    except Exception as error:  # while the row is finished: recorded at the last stage it reached
        at, stage = reached(end)
        return crashed_row(job, at, stage, error, commands)


def _finished(job: QualifyJob, target: EndpointTarget, live: LiveEndpoint, end: Climb | Stop) -> ResultRow:
    """The row the ladder's end earns, written; a run interrupted while AIPerf ran stops here, once it is."""
    if isinstance(end, Stop) and end.status is not None:  # ended before it measured (a crash in plan, ...)
        return finish_row(job, stopped_row(end, _provenance(job, target, live)), end.at.commands)
    climb, measurement = measured_end(end)
    note = None
    if target.declared_no_answer and measurement.output_check is not None:
        note = _transport_only_reason(target.declared_no_answer, measurement.output_check)
    provenance = _provenance(job, target, live, measurement)
    measured = measured_row(climb.row, measurement, "endpoint-qualified", provenance, qualified_note=note)
    finished = finish_row(job, measured, climb.commands | measurement.commands)
    if measurement.interrupted:
        raise KeyboardInterrupt  # the row is written; the run stops here
    return finished


def _provenance(
    job: QualifyJob, target: EndpointTarget, live: LiveEndpoint, measurement: Measurement | None = None
) -> Provenance:
    capability = measurement.capability if measurement else None
    return run_provenance(
        job,
        mode="endpoint",
        endpoint=live.url,
        served_by=capability.served_by if capability else None,
        settings={
            "server_stated": target.stated,
            "video_transport_used": measurement.video_transport if measurement else None,
        },
        tokenizer=job.tokenizer_label,
    )


def _planned_row(target: EndpointTarget, live: LiveEndpoint, key: str) -> ResultRow:
    comparison = target.comparison
    return ResultRow(
        profile=target.profile,
        status="planned",
        status_reason="endpoint given; nothing run yet",
        reference_self_test=target.reference_self_test,
        comparison=comparison,
        checkpoint=comparison.checkpoint if comparison else None,
        revision=comparison.revision if comparison else None,
        cache_key=key,
        stages=[StageResult(name="plan", status="passed", detail=f"endpoint {live.url}, model {target.model}")],
    )


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
