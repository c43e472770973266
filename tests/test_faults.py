"""Faults, for real: each ends in a clear status or message (no traceback) and keeps what was measured; a re-run
of the same command resumes. The servers are the reference endpoint (a test double) with its fault knobs, run as
their own processes on 127.0.0.1, and the published AIPerf 0.13.0. Every wait is bounded in count and time.

Runs are kept small (`--workload synthetic --repeats 1 --warmup 1`: one warmup and six profiling requests) where a
test is not about volume. Chat requests reach the reference endpoint in this order: #1 the capability check, #2 the
warmup request, #3..#8 the profiling requests.

Each fault test checks the fault itself: what was recorded, the message, the exit code, no traceback. Resuming is
proven once, by `test_after_a_fault_the_same_command_resumes_and_measures_again`, over the faults whose resume path
differs: a failed AIPerf run with exports to set aside (a crash mid-profiling, HTTP error answers), a row that
failed before AIPerf ran (a TRTMC server never ready, where the built bundle is reused), and an interrupted run.
A re-run costs one more AIPerf run, about 15 s, nearly all of it AIPerf's own start-up.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import execution_checks
import pytest
from doubles.toolchain import install_doubles
from helpers import QUICK, no_traceback, one_message, qualify, reference, row

from trtmc_videoqa.reference import (
    DEFAULT_MODEL_NAME,
    FaultKnobs,
    ReferenceConfig,
    ReferenceServer,
    error_positions,
)
from trtmc_videoqa.results import ResultRow
from trtmc_videoqa.serving.process import free_loopback_port

FIXTURES = Path(__file__).parent / "fixtures"
SYNTHETIC = Path(__file__).resolve().parents[1] / "src" / "trtmc_videoqa" / "workloads" / "data" / "synthetic"
MODEL = DEFAULT_MODEL_NAME
LOCK = ".trtmc-videoqa.lock"


def endpoint(url: str, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return qualify("--endpoint", url, "--model", MODEL, *QUICK, "--out", str(out), *extra, env=env)


def requests_file(out: Path, profile: str = MODEL) -> list[dict]:
    path = out / "checkpoints" / profile / "requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def server_records(tmp: Path, name: str = "reference") -> list[dict]:
    path = tmp / f"{name}-records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


Rerun = Callable[[], tuple[subprocess.CompletedProcess[str], list[dict] | None]]


@dataclass
class Faulted:
    """A run that met a fault (already checked), and how to run the same command again once the fault is gone."""

    out: Path
    profile: str
    rerun: Rerun  # the re-run, and the records of the server that answered it (None: it keeps none)
    resumed_status: str
    planned: int | None  # profiling requests the re-run must measure (None: whatever the row planned)
    exports_set_aside: bool  # the faulty attempt left AIPerf exports, to be moved to export.previous/
    after: Callable[[subprocess.CompletedProcess[str]], None] = lambda again: None  # what only this fault shows


def healthy_endpoint(tmp: Path, out: Path, *, port: int | None = None, name: str = "healthy") -> Rerun:
    """The fault is gone (a healthy endpoint, on the same address when given): the same command again."""

    def rerun() -> tuple[subprocess.CompletedProcess[str], list[dict]]:
        with reference(tmp, port=port, name=name) as url:
            done = endpoint(url, out)
        return done, server_records(tmp, name)

    return rerun


# --- the server -----------------------------------------------------------------------------------------------


def crash_during_profiling(tmp: Path) -> Faulted:
    out = tmp / "out"
    port = free_loopback_port()
    # Answers #1 (capability), #2 (warmup), #3 and #4 (profiling), then dies on #5 without answering it.
    with reference(tmp, port=port, name="crashing", crash_after=4) as url:
        done = endpoint(url, out)
    assert done.returncode == 0, done.stderr  # an honest status was reached: failed, with its evidence
    no_traceback(done)
    crashed = row(out, MODEL)
    assert (crashed.status, crashed.failed_stage) == ("failed", "aiperf")
    assert "request(s) failed" in crashed.status_reason
    assert crashed.profiling_requests_completed == 2 and crashed.failed_requests == 4
    kept = {r["session_id"]: r for r in requests_file(out)}
    assert len(kept) == 7  # every planned request is accounted for, the failed ones with their error
    completed = [r for r in kept.values() if r["phase"] == "profiling" and r["error"] is None]
    served = {r["request_id"]: r for r in server_records(tmp, "crashing")}
    for request in completed:  # what completed is kept, measured and joined to the server's own record
        assert request["client_latency_ms"] > 0 and request["answer"] and request["grade"]
        assert request["server_task_ms"] == pytest.approx(served[request["x_request_id"]]["model_call_ms"], abs=0.01)
    assert {r.session_id for r in crashed.requests if r.error is None and r.phase == "profiling"} == {
        r["session_id"] for r in completed
    }
    errors = [r["error"] for r in kept.values() if r["error"]]
    assert all(("Disconnect" in e) or ("Connect" in e) for e in errors), errors
    # The server is back, on the same address.
    return Faulted(out, MODEL, healthy_endpoint(tmp, out, port=port), "endpoint-qualified", 6, True)


def http_error_answers(tmp: Path, status: int) -> Faulted:
    out = tmp / "out"
    port = free_loopback_port()
    with reference(tmp, port=port, error_rate=0.5, error_status=status) as url:
        done = endpoint(url, out)
    assert done.returncode == 0, done.stderr
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
    # The server is healthy again, on the same address.
    return Faulted(out, MODEL, healthy_endpoint(tmp, out, port=port), "endpoint-qualified", 6, True)


@pytest.mark.e2e
def test_http_400_answers_mid_run_are_a_failed_run_recorded_request_by_request(tmp_path: Path) -> None:
    http_error_answers(tmp_path, 400)  # HTTP 500 answers, the same checks, then a re-run: in the resume test


@pytest.mark.e2e
def test_request_timeouts_are_recorded_with_the_fix(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # Every request runs past --request-timeout, the capability check's first: it stops there, naming the limit.
    with reference(tmp_path, added_task_ms=1500) as url:
        done = endpoint(url, out, "--request-timeout", "0.5")
    assert done.returncode == 0, done.stderr
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
    assert done.returncode == 0, done.stderr
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


def test_a_body_over_the_limit_is_refused_before_sending(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with reference(tmp_path) as url:
        done = endpoint(url, out, "--body-limit", "3000")
    assert done.returncode == 2
    message = one_message(done)
    assert "synthetic-forward.mp4" in message and "too large for the server's body limit" in message
    assert "--body-limit" in message and "--max-body-bytes" in message
    no_traceback(done)
    assert server_records(tmp_path) == []  # nothing was sent
    assert not (out / "checkpoints").exists() and not (out / LOCK).exists()  # nothing left: a re-run starts afresh


def test_a_server_that_answers_413_is_recorded_with_the_fix(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with reference(tmp_path, max_body_bytes=3000) as url:  # the server's limit is lower than we were told
        done = endpoint(url, out)
    assert done.returncode == 0, done.stderr
    no_traceback(done)
    result = row(out, MODEL)
    assert (result.status, result.failed_stage) == ("failed", "capability")  # not "unsupported": no capability gap
    assert "HTTP 413" in result.status_reason and "--max-body-bytes" in result.status_reason
    capability = json.loads((out / "checkpoints" / MODEL / "capability.json").read_text())
    assert capability["http_status"] == 413 and not capability["rejected"]
    assert [r["status"] for r in server_records(tmp_path)] == [413]
    assert not (out / "checkpoints" / MODEL / "aiperf").exists()


def test_an_endpoint_that_never_gets_ready_fails_at_the_capability_check(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(ready_after_s=3600))) as server:
        done = endpoint(server.url, out)
    assert done.returncode == 0, done.stderr
    no_traceback(done)
    result = row(out, MODEL)
    assert (result.status, result.failed_stage) == ("failed", "capability")
    assert "HTTP 503" in result.status_reason and "not ready" in result.status_reason
    assert not (out / "checkpoints" / MODEL / "aiperf").exists()


def trtmc_server_never_ready(tmp: Path) -> Faulted:
    """The TRTMC chain through labelled doubles. The hub token and the server's API key are set: the build double
    prints the hub token (as a careless tool would), the server double requires the key (as trtmc-server does)."""
    hub_token, api_key = "hf_TESTTOKEN_0123456789abcdef", "sk-serve-TESTKEY-0123456789"
    key_file = tmp / "serve.key"
    key_file.write_text(api_key + "\n")
    env = install_doubles(tmp / "bin")
    env.pop("TRTMC_SERVE_TOKEN", None)
    env["HF_TOKEN"] = hub_token
    out = tmp / "out"
    args = (
        "--trtmc",
        str(FIXTURES / "trtmc_families"),
        "--out",
        str(out),
        "--profile",
        "vidqa-2b",
        "--api-key-file",
        str(key_file),
        *QUICK,  # the synthetic workload, which the doubles answer for real
    )
    slow = dict(env, TRTMC_SERVER_DOUBLE_READY_AFTER_S="3600")
    started = time.monotonic()
    done = qualify(*args, "--startup-timeout", "4", env=slow)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60
    no_traceback(done)
    stuck = row(out, "vidqa-2b")
    assert (stuck.status, stuck.failed_stage) == ("failed", "serve")
    assert "not ready within 4 s" in stuck.status_reason and "HTTP 503" in stuck.status_reason
    assert [(s.name, s.status) for s in stuck.stages][-1] == ("serve", "failed")
    row_dir = out / "checkpoints" / "vidqa-2b"
    assert (row_dir / "private" / "server.log").is_file() and (row_dir / "private" / "build.log").is_file()
    build_log = (row_dir / "private" / "build.log").read_text()
    assert hub_token not in build_log and "<redacted>" in build_log
    bundles = sorted((out / "bundles").rglob("*.bundle"))
    assert len(bundles) == 1
    built_at = bundles[0].stat().st_mtime_ns

    def rerun() -> tuple[subprocess.CompletedProcess[str], None]:
        return qualify(*args, env=env), None  # the server double gets ready now

    def after(again: subprocess.CompletedProcess[str]) -> None:
        # The status above says the API key reached the server (it answers 401 without it); the bundle is reused.
        assert bundles[0].stat().st_mtime_ns == built_at
        leaked = [
            p
            for p in out.rglob("*")
            if p.is_file() and (hub_token.encode() in p.read_bytes() or api_key.encode() in p.read_bytes())
        ]
        assert leaked == []
        for text in (done.stdout, done.stderr, again.stdout, again.stderr):
            assert hub_token not in text and api_key not in text
        command = (row_dir / "command.txt").read_text()  # the key by variable, through AIPerf's config file
        assert "--config checkpoints/vidqa-2b/aiperf/aiperf-config.yaml" in command and "--api-key " not in command
        assert "${TRTMC_SERVE_TOKEN}" in (row_dir / "aiperf" / "aiperf-config.yaml").read_text()

    return Faulted(out, "vidqa-2b", rerun, "aiperf-qualified", None, False, after)


# --- the user's inputs ----------------------------------------------------------------------------------------


def _user_workload(tmp: Path, clip_bytes: bytes, *, seal: bool = True) -> Path:
    """A copy of the synthetic workload whose forward clip is replaced, sealed (so its identity matches) unless
    sealing is what would refuse it."""
    directory = tmp / "my-workload"
    shutil.copytree(SYNTHETIC, directory)
    (directory / "synthetic-forward.mp4").write_bytes(clip_bytes)
    if seal:
        subprocess.run(
            [sys.executable, "-m", "trtmc_videoqa.workloads.seal", str(directory)],
            check=True,
            capture_output=True,
            timeout=60,
        )
    return directory


def _corrupt(data: bytes) -> bytes:
    damaged = bytearray(data)
    payload = damaged.index(b"mdat") + 4
    damaged[payload : payload + 4] = b"\xff\xff\xff\xff"  # the first H.264 sample's length prefix
    return bytes(damaged)


_CLIP = (SYNTHETIC / "synthetic-forward.mp4").read_bytes()
BAD_CLIPS = {
    "corrupt": (_corrupt(_CLIP), True, "is corrupt or truncated", "re-export or re-download it"),
    "truncated": (_CLIP[: len(_CLIP) // 2], True, "is truncated", "re-export or re-download it"),
    "empty": (b"", False, "is empty (0 bytes)", "restore the committed file"),
    "not a video": (b"meeting notes, not a video\n" * 40, True, "is not a video file", "check that it really is"),
    "oversized": (os.urandom(5 << 20), True, "too large for the server's body limit", "--body-limit"),
}


@pytest.mark.parametrize("case", sorted(BAD_CLIPS))
def test_a_bad_clip_in_a_users_workload_is_bad_input(tmp_path: Path, case: str) -> None:
    data, seal, problem, fix = BAD_CLIPS[case]
    workload = _user_workload(tmp_path, data, seal=seal)
    out = tmp_path / "out"
    done = qualify("--endpoint", "http://127.0.0.1:9", "--model", "m", "--workload", str(workload), "--out", str(out))
    assert done.returncode == 2, done.stderr
    message = one_message(done)
    assert "synthetic-forward.mp4" in message and problem in message and fix in message
    assert not (out / "checkpoints").exists()  # refused before anything was sent
    assert not (out / LOCK).exists()


def test_a_workload_clip_path_leading_outside_its_directory_is_bad_input(tmp_path: Path) -> None:
    directory = tmp_path / "escaping"
    shutil.copytree(SYNTHETIC, directory)
    raw = json.loads((directory / "workload.json").read_text())
    raw["clips"][0]["file"] = "../outside.mp4"
    (tmp_path / "outside.mp4").write_bytes(_CLIP)
    (directory / "workload.json").write_text(json.dumps(raw))
    done = qualify(
        "--endpoint", "http://127.0.0.1:9", "--model", "m", "--workload", str(directory), "--out", str(tmp_path / "out")
    )
    assert done.returncode == 2
    assert "leads outside the workload directory" in one_message(done)


def test_a_missing_aiperf_is_bad_input_before_anything_starts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = qualify("--aiperf", str(tmp_path / "no-aiperf"), *QUICK, "--out", str(out))
    assert done.returncode == 2
    message = one_message(done)
    no_traceback(done)
    assert "aiperf was not found" in message and "pip install aiperf==0.13.0" in message
    assert not out.exists()  # nothing started: no lock, no server, no artifact
    env = dict(os.environ, TRTMC_VIDEOQA_AIPERF=str(tmp_path / "elsewhere" / "aiperf"))
    elsewhere = qualify(*QUICK, "--out", str(out), env=env)
    assert elsewhere.returncode == 2 and not out.exists()
    no_traceback(elsewhere)
    # With nothing configured the published aiperf is found and the run goes ahead: every self-test shows that
    # (test_qualify.py's `self_test` fixture runs the README's command as is).


def test_an_aiperf_of_the_wrong_version_is_bad_input_before_anything_starts(tmp_path: Path) -> None:
    interpreter = tmp_path / "python"  # reports an installed aiperf 0.12.0, as another environment's Python would
    interpreter.write_text(
        f'#!/bin/sh\nexec {sys.executable} -c "print(\'{{\\"version\\": \\"0.12.0\\", \\"direct_url\\": null}}\')"\n'
    )
    interpreter.chmod(0o755)
    fake = tmp_path / "aiperf"
    fake.write_text(f"#!{interpreter}\n")
    fake.chmod(0o755)
    out = tmp_path / "out"
    done = qualify("--aiperf", str(fake), *QUICK, "--out", str(out))
    assert done.returncode == 2
    assert "is aiperf 0.12.0, but this tool needs the published 0.13.0" in one_message(done)
    no_traceback(done)
    assert not out.exists()  # with the published 0.13.0 the run goes ahead, as every self-test shows


# --- the run itself -------------------------------------------------------------------------------------------


def _group_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def _aiperf_groups(marker: str) -> set[int]:
    """Process groups of running `aiperf profile` processes whose argv names `marker` (our artifact dir)."""
    groups = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"profile" in argv and any(marker.encode() in part for part in argv):
            group = _group_of(int(entry.name))
            if group is not None:
                groups.add(group)
    return groups


def _members(group: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _group_of(int(entry.name)) == group:
            try:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                members.append(int(entry.name))
    return members


def sigint_during_aiperf(tmp: Path) -> Faulted:
    out = tmp / "out"
    with reference(tmp, added_task_ms=400) as url:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "trtmc_videoqa",
                "qualify",
                "--endpoint",
                url,
                "--model",
                MODEL,
                *QUICK,
                "--out",
                str(out),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            groups: set[int] = set()
            deadline = time.monotonic() + 120
            # Bounded wait: the capability check and the warmup have been served, AIPerf is in its profiling phase.
            while time.monotonic() < deadline and process.poll() is None:
                groups |= _aiperf_groups(str(out))
                if groups and len(server_records(tmp)) >= 3:
                    break
                time.sleep(0.05)
            assert process.poll() is None and groups, "AIPerf never reached its profiling phase"
            os.kill(process.pid, signal.SIGINT)  # to our process only, as a terminal's Ctrl-C would reach us
            stdout, stderr = process.communicate(timeout=90)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert done.returncode == 130
    no_traceback(done)
    assert "interrupted" in one_message(done)
    assert all(_members(group) == [] for group in groups)  # AIPerf's whole process group is gone
    assert not (out / LOCK).exists()
    row_dir = out / "checkpoints" / MODEL
    for kept in ("capability.json", "aiperf/plan.json", "aiperf/inputs.jsonl", "private/aiperf.log", "requests.jsonl"):
        assert (row_dir / kept).is_file(), kept
    interrupted = row(out, MODEL)
    assert (interrupted.status, interrupted.failed_stage) == ("failed", "aiperf")
    assert "interrupted" in interrupted.status_reason
    # A new server (a new address): the user starts it again and runs the same command.
    return Faulted(out, MODEL, healthy_endpoint(tmp, out, name="again"), "endpoint-qualified", 6, True)


RESUMABLE: dict[str, Callable[[Path], Faulted]] = {
    "crash-during-profiling": crash_during_profiling,
    "http-500-answers": lambda tmp: http_error_answers(tmp, 500),
    "trtmc-server-never-ready": trtmc_server_never_ready,
    "sigint-during-aiperf": sigint_during_aiperf,
}


@pytest.mark.e2e
@pytest.mark.parametrize("fault", list(RESUMABLE))
def test_after_a_fault_the_same_command_resumes_and_measures_again(tmp_path: Path, fault: str) -> None:
    """The fault first, with every check on it; then the same command once the fault is gone. It exits 0 without a
    traceback, reuses nothing of the failed row (a failed row is never reused), measures every planned request
    again, keeps nothing stale as its own (no request of the faulty attempt, whose exports are set aside, not lost)
    and releases the lock."""
    faulted = RESUMABLE[fault](tmp_path)
    stale = {r["x_request_id"] for r in requests_file(faulted.out, faulted.profile)}
    again, served = faulted.rerun()
    assert again.returncode == 0, again.stderr
    no_traceback(again)
    assert "(reused)" not in again.stdout
    assert not (faulted.out / LOCK).exists()
    resumed = row(faulted.out, faulted.profile)
    assert resumed.status == faulted.resumed_status and resumed.failed_stage is None, resumed.status_reason
    assert resumed.failed_requests == 0 and resumed.profiling_requests_completed == resumed.profiling_requests_planned
    assert resumed.profiling_requests_planned == (faulted.planned or resumed.profiling_requests_planned) > 0
    records = requests_file(faulted.out, faulted.profile)
    assert records and all(r["error"] is None for r in records)
    assert {r["session_id"] for r in records} == {r.session_id for r in resumed.requests}
    assert not stale & {r["x_request_id"] for r in records}  # every request is this attempt's own
    if served is not None:  # ... and was answered by the healthy server, joined to its record by identity
        by_id = {r["request_id"]: r for r in served}
        for request in records:
            assert request["server_task_ms"] == pytest.approx(by_id[request["x_request_id"]]["model_call_ms"], abs=0.01)
    previous = faulted.out / "checkpoints" / faulted.profile / "aiperf" / "export.previous"
    assert previous.is_dir() == faulted.exports_set_aside  # the faulty attempt's AIPerf exports, kept beside
    if faulted.exports_set_aside:
        assert any(previous.glob("*.jsonl"))
    _superseded_in_execution_file(faulted, resumed)
    faulted.after(again)


def _superseded_in_execution_file(faulted: Faulted, resumed: ResultRow) -> None:
    """aiperf_qual's evidence after the resume: the faulty attempt's AIPerf run, where its exports now are, marked
    superseded; the new run the one active batch (an attempt that never reached AIPerf left no batch)."""
    row_dir = faulted.out / "checkpoints" / faulted.profile
    items = execution_checks.check_execution(row_dir, resumed)
    if not faulted.exports_set_aside:
        assert [item["batch_id"] for item in items] == [0]
        return
    first, event, second = items
    assert event == {"event": "supersede_failed_attempt", "batch_ids": [first["batch_id"]]}
    assert {r["output_ref"]["aiperf_run"] for r in first["records"]} <= {"aiperf/export.previous"}
    assert second["batch_id"] > first["batch_id"]
    incomplete = first["aiperf_exit"] != 0 or not all(r["valid"] for r in first["records"])
    assert incomplete or len(first["records"]) < first["expected_requests"]


HOLD_LOCK = (
    "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o644); "
    "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, str(os.getpid()).encode()); print('held', flush=True); "
    "time.sleep(60)"
)


def test_a_second_run_on_a_busy_output_directory_fails_fast_and_leaves_the_first_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # A live run holds it as a run does: its pid in the lock file, and an flock on that file while it lives.
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out / LOCK)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        done = qualify(*QUICK, "--out", str(out))
        assert done.returncode == 2 and time.monotonic() - started < 10
        assert "in use by another run" in one_message(done)
        assert (out / LOCK).read_text() == str(holder.pid)  # the holder's lock is not taken from it
    finally:
        holder.kill()
        holder.communicate()
    # The holder is gone: its lock is stale, so the next run takes it over, reaches a status and releases it.
    url = f"http://127.0.0.1:{free_loopback_port()}"  # nothing listens: the capability check fails at once
    done = qualify("--endpoint", url, "--model", "m", "--workload", "synthetic", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert row(out, "m").failed_stage == "capability" and not (out / LOCK).exists()
