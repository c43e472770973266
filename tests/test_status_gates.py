"""The status a row's stages earn, and the timing gate, as pure functions (the real chain is in test_gates.py)."""

from __future__ import annotations

from trtmc_videoqa.results import RequestRow, StageResult
from trtmc_videoqa.rows.status import status_from_stages
from trtmc_videoqa.stages.timing import NOT_REPORTED, timing_stage


def _requests(task_times: list[float | None]) -> list[RequestRow]:
    warmup = RequestRow(session_id="w", phase="warmup", question_id="q", clip_id="forward", repeat=0)
    return [warmup] + [
        RequestRow(
            session_id=f"s{i}",
            x_request_id=f"x{i}",
            phase="profiling",
            question_id="q",
            clip_id="forward",
            repeat=i,
            server_task_ms=t,
        )
        for i, t in enumerate(task_times)
    ]


def test_on_trtmc_server_every_task_time_is_required() -> None:
    stage = timing_stage(_requests([1.0, None, 2.0, None]), required=True, task_time_field="f", timing_scope="s")
    assert stage.status == "failed"
    assert stage.detail.startswith("2 of 4 profiling requests have no server task time")
    assert "s1" in stage.detail and "x1" in stage.detail  # the first one missing, by both identities
    whole = timing_stage(_requests([1.0, 2.0]), required=True, task_time_field="f", timing_scope="s")
    assert whole.status == "passed" and "all 2 profiling requests" in whole.detail


def test_an_endpoint_that_reports_no_task_time_is_stated_not_failed() -> None:
    none = timing_stage(_requests([None, None]), required=False, task_time_field=None, timing_scope=None)
    assert none.status == "skipped" and NOT_REPORTED in none.detail
    some = timing_stage(_requests([1.0, None]), required=False, task_time_field="f", timing_scope="s")
    assert some.status == "passed" and "1 of 2" in some.detail and NOT_REPORTED in some.detail


def _stage(name: str, status: str, detail: str = "") -> StageResult:
    return StageResult(name=name, status=status, detail=detail, evidence=[f"{name}.json"])


def test_the_first_stage_that_did_not_pass_decides_the_status() -> None:
    passed = [_stage("capability", "passed"), _stage("aiperf", "passed")]
    failed = status_from_stages(
        [*passed, _stage("output-check", "failed", "0 of 8 resolve"), _stage("identity", "blocked")],
        "aiperf-qualified",
    )
    assert failed == ("failed", "output-check: 0 of 8 resolve", "output-check", ["output-check.json"])
    blocked = status_from_stages([*passed, _stage("identity", "blocked", "no perf_serving")], "aiperf-qualified")
    assert blocked[:3] == ("blocked", "identity: no perf_serving", None)
    rejected = status_from_stages([_stage("capability", "rejected", "HTTP 400")], "aiperf-qualified")
    assert rejected[0] == "unsupported" and "HTTP 400" in rejected[1]


def test_a_gate_that_does_not_apply_is_named_in_the_reason_never_passed_silently() -> None:
    stages = [
        _stage("aiperf", "passed"),
        _stage("timing", "skipped", f"server task time: {NOT_REPORTED}"),
        _stage("output-check", "passed", "6 of 6 resolve"),
        _stage("identity", "skipped", "not-applicable: no native route"),
    ]
    status, reason, failed, _ = status_from_stages(stages, "endpoint-qualified")
    assert (status, failed) == ("endpoint-qualified", None)
    assert NOT_REPORTED in reason and "identity: not-applicable: no native route" in reason


def test_a_row_with_no_outcome_for_a_gate_is_never_qualified() -> None:
    """Whatever its stages say, a measured row that lacks a gate's outcome (a ladder that ended early) fails there."""
    from trtmc_videoqa.climb.protocol import Measurement
    from trtmc_videoqa.results import Provenance, ResultRow
    from trtmc_videoqa.rows.status import measured_row

    row = ResultRow(profile="p", status="planned", status_reason="planned")
    provenance = Provenance(tool_versions={}, workload="w", workload_digest="d", mode="trtmc")
    measurement = Measurement()
    measurement.stages += [_stage("capability", "passed"), _stage("aiperf", "passed"), _stage("identity", "passed")]
    lacking = measured_row(row, measurement, "aiperf-qualified", provenance)
    assert (lacking.status, lacking.failed_stage) == ("failed", "output-check")
    assert lacking.status_reason.startswith("output-check: the row ended with no outcome for this gate")
    measurement.stages.insert(2, _stage("output-check", "passed"))
    assert measured_row(row, measurement, "aiperf-qualified", provenance).status == "aiperf-qualified"
