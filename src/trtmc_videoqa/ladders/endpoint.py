"""The endpoint ladder: an already running OpenAI-compatible video chat server, planned -> endpoint-qualified.

    plan -> capability -> aiperf -> timing -> grading -> output-check -> identity

A server we did not build: no build, no family correctness, no serve; a task time it does not report and a native
route nobody named are stated on the row, never passed. The ladder is data, as the TRTMC one is: a tuple of steps
of stages/, climbed from the planned row, and the row is finished once, by rows/end.py, from what its stages
measured and what the row can earn (values, known before it climbs).
"""

from __future__ import annotations

from collections.abc import Callable

from ..climb.protocol import Climb, EndpointRow, Gates, Served, Step, Stop
from ..plan.endpoint_target import EndpointTarget, LiveEndpoint
from ..plan.job import QualifyJob
from ..plan.row_start import with_workload_facts
from ..results import RecordedCommand, ResultRow, StageResult
from ..rows.end import Earning, climb_and_finish, finish_from
from ..rows.provenance import LadderFacts
from ..stages.aiperf import aiperf
from ..stages.capability import capability
from ..stages.endpoint_plan import endpoint_plan
from ..stages.grading import grading
from ..stages.identity.live import endpoint_identity_stage
from ..stages.output_check import output_check
from ..stages.timing import timing

ENDPOINT_LADDER: tuple[Step[EndpointRow], ...] = (
    Step("plan", endpoint_plan),
    Step("capability", capability),
    Step("aiperf", aiperf),
    Step("timing", timing),
    Step("grading", grading),
    Step("output-check", output_check),
    Step("identity", endpoint_identity_stage),
)


def qualify_endpoint(job: QualifyJob, target: EndpointTarget, live: LiveEndpoint, key: str) -> ResultRow:
    """An already running OpenAI-compatible video chat server: planned -> endpoint-qualified; `key` is the row's
    `endpoint_key` (plan/cache_keys.py). Whatever raises while the row is measured is the row's `failed` at the
    stage it reached."""
    served = Served(url=live.url, model=target.model, records=live.records, alive=live.alive)
    planned = Climb(row=_planned_row(target, live, key), commands=_commands(job, live), served=served)
    return climb_and_finish(_endpoint_row(job, target, live), ENDPOINT_LADDER, planned, _earning(job, target, live))


def finish_endpoint_stop(
    job: QualifyJob, target: EndpointTarget, live: LiveEndpoint, key: str, stop: Callable[[Climb], Stop]
) -> ResultRow:
    """An endpoint row that ends before its ladder runs (`stop` makes its Stop from the planned row's climb, e.g. a
    server that never started), finished as every row is: written whole and put in place."""
    climb = Climb(row=with_workload_facts(job, _planned_row(target, live, key)), commands=_commands(job, live))
    return finish_from(_endpoint_row(job, target, live), stop(climb), _earning(job, target, live))


def _commands(job: QualifyJob, live: LiveEndpoint) -> dict[str, RecordedCommand]:
    return {"trtmc-videoqa": job.command, **({"serve": live.serve_command} if live.serve_command else {})}


def _endpoint_row(job: QualifyJob, target: EndpointTarget, live: LiveEndpoint) -> EndpointRow:
    gates = Gates(
        require_task_time=False,
        declared_no_answer=target.declared_no_answer,
        min_both_right=job.settings.min_both_right,
    )
    return EndpointRow(
        job=job,
        profile=target.profile,
        tokenizer=job.tokenizer,
        gates=gates,
        native_url=live.native_url,
        stated=target.stated,
    )


def _earning(job: QualifyJob, target: EndpointTarget, live: LiveEndpoint) -> Earning:
    """What an endpoint row earns: endpoint-qualified at most; its provenance names the server's URL (none where
    it never started) and what the run states of it; the self-test's declared no-answer is said first."""
    facts = LadderFacts(
        mode="endpoint",
        tokenizer=job.tokenizer_label,
        settings={"server_stated": target.stated},
        endpoint=live.url or None,  # "": a server that was never started
    )
    return Earning("endpoint-qualified", facts, declared_no_answer=target.declared_no_answer)


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
