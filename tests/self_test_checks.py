"""What a finished reference self-test's artifacts must show, wherever it ran: the plain run (test_qualify.py) and
the run inside the CPU image (test_container_run.py) are held to the same checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import row

from trtmc_videoqa.results import Report

SELF_TEST_ROWS = {
    "reference-self-test.synthetic": "endpoint-qualified",
    "reference-self-test.bigbuckbunny": "endpoint-qualified",
}


def check_every_report_written(out: Path) -> Report:
    for name in (
        "report.json",
        "report.md",
        "report.html",
        "junit.xml",
        "workload/synthetic/frames.png",
        "workload/bigbuckbunny/forward.json",
    ):
        assert (out / name).is_file(), name
    report = Report.model_validate_json((out / "report.json").read_bytes())
    assert report.reference_self_test and "test double" in report.title
    assert {r.profile: r.status for r in report.rows} == SELF_TEST_ROWS
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "<svg" in html and "test double" in html
    return report


def check_every_request_accounted_for(out: Path) -> None:
    result = row(out, "reference-self-test.synthetic")
    plan = json.loads((out / "checkpoints" / "reference-self-test.synthetic" / "aiperf" / "plan.json").read_text())
    planned = {r["session_id"]: r["phase"] for r in plan["requests"]}
    assert {r.session_id: r.phase for r in result.requests} == planned
    assert result.warmup_requests == 2 == sum(1 for p in planned.values() if p == "warmup")
    assert result.profiling_requests_planned == 3 * 2 * 5  # questions x clips x repeats
    assert result.profiling_requests_completed == 30 and result.failed_requests == 0
    assert result.client_latency.count == 30  # steady state: profiling only, warmup never enters
    assert all(r.x_request_id for r in result.requests)
    assert len({r.x_request_id for r in result.requests}) == len(result.requests)


def check_latency_and_task_time_joined_by_identity(out: Path) -> None:
    result = row(out, "reference-self-test.synthetic")
    records = [json.loads(line) for line in (out / "private" / "reference" / "records.jsonl").read_text().splitlines()]
    served = {r["request_id"]: r for r in records}
    assert result.task_time_field == "response.trtmc_timing.model_call_ms"
    for request in result.requests:
        server = served[request.x_request_id]  # the server saw the same X-Request-ID
        assert request.server_task_ms == pytest.approx(server["model_call_ms"], abs=0.01)
        assert request.server_task_ms <= request.client_latency_ms
    assert result.server_task_time.p50_ms <= result.client_latency.p50_ms


def check_answers_graded_with_reversed_controls(out: Path) -> None:
    synthetic = row(out, "reference-self-test.synthetic")
    assert synthetic.accuracy.forward == synthetic.accuracy.reversed == synthetic.accuracy.both_right == 1.0
    graded = [r for r in synthetic.requests if r.phase == "profiling"]
    assert {r.clip_id for r in graded} == {"forward", "reversed"}
    flips = {(r.question_id, r.clip_id): r.answer for r in graded}
    assert flips[("synthetic-direction", "forward")] != flips[("synthetic-direction", "reversed")]
    real = row(out, "reference-self-test.bigbuckbunny")
    assert real.accuracy.unparseable == real.accuracy.graded == 40  # "cannot tell" is no answer, not a wrong one
    assert real.accuracy.both_right == 0.0


def check_sampling_is_the_servers_and_the_real_clip_is_transport_only(out: Path) -> None:
    synthetic = row(out, "reference-self-test.synthetic")
    assert synthetic.sampling.applied_by_server == synthetic.sampling.policy  # the strip shows what it saw
    assert synthetic.sampling.mismatch is None
    real = row(out, "reference-self-test.bigbuckbunny")
    assert (
        "transport and timing only" in real.status_reason
        and "40 of 40 answers were the declared no-answer 'cannot tell'" in real.status_reason
    )
    # the exception is the self-test plan's declaration, shown on the row; every answer still had to be complete
    assert real.output_check.passed and real.output_check.by_outcome["declared-no-answer"] == 40
    assert "cannot tell" in real.output_check.declared_no_answer
    assert synthetic.output_check.passed and synthetic.output_check.declared_no_answer is None
    assert synthetic.output_check.by_outcome["resolved"] == synthetic.output_check.checked > 0


def check_identity_and_group_line(out: Path) -> None:
    """Both rows checked native/HTTP identity for real against the endpoint's native route; every report opens
    with what the run is, never "qualified"."""
    for profile in ("reference-self-test.synthetic", "reference-self-test.bigbuckbunny"):
        checked = row(out, profile)
        assert checked.identity.verdict == "held", checked.identity
        assert checked.identity.pairs and all(p.verdict == "same" for p in checked.identity.pairs)
        pair = checked.identity.pairs[0]
        assert pair.chat.route == "POST /v1/chat/completions" and pair.native.route.startswith("POST /v1/tasks/")
        assert pair.chat.request_id != pair.native.request_id
        assert (out / "checkpoints" / profile / "identity.json").is_file()
        assert [s.name for s in checked.stages][-1] == "identity"
    report = Report.model_validate_json((out / "report.json").read_bytes())
    assert report.group.status == "reference-self-test"
    assert "no TRTMC model was qualified" in report.group.line
    markdown = (out / "report.md").read_text().splitlines()
    assert report.group.line in "\n".join(markdown[:4])


def check_self_test(out: Path) -> Report:
    """Every check above; the report, for the caller's own checks."""
    report = check_every_report_written(out)
    check_every_request_accounted_for(out)
    check_latency_and_task_time_joined_by_identity(out)
    check_answers_graded_with_reversed_controls(out)
    check_sampling_is_the_servers_and_the_real_clip_is_transport_only(out)
    check_identity_and_group_line(out)
    return report
