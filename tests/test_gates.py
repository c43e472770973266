"""Each gate a qualified row must pass, proven through the real step chain: the published AIPerf 0.13.0 against the
reference endpoint (a test double, started here as a user would start a server) or through the TRTMC test doubles.

A row reaches `endpoint-qualified` / `aiperf-qualified` only when every profiling answer is complete and resolves to
one option (`output-check`), every task time is joined on trtmc-server (`timing`), and the native Task path and HTTP
chat agree (`identity`); a server without a native route is `not-applicable`, named so, and may still qualify.

Each failing gate is its own run (a row stops at the first gate it fails). The rows that pass every gate are read
from runs made once per test run for several modules (shared_runs.py): an endpoint with no native route named, one
with its native route named, and every row of the fixture tree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from doubles.toolchain import install_doubles
from helpers import QUICK, reference, row, run_main
from shared_runs import SharedRun

from trtmc_videoqa.reference import DEFAULT_MODEL_NAME
from trtmc_videoqa.results import Report

pytestmark = pytest.mark.e2e  # every test here runs AIPerf

FIXTURES = Path(__file__).parent / "fixtures"
PROFILE = DEFAULT_MODEL_NAME.replace("/", "--")
CANNOT_TELL = "I cannot tell from this clip."


def endpoint(url: str, out: Path, *extra: str) -> Path:
    """`qualify --endpoint URL` in this process (helpers.run_main: AIPerf and the servers are still processes of
    their own; the run's own process only cost the imports of a second interpreter)."""
    done = run_main(None, "qualify", "--endpoint", url, "--model", DEFAULT_MODEL_NAME, "--out", str(out), *extra)
    assert done.returncode == 3, done.stderr  # every caller's row fails a gate: the failed row's code
    return out


def trtmc(tmp_path: Path, *extra: str, **env: str) -> Path:
    """The fixture tree through the TRTMC test doubles (their knobs in env) on the synthetic workload, which the
    doubles really answer; the output directory."""
    out = tmp_path / "out"
    done = run_main(
        None,
        "qualify",
        "--trtmc",
        str(FIXTURES / "trtmc_families"),
        "--out",
        str(out),
        *QUICK,
        *extra,
        env=dict(install_doubles(tmp_path / "bin"), **env),
    )
    assert done.returncode == 3, done.stderr  # every caller's vidqa-2b (the group's model) fails a gate
    return out


def test_cannot_tell_answers_fail_at_output_check_on_any_server_but_the_self_tests(tmp_path: Path) -> None:
    # The reference endpoint started by hand, on the Big Buck Bunny workload: it answers "cannot tell", and nothing
    # in this run declares that acceptable (only the self-test's own plan does).
    with reference(tmp_path) as url:
        out = endpoint(url, tmp_path / "out", "--repeats", "1", "--warmup", "1")
    failed = row(out, PROFILE)
    assert (failed.status, failed.failed_stage) == ("failed", "output-check")
    check = failed.output_check
    assert not check.passed and check.by_outcome["unparseable"] == check.checked == 8
    assert check.declared_no_answer is None
    assert 0 < len(check.examples) <= 5 and "cannot tell" in check.examples[0].answer
    assert json.loads((out / "checkpoints" / PROFILE / "output_check.json").read_text())["passed"] is False
    assert failed.accuracy is not None  # accuracy stays a figure beside the gate
    report = (out / "report.md").read_text()
    assert "output-check" in report and "cannot tell" in report


def test_garbage_answers_fail_at_output_check(tmp_path: Path) -> None:
    with reference(tmp_path, answer_text="zebra banana umbrella") as url:
        out = endpoint(url, tmp_path / "out", *QUICK)
    failed = row(out, PROFILE)
    assert (failed.status, failed.failed_stage) == ("failed", "output-check")
    assert failed.output_check.by_outcome["unparseable"] == 6
    assert "zebra banana umbrella" in failed.status_reason


def test_answers_cut_at_the_token_limit_fail_even_when_they_name_an_option(tmp_path: Path) -> None:
    with reference(tmp_path, answer_text="B because the square moves to the left") as url:
        out = endpoint(url, tmp_path / "out", *QUICK, "--max-tokens", "3")
    failed = row(out, PROFILE)
    assert (failed.status, failed.failed_stage) == ("failed", "output-check")
    assert failed.output_check.by_outcome["cut-off"] == 6
    assert all(example.outcome == "cut-off" for example in failed.output_check.examples)


def test_a_server_without_a_native_route_is_not_applicable_and_may_still_qualify(auto_key_run: SharedRun) -> None:
    # the reference endpoint, no --native-url (shared_runs.endpoint_auto_with_key: also an API key, the server's
    # stated sampling, and video over http after a data-URL refusal; none of which is a native route)
    out = auto_key_run.out
    assert auto_key_run.done().returncode == 0, auto_key_run.done().stderr
    qualified = row(out, PROFILE)
    assert qualified.status == "endpoint-qualified", qualified.status_reason
    assert qualified.identity.verdict == "not-applicable" and "--native-url" in qualified.identity.reason
    stage = qualified.stages[-1]
    assert (stage.name, stage.status) == ("identity", "skipped")  # never a pass
    assert "identity: not-applicable" in qualified.status_reason
    assert qualified.normal_profile is None  # no TRTMC checkpoint behind an endpoint
    markdown = (out / "report.md").read_text()
    assert "not-applicable" in markdown
    report = Report.model_validate_json((out / "report.json").read_bytes())
    assert report.group.status == "endpoint" and "no TRTMC model was qualified" in report.group.line


def test_a_named_native_route_is_checked_and_drift_fails_the_row_with_both_answers(
    native_route_run: SharedRun, tmp_path: Path
) -> None:
    # the reference endpoint with --native-url naming its own native route (shared_runs.endpoint_with_native_route,
    # whose workload also declares an extra body: the same six questions and clips)
    assert native_route_run.done().returncode == 0, native_route_run.done().stderr
    held = row(native_route_run.out, PROFILE)
    assert held.status == "endpoint-qualified" and held.identity.verdict == "held"
    assert len(held.identity.pairs) == 6  # every (question, clip) of the synthetic workload, once each way
    with reference(tmp_path, name="drifting", identity_drift_rate=0.5) as url:
        out = endpoint(url, tmp_path / "drift", *QUICK, "--native-url", url)
    drifted = row(out, PROFILE)
    assert (drifted.status, drifted.failed_stage) == ("failed", "identity")
    different = [p for p in drifted.identity.pairs if p.verdict == "different"]
    assert len(different) == 3  # native requests #2, #4 and #6
    first = different[0]
    assert first.chat.answer and first.native.answer and first.chat.answer != first.native.answer
    saved = json.loads((out / "checkpoints" / PROFILE / "identity.json").read_text())
    assert saved["verdict"] == "differs" and {p["verdict"] for p in saved["pairs"]} == {"same", "different"}
    assert first.chat.answer[:40] in drifted.status_reason or first.native.answer[:40] in drifted.status_reason


def test_trtmc_rows_missing_some_task_times_fail_at_timing(tmp_path: Path) -> None:
    out = trtmc(tmp_path, "--profile", "vidqa-2b", TRTMC_SERVER_DOUBLE_OMIT_TASK_TIME_RATE="0.5")
    failed = row(out, "vidqa-2b")
    assert (failed.status, failed.failed_stage) == ("failed", "timing")
    # chat requests #1 capability, #2 warmup, #3..#8 profiling: the knob drops the task time of #4, #6 and #8
    assert "3 of 6 profiling requests have no server task time" in failed.status_reason
    assert failed.identity is None  # the row stopped before identity


def test_trtmc_identity_drift_fails_at_identity(tmp_path: Path) -> None:
    out = trtmc(tmp_path, "--profile", "vidqa-2b", TRTMC_PERF_SERVING_DOUBLE_DRIFT_RATE="1")
    failed = row(out, "vidqa-2b")
    assert (failed.status, failed.failed_stage) == ("failed", "identity")
    assert all(p.verdict == "different" for p in failed.identity.pairs)
    assert (out / "checkpoints" / "vidqa-2b" / "private" / "native-server.log").is_file()


def test_trtmc_cannot_tell_answers_fail_at_output_check(tmp_path: Path) -> None:
    out = trtmc(tmp_path, "--profile", "vidqa-2b", TRTMC_SERVER_DOUBLE_ANSWER_TEXT=CANNOT_TELL)
    failed = row(out, "vidqa-2b")
    assert (failed.status, failed.failed_stage) == ("failed", "output-check")
    group = Report.model_validate_json((out / "report.json").read_bytes()).group
    assert group.status == "failed" and "vidqa-2b" in group.line
    junit = (out / "junit.xml").read_text()
    assert 'name="group"' in junit and "<failure" in junit


def test_two_capable_profiles_of_one_checkpoint_give_one_model_row_and_one_variant_row(
    trtmc_rows_run: SharedRun,
) -> None:
    out = trtmc_rows_run.out  # no --profile: every in-group row, the normal profiles run (shared_runs.trtmc_every_row)
    assert trtmc_rows_run.done().returncode == 0, trtmc_rows_run.done().stderr
    normal, twin = row(out, "vidqa-2b"), row(out, "vidqa-2b-native")
    assert normal.normal_profile is True and normal.status == "aiperf-qualified", normal.status_reason
    assert twin.normal_profile is False and twin.status == "planned"
    assert "variant of example/VidQA-2B" in twin.status_reason and "vidqa-2b" in twin.status_reason
    assert not (out / "checkpoints" / "vidqa-2b-native" / "aiperf").exists()  # listed, not run
    unsupported = row(out, "vlm-3b")
    assert unsupported.provenance.trtmc_commit and unsupported.provenance.inventory_digest.startswith("sha256:")
    assert unsupported.provenance.tool_versions
    report = Report.model_validate_json((out / "report.json").read_bytes())
    assert report.models.get("aiperf-qualified") == 1 and report.variants.get("planned", 0) >= 1
    assert sum(report.models.values()) + sum(report.variants.values()) == len(report.rows)
    assert report.group.status == "qualified", report.group.line
