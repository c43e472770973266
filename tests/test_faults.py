"""Faults, for real: each ends in a clear status or message (no traceback) and keeps what was measured; a re-run
of the same command resumes. The servers are the reference endpoint (a test double) with its fault knobs, run as
their own processes on 127.0.0.1, and the published AIPerf 0.13.0. Every wait is bounded in count and time.
Faults in what a server answers (HTTP errors, timeouts, body limits, never ready) are in test_faults_answers.py.

Runs are kept small (`--workload synthetic --repeats 1 --warmup 1`: one warmup and six profiling requests) where a
test is not about volume. Chat requests reach the reference endpoint in this order: #1 the capability check, #2 the
warmup request, #3..#8 the profiling requests.

Each fault test checks the fault itself: what was recorded, the message, the exit code, no traceback. Resuming is
proven once, by `test_after_a_fault_the_same_command_resumes_and_measures_again`, over the faults whose resume path
differs: a failed AIPerf run with exports to set aside (a crash mid-profiling; HTTP error answers leave the same
kind of failed run, so their faults are checked without a re-run), rows that failed before AIPerf ran (a TRTMC
build that dies, then a TRTMC server never ready, where the built bundle is reused), and an interrupted run.
A re-run costs one more AIPerf run, about 15 s, nearly all of it AIPerf's own start-up. The TRTMC row's three runs
are made once per test run (shared_runs.trtmc_resumed_after_faults), since two other modules read its last run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import execution_checks
import pytest
from fault_helpers import LOCK, MODEL, endpoint, requests_file, server_records
from helpers import QUICK, eventually, no_traceback, one_message, reference, row, run_main
from shared_runs import TRTMC_HUB_TOKEN, TRTMC_KEY, SharedRun

from trtmc_videoqa.results import ResultRow
from trtmc_videoqa.serving.process import free_loopback_port
from trtmc_videoqa.workloads import WorkloadError, load_workload
from trtmc_videoqa.workloads.seal import seal_workload_file

Captured = pytest.CaptureFixture[str]

FIXTURES = Path(__file__).parent / "fixtures"
SYNTHETIC = Path(__file__).resolve().parents[1] / "src" / "trtmc_videoqa" / "workloads" / "data" / "synthetic"


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
    stale: set[str] | None = None  # the faulty attempt's request ids (None: read from `out` before the re-run)


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
    assert done.returncode == 3, done.stderr  # an honest status was reached: failed, with its evidence
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


def trtmc_build_dies_then_server_never_ready(run: SharedRun) -> Faulted:
    """vidqa-2b through the TRTMC test doubles (shared_runs.trtmc_resumed_after_faults, which made its three runs
    with one command): a build that dies after writing part of the bundle, then a trtmc-server that never gets
    ready. The hub token and the server's API key are set: the build double prints the hub token (as a careless
    tool would), the server double requires the key (as trtmc-server does)."""
    hub_token, api_key = TRTMC_HUB_TOKEN, TRTMC_KEY
    dies = run.done("build-dies")
    assert dies.returncode == 3, dies.stderr  # the named row failed at build: its verdict, not a tool error
    no_traceback(dies)
    died = row(run.folder / "after-build-dies", "vidqa-2b")
    assert died.failed_stage == "build" and "exit 9" in died.status_reason
    bundles_left = run.folder / "after-build-dies" / "bundles"
    assert [p.name for p in bundles_left.rglob("*") if p.is_file()] == []  # nothing half-built left to reuse

    done = run.done("never-ready")  # `--startup-timeout 20` against a server ready after an hour
    assert done.returncode == 3, done.stderr
    no_traceback(done)
    seen = run.folder / "after-never-ready"
    stuck = row(seen, "vidqa-2b")
    assert (stuck.status, stuck.failed_stage) == ("failed", "serve")
    assert "not ready within 20 s" in stuck.status_reason and "HTTP 503" in stuck.status_reason
    assert [(s.name, s.status) for s in stuck.stages][-1] == ("serve", "failed")
    assert ("build", "passed") in [(s.name, s.status) for s in stuck.stages]  # the next run built again
    row_dir = seen / "checkpoints" / "vidqa-2b"
    assert (row_dir / "private" / "server.log").is_file() and (row_dir / "private" / "build.log").is_file()
    build_log = (row_dir / "private" / "build.log").read_text()
    assert hub_token not in build_log and "<redacted>" in build_log
    bundles = sorted((seen / "bundles").rglob("*.bundle"))
    assert [p.name for p in bundles] == ["vidqa-2b.bundle"]  # the manifest's name
    built_at = bundles[0].stat().st_mtime_ns  # copied with its time
    out = run.out

    def rerun() -> tuple[subprocess.CompletedProcess[str], None]:
        return run.done("resume"), None  # the server double gets ready now

    def after(again: subprocess.CompletedProcess[str]) -> None:
        # The status above says the API key reached the server (it answers 401 without it); the bundle is reused.
        assert [p.stat().st_mtime_ns for p in (out / "bundles").rglob("*.bundle")] == [built_at]
        leaked = [
            p
            for p in run.folder.rglob("*")
            if p.is_file() and (hub_token.encode() in p.read_bytes() or api_key.encode() in p.read_bytes())
        ]
        assert leaked == [run.folder / "serve.key"]  # the key's own file, and nothing any run wrote
        for phase in ("build-dies", "never-ready", "resume"):
            text = run.done(phase).stdout + run.done(phase).stderr
            assert hub_token not in text and api_key not in text
        resumed_dir = out / "checkpoints" / "vidqa-2b"
        command = (resumed_dir / "command.txt").read_text()  # the key by variable, through AIPerf's config file
        assert "--config checkpoints/vidqa-2b/aiperf/aiperf-config.yaml" in command and "--api-key " not in command
        assert "${TRTMC_SERVE_TOKEN}" in (resumed_dir / "aiperf" / "aiperf-config.yaml").read_text()

    return Faulted(out, "vidqa-2b", rerun, "aiperf-qualified", None, False, after, stale=set())


# --- the user's inputs ----------------------------------------------------------------------------------------


def _user_workload(tmp: Path, clip_bytes: bytes) -> Path:
    """A copy of the synthetic workload whose forward clip is replaced (not sealed)."""
    directory = tmp / "my-workload"
    shutil.copytree(SYNTHETIC, directory)
    (directory / "synthetic-forward.mp4").write_bytes(clip_bytes)
    return directory


def test_the_documented_seal_command_seals_a_changed_workload(tmp_path: Path) -> None:
    directory = _user_workload(tmp_path, _with_free_box(_CLIP, 1000))  # a changed clip: its digest differs
    with pytest.raises(WorkloadError, match="record it on purpose with `python -m trtmc_videoqa.workloads.seal"):
        load_workload(directory / "workload.json")
    done = subprocess.run(
        [sys.executable, "-m", "trtmc_videoqa.workloads.seal", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    no_traceback(done)
    assert load_workload(directory / "workload.json").spec.clips  # sealed: its identity matches again


def _corrupt(data: bytes) -> bytes:
    damaged = bytearray(data)
    payload = damaged.index(b"mdat") + 4
    damaged[payload : payload + 4] = b"\xff\xff\xff\xff"  # the first H.264 sample's length prefix
    return bytes(damaged)


def _with_free_box(data: bytes, size: int) -> bytes:
    """The clip with a top-level `free` box of `size` bytes after it: still a playable MP4, only larger."""
    return data + struct.pack(">I", size + 8) + b"free" + bytes(size)


_CLIP = (SYNTHETIC / "synthetic-forward.mp4").read_bytes()
BAD_CLIPS = {
    "corrupt": (_corrupt(_CLIP), True, "is corrupt or truncated", "re-export or re-download it"),
    "truncated": (_CLIP[: len(_CLIP) // 2], True, "is truncated", "re-export or re-download it"),
    "empty": (b"", False, "is empty (0 bytes)", "restore the committed file"),
    "not a video": (b"meeting notes, not a video\n" * 40, True, "is not a video file", "check that it really is"),
    "oversized": (_with_free_box(_CLIP, 5 << 20), True, "too large for the server's body limit", "--body-limit"),
}


@pytest.mark.parametrize("case", sorted(BAD_CLIPS))
def test_a_bad_clip_in_a_users_workload_is_bad_input(tmp_path: Path, case: str, capsys: Captured) -> None:
    data, seal, problem, fix = BAD_CLIPS[case]
    workload = _user_workload(tmp_path, data)
    if seal:  # sealed, so its identity matches and the run looks at the clip itself
        seal_workload_file(workload)  # what `python -m trtmc_videoqa.workloads.seal DIR` does (tested above)
    out = tmp_path / "out"
    args = ("--endpoint", "http://127.0.0.1:9", "--model", "m", "--workload", str(workload), "--out", str(out))
    done = run_main(capsys, "qualify", *args)
    assert done.returncode == 2, done.stderr
    message = one_message(done)
    assert "synthetic-forward.mp4" in message and problem in message and fix in message
    assert not (out / "checkpoints").exists()  # refused before anything was sent
    assert not (out / LOCK).exists()


def test_a_workload_clip_path_leading_outside_its_directory_is_bad_input(tmp_path: Path, capsys: Captured) -> None:
    directory = tmp_path / "escaping"
    shutil.copytree(SYNTHETIC, directory)
    raw = json.loads((directory / "workload.json").read_text())
    raw["clips"][0]["file"] = "../outside.mp4"
    (tmp_path / "outside.mp4").write_bytes(_CLIP)
    (directory / "workload.json").write_text(json.dumps(raw))
    args = ("--endpoint", "http://127.0.0.1:9", "--model", "m", "--workload", str(directory))
    done = run_main(capsys, "qualify", *args, "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "leads outside the workload directory" in one_message(done)
    assert not (tmp_path / "out").exists()


def test_a_missing_aiperf_is_bad_input_before_anything_starts(tmp_path: Path, capsys: Captured, monkeypatch) -> None:
    out = tmp_path / "out"
    done = run_main(capsys, "qualify", "--aiperf", str(tmp_path / "no-aiperf"), *QUICK, "--out", str(out))
    assert done.returncode == 2
    message = one_message(done)
    assert "aiperf was not found" in message and "pip install aiperf==0.13.0" in message
    assert not out.exists()  # nothing started: no lock, no server, no artifact
    monkeypatch.setenv("TRTMC_VIDEOQA_AIPERF", str(tmp_path / "elsewhere" / "aiperf"))
    elsewhere = run_main(capsys, "qualify", *QUICK, "--out", str(out))
    assert elsewhere.returncode == 2 and not out.exists()
    assert "aiperf was not found at " in one_message(elsewhere)
    # With nothing configured the published aiperf is found and the run goes ahead: every self-test shows that
    # (shared_runs.self_test runs the README's command as is).


def test_an_aiperf_of_the_wrong_version_is_bad_input_before_anything_starts(tmp_path: Path, capsys: Captured) -> None:
    interpreter = tmp_path / "python"  # reports an installed aiperf 0.12.0, as another environment's Python would
    interpreter.write_text(
        f'#!/bin/sh\nexec {sys.executable} -c "print(\'{{\\"version\\": \\"0.12.0\\", \\"direct_url\\": null}}\')"\n'
    )
    interpreter.chmod(0o755)
    fake = tmp_path / "aiperf"
    fake.write_text(f"#!{interpreter}\n")
    fake.chmod(0o755)
    out = tmp_path / "out"
    done = run_main(capsys, "qualify", "--aiperf", str(fake), *QUICK, "--out", str(out))
    assert done.returncode == 2
    assert "is aiperf 0.12.0, but this tool needs the published 0.13.0" in one_message(done)
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
    # AIPerf's whole process group is gone (a process just killed may take a moment to leave the table)
    assert eventually(lambda: all(_members(group) == [] for group in groups)), {g: _members(g) for g in groups}
    assert not (out / LOCK).exists()
    row_dir = out / "checkpoints" / MODEL
    for kept in ("capability.json", "aiperf/plan.json", "aiperf/inputs.jsonl", "private/aiperf.log", "requests.jsonl"):
        assert (row_dir / kept).is_file(), kept
    interrupted = row(out, MODEL)
    assert (interrupted.status, interrupted.failed_stage) == ("interrupted", None)
    assert interrupted.interruption is not None and interrupted.interruption.stage == "aiperf"
    assert "interrupted (SIGINT) while aiperf ran" in interrupted.status_reason
    # A new server (a new address): the user starts it again and runs the same command.
    return Faulted(out, MODEL, healthy_endpoint(tmp, out, name="again"), "endpoint-qualified", 6, True)


RESUMABLE: dict[str, Callable[[Path, pytest.FixtureRequest], Faulted]] = {
    "crash-during-profiling": lambda tmp, _: crash_during_profiling(tmp),
    "trtmc-build-dies-then-server-never-ready": lambda _, request: trtmc_build_dies_then_server_never_ready(
        request.getfixturevalue("trtmc_resumed_run")
    ),
    "sigint-during-aiperf": lambda tmp, _: sigint_during_aiperf(tmp),
}


@pytest.mark.e2e
@pytest.mark.parametrize("fault", list(RESUMABLE))
def test_after_a_fault_the_same_command_resumes_and_measures_again(
    tmp_path: Path, fault: str, request: pytest.FixtureRequest
) -> None:
    """The fault first, with every check on it; then the same command once the fault is gone. It exits 0 without a
    traceback, reuses nothing of the failed row (a failed row is never reused), measures every planned request
    again, keeps nothing stale as its own (no request of the faulty attempt, whose exports are set aside, not lost)
    and releases the lock."""
    faulted = RESUMABLE[fault](tmp_path, request)
    stale = faulted.stale
    if stale is None:
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
    "time.sleep(600)"
)


def test_a_second_run_on_a_busy_output_directory_fails_fast_and_leaves_the_first_alone(
    tmp_path: Path, capsys: Captured
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # A live run holds it as a run does: its pid in the lock file, and an flock on that file while it lives.
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out / LOCK)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # A run that waited for the lock would wait as long as the holder lives (10 minutes): it answers at once.
        done = run_main(capsys, "qualify", *QUICK, "--out", str(out))
        assert done.returncode == 2
        assert "in use by another run" in one_message(done)
        assert (out / LOCK).read_text() == str(holder.pid)  # the holder's lock is not taken from it
    finally:
        holder.kill()
        holder.communicate()
    # The holder is gone: its lock is stale, so the next run takes it over, reaches a status and releases it.
    url = f"http://127.0.0.1:{free_loopback_port()}"  # nothing listens: the capability check fails at once
    done = run_main(capsys, "qualify", "--endpoint", url, "--model", "m", "--workload", "synthetic", "--out", str(out))
    assert done.returncode == 3, done.stderr  # the row's status: failed
    assert row(out, "m").failed_stage == "capability" and not (out / LOCK).exists()
