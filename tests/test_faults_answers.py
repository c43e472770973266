"""Faults in what a server answers, for real, through the published AIPerf 0.13.0 where a run gets that far: HTTP
error answers mid-run, request timeouts (of the capability check and of AIPerf's own requests), a body over a
limit, a server that never gets ready. Each ends in a clear status or message, no traceback, and keeps what was
measured. The reference endpoint (a test double) plays the server with its fault knobs.

Chat requests reach the reference endpoint in this order: #1 the capability check, #2 the warmup request, #3..#8
the profiling requests. The re-run after a failed AIPerf run (the same kind of run these leave) is proven in
test_faults.py, after a crash mid-profiling.
"""

from __future__ import annotations

import json
from pathlib import Path

import execution_checks
import pytest
from fault_helpers import LOCK, MODEL, endpoint, requests_file, server_records
from helpers import QUICK, no_traceback, one_message, reference, row, run_main

from trtmc_videoqa.reference import FaultKnobs, ReferenceConfig, ReferenceServer, error_positions

Captured = pytest.CaptureFixture[str]


def http_error_answers(tmp: Path, status: int) -> None:
    out = tmp / "out"
    with reference(tmp, error_rate=0.5, error_status=status) as url:
        done = endpoint(url, out)
    assert done.returncode == 3, done.stderr  # the row failed at aiperf
    no_traceback(done)
    result = row(out, MODEL)
    failing = set(error_positions(0.5, 8))  # #2 warmup, #4 #6 #8 profiling
    assert failing == {2, 4, 6, 8}
    # The capability check (#1) passed, so a 4xx mid-run is a failed run, not a missing capability.
    assert [(s.name, s.status) for s in result.stages][1:3] == [("capability", "passed"), ("aiperf", "failed")]
    assert (result.status, result.failed_stage) == ("failed", "aiperf")
    assert f"4 request(s) failed (4 HTTP {status})" in result.status_reason
    assert result.failed_requests == 4 and result.profiling_requests_completed == 3
    records = requests_file(out)
    bad = [r for r in records if r["error"]]
    assert len(bad) == 4 and all(r["http_status"] == status and "injected fault" in r["error"] for r in bad)
    assert {r["session_id"] for r in bad} == {r.session_id for r in result.requests if r.http_status == status}
    good = [r for r in records if not r["error"]]
    assert all(r["client_latency_ms"] and r["server_task_ms"] for r in good)
    served = {r["request_id"]: r["status"] for r in server_records(tmp)}
    assert all(served[r["x_request_id"]] == status for r in bad)  # the same requests, by identity, on both sides
    assert result.client_latency.count == 3  # the figures cover what succeeded, nothing more


@pytest.mark.e2e
@pytest.mark.parametrize("status", [400, 500])
def test_http_error_answers_mid_run_are_a_failed_run_recorded_request_by_request(tmp_path: Path, status: int) -> None:
    http_error_answers(tmp_path, status)  # the re-run after such a failed run: test_faults.py's, after a crash


@pytest.mark.e2e
def test_request_timeouts_are_recorded_with_the_fix(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # Every request runs past --request-timeout, the capability check's first: it stops there, naming the limit.
    with reference(tmp_path, added_task_ms=1500) as url:
        done = endpoint(url, out, "--request-timeout", "0.5")
    assert done.returncode == 3, done.stderr  # a failed row
    no_traceback(done)
    result = row(out, MODEL)
    assert (result.status, result.failed_stage) == ("failed", "capability")
    assert "within 0.5 s (--request-timeout)" in result.status_reason
    assert "raise --request-timeout" in result.status_reason


@pytest.mark.e2e
def test_aiperf_request_timeouts_are_recorded_request_by_request_with_the_fix(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # The capability check is answered at once (--slow-after 1); every AIPerf request then runs past the limit.
    with reference(tmp_path, added_task_ms=1500, slow_after=1) as url:
        done = endpoint(url, out, "--request-timeout", "0.5")
    assert done.returncode == 3, done.stderr  # a failed row
    no_traceback(done)
    result = row(out, MODEL)
    assert (result.status, result.failed_stage) == ("failed", "aiperf")
    assert "7 request(s) failed (7 TimeoutError)" in result.status_reason
    assert "raise --request-timeout" in result.status_reason
    records = requests_file(out)
    # AIPerf writes no raw export when every request failed; its records export still counts, so nothing is lost.
    assert len(records) == 7 and all(r["x_request_id"] and "TimeoutError" in r["error"] for r in records)
    # aiperf_qual's evidence of the run says the same: no profiling record that AIPerf exported is valid
    (batch,) = execution_checks.lines(out / "checkpoints" / MODEL)
    assert batch["expected_requests"] == 6 and not any(r["valid"] for r in batch["records"])
    assert result.aiperf_qual_verdict == "error"


def test_a_body_over_the_limit_is_refused_before_sending(tmp_path: Path, capsys: Captured) -> None:
    out = tmp_path / "out"
    with ReferenceServer(ReferenceConfig(records_path=tmp_path / "reference-records.jsonl")) as server:
        args = ("--endpoint", server.url, "--model", MODEL, *QUICK, "--out", str(out), "--body-limit", "3000")
        done = run_main(capsys, "qualify", *args)
    assert done.returncode == 2
    message = one_message(done)
    assert "synthetic-forward.mp4" in message and "too large for the server's body limit" in message
    assert "--body-limit" in message and "--max-body-bytes" in message
    assert server_records(tmp_path) == []  # nothing was sent
    assert not (out / "checkpoints").exists() and not (out / LOCK).exists()  # nothing left: a re-run starts afresh


def test_a_server_that_answers_413_is_recorded_with_the_fix(tmp_path: Path, capsys: Captured) -> None:
    out = tmp_path / "out"
    records = tmp_path / "reference-records.jsonl"
    config = ReferenceConfig(max_body_bytes=3000, records_path=records)  # lower than we were told
    with ReferenceServer(config) as server:  # the run, in this process, ends at the capability check
        done = run_main(capsys, "qualify", "--endpoint", server.url, "--model", MODEL, *QUICK, "--out", str(out))
    assert done.returncode == 3, done.stderr  # failed at capability
    result = row(out, MODEL)
    assert (result.status, result.failed_stage) == ("failed", "capability")  # not "unsupported": no capability gap
    assert "HTTP 413" in result.status_reason and "--max-body-bytes" in result.status_reason
    capability = json.loads((out / "checkpoints" / MODEL / "capability.json").read_text())
    assert capability["http_status"] == 413 and not capability["rejected"]
    assert [r["status"] for r in server_records(tmp_path)] == [413]
    assert not (out / "checkpoints" / MODEL / "aiperf").exists()


def test_an_endpoint_that_never_gets_ready_fails_at_the_capability_check(tmp_path: Path, capsys: Captured) -> None:
    out = tmp_path / "out"
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(ready_after_s=3600))) as server:
        done = run_main(capsys, "qualify", "--endpoint", server.url, "--model", MODEL, *QUICK, "--out", str(out))
    assert done.returncode == 3, done.stderr  # failed at capability
    result = row(out, MODEL)
    assert (result.status, result.failed_stage) == ("failed", "capability")
    assert "HTTP 503" in result.status_reason and "not ready" in result.status_reason
    assert not (out / "checkpoints" / MODEL / "aiperf").exists()
