"""The endpoint ladder: an already running OpenAI-compatible video chat server, planned -> endpoint-qualified.

    plan -> capability -> aiperf -> timing -> grading -> output-check -> identity

A server we did not build: no build, no family correctness, no serve; a task time it does not report and a native
route nobody named are stated on the row, never passed. The ladder is data, as the TRTMC one is: a tuple of steps
of stages/, and the row is finished once, by rows/end.py, from what its stages measured.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..climb.protocol import (
    Climb,
    EndpointRow,
    Gates,
    Measurement,
    Served,
    Step,
    Stop,
    served,
)
from ..common.atomic_write import write_text_atomic
from ..plan.endpoint_target import EndpointTarget
from ..plan.job import QualifyJob
from ..plan.row_start import with_workload_facts
from ..results import (
    OutputCheck,
    Provenance,
    RecordedCommand,
    ResultRow,
    SamplingFacts,
    StageResult,
)
from ..results.layout import SERVED_MODEL_FILE
from ..rows.end import Earning, climb_and_finish, finish_from
from ..rows.provenance import run_provenance
from ..stages.aiperf import aiperf
from ..stages.capability import capability
from ..stages.grading import grading
from ..stages.identity.live import endpoint_identity_stage, endpoint_mechanics
from ..stages.output_check import output_check
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
class LiveEndpoint:
    """The server once it runs: its URL, per-request records, whether it still runs, its native Task route (if
    any) and how this run started it (None: the user did)."""

    url: str
    records: Path | None = None
    alive: Callable[[], bool] = lambda: True
    native_url: str | None = None
    serve_command: RecordedCommand | None = None


def qualify_endpoint(job: QualifyJob, target: EndpointTarget, live: LiveEndpoint, key: str) -> ResultRow:
    """An already running OpenAI-compatible video chat server: planned -> endpoint-qualified; `key` is the row's
    `endpoint_key` (plan/cache_keys.py). Whatever raises while the row is measured is the row's `failed` at the
    stage it reached."""
    planned = _planned_row(target, live, key)
    commands = {"trtmc-videoqa": job.command, **({"serve": live.serve_command} if live.serve_command else {})}
    served = Served(url=live.url, model=target.model, records=live.records, alive=live.alive)

    def start() -> Climb:
        begun = with_server_sampling(with_workload_facts(job, planned), job, target.stated)
        return Climb(row=begun, commands=commands, served=served)

    row = _endpoint_row(job, target, live)
    fallback = Climb(row=planned, commands=commands, served=served)
    return climb_and_finish(row, ENDPOINT_LADDER, start, _earning(job, target, live), fallback)


def finish_endpoint_stop(
    job: QualifyJob, target: EndpointTarget, live: LiveEndpoint, key: str, stop: Callable[[Climb], Stop]
) -> ResultRow:
    """An endpoint row that ends before its ladder runs (`stop` makes its Stop from the planned row's climb, e.g. a
    server that never started), finished as every row is: written whole and put in place."""
    planned = _planned_row(target, live, key)
    commands = {"trtmc-videoqa": job.command, **({"serve": live.serve_command} if live.serve_command else {})}
    climb = Climb(row=with_workload_facts(job, planned), commands=commands)
    return finish_from(_endpoint_row(job, target, live), stop(climb), _earning(job, target, live))


def _endpoint_row(job: QualifyJob, target: EndpointTarget, live: LiveEndpoint) -> EndpointRow:
    return EndpointRow(
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


def _earning(job: QualifyJob, target: EndpointTarget, live: LiveEndpoint) -> Earning:
    """What an endpoint row earns: endpoint-qualified at most; the self-test's declared no-answer said first."""

    def note(measurement: Measurement) -> str | None:
        if target.declared_no_answer and measurement.output_check is not None:
            return _transport_only_reason(target.declared_no_answer, measurement.output_check)
        return None

    return Earning(
        qualified="endpoint-qualified",
        provenance=lambda _, measurement: _provenance(job, target, live, measurement),
        note=note,
    )


def _provenance(
    job: QualifyJob, target: EndpointTarget, live: LiveEndpoint, measurement: Measurement | None = None
) -> Provenance:
    capability = measurement.capability if measurement else None
    return run_provenance(
        job,
        mode="endpoint",
        endpoint=live.url or None,  # "": a server that was never started
        served_by=capability.served_by if capability else None,
        settings={
            "server_stated": target.stated,
            "video_transport_used": measurement.video_transport if measurement else None,
        },
        tokenizer=job.tokenizer_label,
    )


def _planned_row(target: EndpointTarget, live: LiveEndpoint, key: str) -> ResultRow:
    comparison, where = target.comparison, live.url or "(not started)"
    return ResultRow(
        profile=target.profile,
        status="planned",
        status_reason="endpoint given; nothing run yet",
        reference_self_test=target.reference_self_test,
        comparison=comparison,
        checkpoint=comparison.checkpoint if comparison else None,
        revision=comparison.revision if comparison else None,
        cache_key=key,
        stages=[StageResult(name="plan", status="passed", detail=f"endpoint {where}, model {target.model}")],
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
