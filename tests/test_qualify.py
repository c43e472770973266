"""The qualification end to end, for real: the published AIPerf 0.13.0 against the reference endpoint over loopback,
the TRTMC step chain through labelled test doubles, resume, reuse and --force.

The finished runs several modules read are made once per test run (shared_runs.py): the README's self-test, the
quick self-test over http, every row of the fixture tree, vidqa-2b resumed after faults, and an endpoint run with an
API key. Tests read them, or change a copy; only --force launches AIPerf here itself.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import execution_checks
import pytest
import self_test_checks as checks
from doubles.toolchain import install_doubles
from helpers import QUICK, cli, one_message, qualify, row, run_main
from shared_runs import HUB_REVISION, SERVE_TOKEN, SharedRun, tripwire_aiperf

from trtmc_videoqa.common.shell_quoting import reproducible_command
from trtmc_videoqa.results import RecordedCommand, ResultRow

FIXTURES = Path(__file__).parent / "fixtures"
DOUBLES = Path(__file__).parent / "doubles"


@pytest.fixture()
def self_test(self_test_run: SharedRun) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The embedded default, exactly as the README's main job runs it (shared_runs.self_test: made once per test
    run, in a folder and under a $HOME whose names hold a space); never changed: copy it to change it."""
    return self_test_run.out, self_test_run.done()


@pytest.mark.e2e
def test_self_test_writes_every_report(self_test) -> None:
    out, done = self_test
    assert done.returncode == 0, done.stderr
    checks.check_every_report_written(out)
    # Without a terminal, progress is plain lines: at the aiperf stage's end, its count read off AIPerf's records.
    ended = r"\[ +\d+\.\d s\] reference-self-test\.synthetic: aiperf: 30/30 profiling requests done \(warmup 2/2\)"
    assert re.search(ended, done.stderr) and "\x1b" not in done.stderr, done.stderr


@pytest.mark.e2e
def test_every_raw_log_and_records_file_is_under_a_private_folder(self_test) -> None:
    out, done = self_test
    assert done.returncode == 0, done.stderr

    def raw(path: Path) -> bool:
        return path.suffix == ".log" or path.name == "records.jsonl" or path.name.endswith("-records.jsonl")

    files = [p.relative_to(out) for p in out.rglob("*") if p.is_file()]
    public_raw = [str(p) for p in files if raw(p) and "private" not in p.parts]
    assert public_raw == []
    assert any(raw(p) for p in files)  # the run did write raw logs: they are private, not missing
    rows = sorted(p.parent for p in (out / "checkpoints").glob("*/result.json"))
    assert rows
    for row_dir in rows:
        assert (row_dir / "private" / "aiperf.log").is_file(), row_dir.name  # AIPerf's output
        assert (row_dir / "private" / "aiperf-logs" / "aiperf.log").is_file(), row_dir.name  # AIPerf's own log
        assert not (row_dir / "aiperf" / "export" / "logs").exists()
    assert (out / "private" / "reference" / "records.jsonl").is_file()


@pytest.mark.e2e
def test_every_request_accounted_for_and_warmup_apart(self_test) -> None:
    checks.check_every_request_accounted_for(self_test[0])


@pytest.mark.e2e
def test_client_latency_and_server_task_time_are_joined_by_identity(self_test) -> None:
    checks.check_latency_and_task_time_joined_by_identity(self_test[0])


@pytest.mark.e2e
def test_answers_graded_with_reversed_controls(self_test) -> None:
    checks.check_answers_graded_with_reversed_controls(self_test[0])


@pytest.mark.e2e
def test_the_server_applies_the_declared_sampling_and_the_real_clip_is_transport_only(self_test) -> None:
    checks.check_sampling_is_the_servers_and_the_real_clip_is_transport_only(self_test[0])


@pytest.mark.e2e
def test_identity_is_checked_on_both_rows_and_the_report_opens_with_the_group_line(self_test) -> None:
    checks.check_identity_and_group_line(self_test[0])


@pytest.mark.e2e
def test_each_row_writes_aiperf_quals_execution_file_and_verdict(self_test) -> None:
    out, done = self_test
    assert done.returncode == 0, done.stderr
    rows = sorted((out / "checkpoints").glob("*/result.json"))
    assert len(rows) == 2
    for path in rows:
        measured = row(out, path.parent.name)
        items = execution_checks.check_execution(path.parent, measured)
        assert len(items) == 1  # a first attempt: one batch, nothing superseded
        assert items[0]["identity"]["side"] == "candidate" and items[0]["role"] == "both"
        assert measured.aiperf_qual_verdict == "acc-inconclusive"
        assert measured.serving_mechanics.chat.startswith("the reference endpoint (a test double, not TRTMC)")
    report = json.loads((out / "report.json").read_text())
    assert report["aiperf_qual"]["verdict"] == "acc-inconclusive"
    assert "no TRTMC model was judged" in report["aiperf_qual"]["scope"]
    markdown = (out / "report.md").read_text()
    assert "## In TRTMC aiperf_qual's verdicts" in markdown
    assert "- Chat served by: the reference endpoint (a test double, not TRTMC)" in markdown
    assert "- aiperf_qual verdict: acc-inconclusive" in markdown


@pytest.mark.e2e
def test_doctor_loads_the_execution_files_with_the_checkouts_own_reader(self_test, tmp_path: Path) -> None:
    """The fixture checkout's aiperf_qual reader (a test double of TRTMC's, imported from the checkout in a
    subprocess) reads each row's file and re-checks each request_sha; a tampered record is refused, by name."""
    out, done = self_test
    assert done.returncode == 0, done.stderr
    checkout = FIXTURES / "trtmc_families"
    checked = cli("doctor", "--aiperf-qual", "--trtmc", str(checkout), "--artifacts", str(out), "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    said = {v["row"]: v for v in json.loads(checked.stdout)}
    assert set(said) == {f"checkpoints/{p.parent.name}" for p in (out / "checkpoints").glob("*/execution.jsonl")}
    assert len(said) == 2 and all(v["level"] == "ok" for v in said.values())
    assert "re-checked 30 request_sha(s)" in said["checkpoints/reference-self-test.synthetic"]["detail"]
    copy = tmp_path / "artifacts"
    shutil.copytree(out, copy)
    execution = copy / "checkpoints" / "reference-self-test.synthetic" / "execution.jsonl"
    batch = json.loads(execution.read_text())
    batch["records"][3]["request_sha"] = "0" * 64
    execution.write_text(json.dumps(batch) + "\n")
    refused = cli("doctor", "--aiperf-qual", "--trtmc", str(checkout), "--artifacts", str(copy))
    assert refused.returncode == 3  # the reader's refusal is doctor's verdict: neither a tool error nor bad input
    assert "FAIL  checkpoints/reference-self-test.synthetic" in refused.stdout
    assert "does not match its saved raw request" in refused.stdout
    missing = cli("doctor", "--aiperf-qual", "--trtmc", str(FIXTURES / "trtmc_e2e"), "--artifacts", str(out))
    assert missing.returncode == 2 and "has no apps/aiperf_qual/" in missing.stderr


@pytest.mark.e2e
def test_a_report_rebuilt_from_the_artifacts_shows_the_same_frame_strip(self_test, tmp_path: Path) -> None:
    out = self_test[0]
    done = cli("report", str(out), "--out", str(tmp_path), timeout=120)
    assert done.returncode == 0, done.stderr

    def strip(html: str) -> str:
        return re.search(r'alt="frame strip" src="data:image/png;base64,([^"]+)"', html).group(1)

    assert strip((tmp_path / "report.html").read_text()) == strip((out / "report.html").read_text())


@pytest.mark.e2e
def test_rerun_with_unchanged_inputs_reuses_without_aiperf(self_test_run: SharedRun, tmp_path: Path) -> None:
    out = self_test_run.copy(tmp_path / "artifacts")  # rows reused from another folder: the key names no path
    aiperf, launched = tripwire_aiperf(tmp_path / "tripwire")  # passes for aiperf 0.13.0; fails the run if launched
    rows = {p: out / "checkpoints" / p for p in ("reference-self-test.synthetic", "reference-self-test.bigbuckbunny")}
    kept = ("private/aiperf.log", "result.json", "requests.jsonl", "aiperf/inputs.jsonl")
    before = {(p, name): (d / name).stat().st_mtime_ns for p, d in rows.items() for name in kept}
    exports = sorted(str(p.relative_to(out)) for p in out.rglob("export*") if p.is_dir())
    done = qualify("--out", str(out), env=dict(self_test_run.env(), TRTMC_VIDEOQA_AIPERF=str(aiperf)))
    assert done.returncode == 0, done.stderr
    assert not launched.exists(), done.stdout  # AIPerf was never started
    assert done.stdout.count("(reused)") == 2
    assert {(p, name): (d / name).stat().st_mtime_ns for p, d in rows.items() for name in kept} == before
    assert sorted(str(p.relative_to(out)) for p in out.rglob("export*") if p.is_dir()) == exports  # none set aside
    assert all(row(out, profile).status == "endpoint-qualified" for profile in rows)


@pytest.mark.e2e
def test_force_measures_again(quick_http_run: SharedRun, tmp_path: Path) -> None:
    out = quick_http_run.copy(tmp_path / "out")  # a finished run: the same command again would reuse its row
    log = out / "checkpoints" / "reference-self-test.synthetic" / "private" / "aiperf.log"
    before = log.stat().st_mtime_ns
    done = qualify("--out", str(out), *quick_http_run.facts["args"], "--force")
    assert done.returncode == 0 and "(reused)" not in done.stdout, done.stderr
    assert log.stat().st_mtime_ns != before
    assert row(out, "reference-self-test.synthetic").status == "endpoint-qualified"


@pytest.mark.e2e
def test_trtmc_chain_runs_every_step_through_doubles(trtmc_rows_run: SharedRun) -> None:
    # every in-group row of the fixture tree on the synthetic workload, which the doubles answer for real
    out, done = trtmc_rows_run.out, trtmc_rows_run.done()
    assert done.returncode == 0, done.stderr
    capable = row(out, "vidqa-2b")
    assert [(s.name, s.status) for s in capable.stages] == [
        ("plan", "passed"),
        ("build", "passed"),
        ("correctness", "passed"),
        ("serve", "passed"),
        ("capability", "passed"),
        ("aiperf", "passed"),
        ("timing", "passed"),
        ("grading", "passed"),
        ("output-check", "passed"),
        ("identity", "passed"),
    ]
    assert capable.status == "aiperf-qualified"
    assert capable.aiperf_qual_verdict == "acc-inconclusive"  # no gold benchmark against the native model ran
    execution_checks.check_execution(out / "checkpoints" / "vidqa-2b", capable)
    # every gate is shown earned: task times joined (and what they measure), answers resolved, identity held
    # the double says in its own word what its task time measures (it is no TRTMC task call); the row keeps it
    assert capable.timing_scope.startswith("reference task: decode the sampled frames and answer")
    assert capable.task_time_field == "response.trtmc_timing.model_call_ms"
    assert capable.server_task_time.count == capable.profiling_requests_planned
    assert capable.output_check.passed
    assert capable.identity.verdict == "held"
    assert capable.identity.native_route == "perf_serving POST /v1/tasks/generate"
    # perf_serving's own mechanics: its --records read for each native task time, joined by X-Request-ID, and the
    # request identity of each native body as aiperf_qual computes it
    mechanics = capable.serving_mechanics
    assert mechanics.chat.startswith("trtmc-server POST /v1/chat/completions")
    assert mechanics.native.startswith("perf_serving (apps/perf_serving, trtmc backend, same bundle) POST /v1/tasks/")
    assert "execution.jsonl in TRTMC aiperf_qual's format" in mechanics.evidence
    native_records = [
        json.loads(line)
        for line in (out / "checkpoints/vidqa-2b/private/native-records.jsonl").read_text().splitlines()
    ]
    by_id = {r["request_id"]: r for r in native_records}
    assert capable.identity.native_records.endswith(
        f"{len(capable.identity.pairs)} of {len(capable.identity.pairs)} "
        "native task times found from `records.model_call_ms`"
    )
    for pair in capable.identity.pairs:
        assert pair.native.server_task_ms == by_id[pair.native.request_id]["model_call_ms"] > 0
        assert re.fullmatch(r"[0-9a-f]{64}", pair.native.request_sha)
    assert len({pair.native.request_sha for pair in capable.identity.pairs}) == len(capable.identity.pairs)
    assert capable.identity.request_fields and "video_path" in capable.identity.request_fields
    assert capable.identity.request_source.startswith("apps/benchmark/trtmc_benchmark/task_adapters.py:")
    assert "perf_serving" in _line(capable.commands["native"]) and "--bundle" in _line(capable.commands["native"])
    assert capable.normal_profile is True and capable.variant_kinds == []
    assert capable.provenance.bundle_digest.startswith("sha256:")
    # built with the manifest's precision, as the family's runner builds it, and read back from the bundle
    assert "--precision bf16" in _line(capable.commands["build"])
    assert capable.provenance.effective_precision == "bf16"
    assert capable.provenance.settings["precision_source"] == "bundle header field 'precision'"
    assert capable.provenance.settings["build"]["max_sequence_length"] == 1024  # the manifest's build settings
    assert capable.provenance.server_version.startswith("trtmc-server built from TRTMC ")
    assert capable.provenance.settings["revision_check"].startswith("not verified: the manifest pins 1111")
    assert "test double" in capable.provenance.served_by  # the server said what it is; the report says so too
    assert "TEST DOUBLE" in " ".join(g["name"] for g in capable.provenance.hardware["gpus"])
    for name in (
        "private/build.log",
        "private/correctness.log",
        "private/server.log",
        "capability.json",
        "command.txt",
    ):
        assert (out / "checkpoints" / "vidqa-2b" / name).is_file(), name
    # the public row says what the private logs saw, and its commands run from the artifact folder elsewhere
    correctness = next(s for s in capable.stages if s.name == "correctness")
    assert correctness.detail.endswith(": 1 passed, 0 failed, 0 skipped")
    build = _line(capable.commands["build"])  # a placeholder left for the shell: "$BUNDLE_CACHE"/...
    assert build.startswith("trtmc build ") and '--output "$BUNDLE_CACHE"/' in build
    serve = _line(capable.commands["serve"])
    assert serve.startswith('trtmc-server "$BUNDLE_CACHE"/') and "checkpoints/vidqa-2b/private/server-records" in serve
    assert "--input-file checkpoints/vidqa-2b/aiperf/inputs.jsonl" in _line(capable.commands["aiperf"])
    assert str(out) not in (out / "checkpoints" / "vidqa-2b" / "command.txt").read_text()
    unsupported = row(out, "vlm-3b")
    assert unsupported.status == "unsupported" and "one image" in unsupported.status_reason
    assert unsupported.aiperf_qual_verdict == "not-covered"
    assert not (out / "checkpoints" / "vlm-3b" / "execution.jsonl").exists()  # it ran no AIPerf
    group = json.loads((out / "report.json").read_text())["aiperf_qual"]
    # their severity order: an in-group model with no video path (not-covered) outranks acc-inconclusive; the
    # variants that were not run are listed, and do not count in the group's verdict, which is its models'
    assert group["verdict"] == "not-covered"
    assert list(group["rows"]) == ["not-run", "not-covered", "acc-inconclusive"]
    assert "vlm-3b" in group["rows"]["not-covered"] and group["rows"]["acc-inconclusive"] == ["vidqa-2b"]
    assert group["rows"]["not-run"] == ["vidqa-2b-fp8", "vidqa-2b-native", "vidqa-2b-tp2"]
    assert any(e.startswith("families/vlm/") for e in unsupported.status_evidence)
    assert (out / "inventory.json").is_file()
    junit = (out / "junit.xml").read_text()
    assert 'name="vlm-3b"' in junit and "<skipped" in junit


def _line(command: RecordedCommand) -> str:
    """A recorded command as command.txt writes it: one shell-quoted line."""
    return reproducible_command(command.argv)


def vidqa_through_doubles(capsys: pytest.CaptureFixture[str], tmp_path: Path, **env: str) -> ResultRow:
    """vidqa-2b from the fixture tree through the TRTMC test doubles (env added to theirs); its row."""
    done = run_main(
        capsys,
        "qualify",
        "--trtmc",
        str(FIXTURES / "trtmc_families"),
        "--out",
        str(tmp_path / "out"),
        "--profile",
        "vidqa-2b",
        *QUICK,
        env=dict(install_doubles(tmp_path / "bin"), **env),
    )
    assert done.returncode == 3, done.stderr  # each caller's row fails: the named row's verdict is the run's
    return row(tmp_path / "out", "vidqa-2b")


def test_a_family_command_that_builds_its_own_bundle_does_not_validate_ours(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    failed = vidqa_through_doubles(capsys, tmp_path, VIDQA_FIXTURE_REBUILDS="1")
    assert failed.status == "failed" and failed.failed_stage == "correctness"
    assert "built itself, not this one" in failed.status_reason
    ours = next(s for s in failed.stages if s.name == "build").detail.split()[-1]
    assert f"ours {ours}; the family's sha256:" in failed.stages[-1].detail


@pytest.mark.e2e
def test_the_checkpoints_own_tokenizer_is_taken_from_the_hub_cache(trtmc_resumed_run: SharedRun) -> None:
    # vidqa-2b with the checkpoint's tokenizer files in a hub cache (HF_HUB_CACHE) at the revision the manifest
    # pins, which is also what the cache's refs/main says the hub served; the run that qualified (the last one)
    done = trtmc_resumed_run.done("resume")
    assert done.returncode == 0, done.stderr
    qualified = row(trtmc_resumed_run.out, "vidqa-2b")
    assert qualified.status == "aiperf-qualified"
    own = f"the checkpoint's own tokenizer (example/VidQA-2B@{HUB_REVISION}, hub cache)"
    assert qualified.provenance.tokenizer == own
    assert qualified.provenance.settings["revision_check"].startswith("verified: the hub cache's main of example")
    # named by placeholder in public files: where the hub cache is differs on another machine
    snapshot = f"models--example--VidQA-2B/snapshots/{HUB_REVISION}"
    assert f'--tokenizer "$HF_HUB_CACHE"/{snapshot}' in _line(qualified.commands["aiperf"])


def test_a_family_run_that_only_skips_validates_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    skipped = vidqa_through_doubles(capsys, tmp_path, VIDQA_FIXTURE_SKIPS="1")
    assert (skipped.status, skipped.failed_stage) == ("failed", "correctness")  # pytest exited 0, nothing passed
    assert "no test passed: Bundle not found" in skipped.status_reason


# A build that dies leaves no bundle to reuse, and the next run builds again and goes on: the first fault of
# test_faults.py's resumed TRTMC row (shared_runs.trtmc_resumed_after_faults).


def without_trtmc(capsys: pytest.CaptureFixture[str], out: Path, profile: str) -> ResultRow:
    """`profile` of the fixture tree with neither TRTMC nor a GPU on PATH; its row. The row stops before any request:
    the small workload is prepared quicker."""
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin")
    argv = ("qualify", "--trtmc", str(FIXTURES / "trtmc_families"), "--out", str(out), "--profile", profile, *QUICK)
    done = run_main(capsys, *argv, env=env)
    assert done.returncode == 4, done.stderr  # blocked, nothing failed: nothing qualifiable on this machine
    return row(out, profile)


def test_without_gpu_or_trtmc_the_row_is_blocked_not_faked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocked = without_trtmc(capsys, tmp_path, "vidqa-2b")
    assert blocked.status == "blocked" and "trtmc" in blocked.status_reason
    assert not (tmp_path / "checkpoints" / "vidqa-2b" / "aiperf").exists()


def test_missing_family_test_blocks_at_correctness(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    env = install_doubles(tmp_path / "bin")
    done = run_main(
        capsys,
        "qualify",
        "--trtmc",
        str(FIXTURES / "trtmc_e2e"),
        "--out",
        str(tmp_path / "out"),
        "--profile",
        "oldvideo-7b",
        *QUICK,
        env=env,
    )
    assert done.returncode == 4, done.stderr  # the named row is blocked: nothing failed, nothing qualified
    result = row(tmp_path / "out", "oldvideo-7b")
    assert result.status == "blocked" and "no E2E correctness test" in result.status_reason
    assert [s.name for s in result.stages][-1] == "correctness"
    # the older layout has no perf_serving: the row says which mechanics it lacks
    assert result.serving_mechanics.native.startswith("none: the checkout has no apps/perf_serving/trtmc_perf_serving/")
    assert result.aiperf_qual_verdict == "not-run"


@pytest.fixture()
def text_only_server(tmp_path: Path):
    from trtmc_videoqa.serving.process import ServerProcess, free_loopback_port

    port = free_loopback_port()
    with ServerProcess(
        [sys.executable, str(DOUBLES / "text_only_server.py"), str(port)],
        url=f"http://127.0.0.1:{port}",
        log_path=tmp_path / "text-only.log",
        startup_timeout_s=20,
    ):
        yield f"http://127.0.0.1:{port}"


def test_a_server_that_rejects_video_is_unsupported_with_the_rejection(
    tmp_path: Path, text_only_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--endpoint", text_only_server, "--model", "text-only-double", "--workload", "synthetic")
    out = tmp_path / "out"  # beside the server's log, which is no file of a run's
    done = run_main(capsys, "qualify", *args, "--out", str(out), "--server-setting", "media_cache=off")
    assert done.returncode == 4, done.stderr  # unsupported: a capability gap, nothing qualifiable
    result = row(out, "text-only-double")
    assert result.status == "unsupported" and "HTTP 400" in result.status_reason
    assert result.status_evidence == ["capability.json"]
    capability = json.loads((out / "checkpoints" / "text-only-double" / "capability.json").read_text())
    assert capability["rejected"] and capability["http_status"] == 400
    assert not (out / "checkpoints" / "text-only-double" / "aiperf").exists()


def test_unreachable_endpoint_fails_at_capability(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from trtmc_videoqa.serving.process import free_loopback_port

    url = f"http://127.0.0.1:{free_loopback_port()}"
    args = ("qualify", "--endpoint", url, "--model", "m", "--workload", "synthetic", "--out", str(tmp_path))
    done = run_main(capsys, *args)  # a whole run, in this process: it ends at the capability check
    assert done.returncode == 3, done.stderr  # the row failed: the verdict, not a tool error (1) nor bad input (2)
    result = row(tmp_path, "m")
    assert result.status == "failed" and result.failed_stage == "capability"
    assert run_main(capsys, *args, "--exit-zero").returncode == 0  # a report-only job


def test_busy_output_directory_fails_fast(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open(tmp_path / ".trtmc-videoqa.lock", "w") as held:  # this process holds the lock, as a live run does
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write(str(os.getpid()))
        held.flush()
        # A run that waited for the lock would wait as long as this test holds it: it answers at once instead.
        done = run_main(capsys, "qualify", "--out", str(tmp_path))
    assert done.returncode == 2 and f"in use by another run (pid {os.getpid()})" in one_message(done)
    assert [p.name for p in tmp_path.iterdir()] == [".trtmc-videoqa.lock"]  # nothing started


CONTENDER = """
import sys, time
from pathlib import Path
from trtmc_videoqa.common.output_lock import OutputBusy, OutputLock
out, go, release = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
def wait_for(path):
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
print("waiting", flush=True)
wait_for(go)
try:
    with OutputLock(out):
        print("held", flush=True)
        wait_for(release)  # held until every other contender has tried
except OutputBusy:
    print("busy", flush=True)
"""


def test_runs_starting_together_never_share_an_output_directory(tmp_path: Path) -> None:
    go, release = tmp_path / "go", tmp_path / "release"
    contenders = [
        subprocess.Popen(
            [sys.executable, "-c", CONTENDER, str(tmp_path / "out"), str(go), str(release)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        assert [p.stdout.readline().strip() for p in contenders] == ["waiting"] * 4  # every one imported, waiting
        go.touch()
        said = sorted(p.stdout.readline().strip() for p in contenders)  # each tried the lock once
        release.touch()
        assert said == ["busy", "busy", "busy", "held"]
        assert all(p.wait(timeout=60) == 0 for p in contenders)
    finally:
        release.touch()
        for p in contenders:
            if p.poll() is None:
                p.kill()
            p.communicate()
    assert not (tmp_path / "out" / ".trtmc-videoqa.lock").exists()  # released by its holder


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def qualify(*args: str) -> subprocess.CompletedProcess[str]:
        return run_main(capsys, "qualify", *args)

    done = qualify("--trtmc", str(FIXTURES / "trtmc_families"), "--out", str(tmp_path / "out"), "--dry-run")
    assert done.returncode == 0
    assert (
        "vidqa-2b: build -> correctness -> serve -> capability -> aiperf -> timing -> grading -> output-check -> "
        "identity" in done.stdout
    )
    assert "vidqa-2b-native: planned: variant of example/VidQA-2B" in done.stdout  # not a second model
    assert "vlm-3b: unsupported" in done.stdout
    assert "vidqa-2b-tp2: blocked: distributed variant" in done.stdout  # held as the real run holds it
    assert not (tmp_path / "out").exists()
    unknown = qualify("--trtmc", str(FIXTURES / "trtmc_families"), "--profile", "nosuch", "--dry-run")
    assert unknown.returncode == 2 and "nosuch not in the inventory" in unknown.stderr  # as the real run refuses
    self_test = qualify("--dry-run")
    assert "on synthetic: capability check, then aiperf 2 warmup + 30 profiling" in self_test.stdout
    assert "on bigbuckbunny: capability check, then aiperf 2 warmup + 40 profiling" in self_test.stdout


def test_endpoint_needs_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = run_main(capsys, "qualify", "--endpoint", "http://127.0.0.1:9", "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "--model" in one_message(done)
    assert not (tmp_path / "out").exists()


@pytest.mark.e2e
def test_an_api_key_reaches_the_server_but_no_artifact(auto_key_run: SharedRun) -> None:
    # The reference endpoint with the key in $TRTMC_SERVE_TOKEN and its sampling stated (shared_runs.py)
    token, out, done = SERVE_TOKEN, auto_key_run.out, auto_key_run.done()
    assert done.returncode == 0, done.stderr
    measured = row(out, "trtmc-videoqa-reference")
    assert measured.status == "endpoint-qualified"
    # The server samples uniform:16; the workload declares uniform:8: the row says which one the server applied.
    assert auto_key_run.facts["sampling_policy"].startswith("uniform:16")
    assert measured.sampling.applied_by_server.startswith("uniform:16")
    assert "not one of the workload's declared policies" in measured.sampling.mismatch
    leaked = [p for p in out.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]
    assert leaked == []
    assert token not in done.stdout + done.stderr
    command = (out / "checkpoints" / "trtmc-videoqa-reference" / "command.txt").read_text()
    # the key travels by variable through AIPerf's config file, never on a command line
    assert "--config checkpoints/trtmc-videoqa-reference/aiperf/aiperf-config.yaml" in command
    assert "--api-key " not in command


def test_capable_variants_are_held_with_a_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    held = without_trtmc(capsys, tmp_path, "vidqa-2b-tp2")
    assert held.status == "blocked" and "tensor_parallel_size=2" in held.status_reason
    assert held.status_evidence == ["families/vidqa/tests/manifests/vidqa-2b-tp2.json"]


def test_smoke_variants_are_planned_unless_named() -> None:
    from trtmc_videoqa.inventory import run_inventory
    from trtmc_videoqa.plan.trtmc_checks import variant_hold

    entry = next(e for e in run_inventory(FIXTURES / "trtmc_families").entries if e.profile == "vidqa-2b")
    smoke = entry.model_copy(update={"profile": "vidqa-2b-l0", "variant_kinds": ["l0"]})
    held = variant_hold(smoke, chosen=False)
    assert held.status == "planned" and "--profile" in held.status_reason
    assert variant_hold(smoke, chosen=True) is None
    assert variant_hold(entry.model_copy(update={"variant_kinds": ["quantized"]}), chosen=False) is None


def _on_a_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run argv with a pseudo-terminal as its stdout and stderr; (exit code, what it printed)."""
    import pty

    main, secondary = pty.openpty()
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, env=env) as process:
        os.close(secondary)
        printed = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal closed: the process is done writing
                break
            if not chunk:
                break
            printed += chunk
        code = process.wait(timeout=120)
    os.close(main)
    return code, printed.decode(errors="replace")


def test_progress_shows_on_a_terminal_plainly_in_ci_and_not_with_quiet(tmp_path: Path) -> None:
    """Progress lines on a terminal; with CI set (as without a terminal) the same lines, plain, never rewritten in
    place; none with --quiet. (The cadence and the line rewritten in place: tests/test_progress.py.)"""
    argv = [
        sys.executable,
        "-m",
        "trtmc_videoqa",
        "qualify",
        "--endpoint",
        "http://127.0.0.1:9",
        "--model",
        "m",
        "--workload",
        "synthetic",
        "--request-timeout",
        "2",
    ]
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    code, printed = _on_a_terminal([*argv, "--out", str(tmp_path / "tty")], env)
    assert code == 3, printed  # nothing listens: the row fails
    assert re.search(r"\[ +\d+\.\d s\] m: capability check", printed), printed  # elapsed time, then the step
    code, printed = _on_a_terminal([*argv, "--out", str(tmp_path / "ci")], dict(env, CI="true"))
    assert code == 3 and re.search(r"\[ +\d+\.\d s\] m: capability check", printed), printed
    assert "\x1b" not in printed, printed  # plain lines: nothing rewritten in place
    code, printed = _on_a_terminal([*argv, "--out", str(tmp_path / "quiet"), "--quiet"], env)
    assert code == 3 and "s] " not in printed, printed


def test_a_revision_that_is_not_a_plain_name_runs_nothing() -> None:
    from trtmc_videoqa.hub.cache import hub_snapshot
    from trtmc_videoqa.plan.trtmc_checks import manifest_path_problem
    from trtmc_videoqa.results import CheckpointEntry

    entry = CheckpointEntry(
        profile="p",
        family="vidqa",
        manifest="m.json",
        checkpoint="org/model",
        revision="../../../etc",
        catalog_status="ready",
        in_group=True,
        group_reason="",
        verdict="temporal-video-qa",
    )
    assert "not a plain commit or tag name" in manifest_path_problem(entry, FIXTURES / "trtmc_families", "families")
    assert hub_snapshot(entry, {"HF_HUB_CACHE": "/hub"}) is None
    plain = entry.model_copy(update={"revision": "a" * 40})
    assert hub_snapshot(plain, {"HF_HUB_CACHE": "/hub"}) == Path("/hub/models--org--model/snapshots") / ("a" * 40)
