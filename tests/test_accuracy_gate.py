"""`--min-both-right`: an opt-in accuracy gate for endpoint and comparison rows. Off by default (accuracy is a figure,
and a row's cache key is as before); given, a both-right share under it fails the row at grading, which aiperf_qual
calls acc-issue, and a qualified row's reason names the gate it held."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import QUICK, reference, row, run_main
from shared_runs import SharedRun

from trtmc_videoqa.aiperf_qual.verdicts import verdict_for
from trtmc_videoqa.cli.run_table import WIDTH
from trtmc_videoqa.plan.settings import RunSettings


def test_the_gate_is_off_by_default_and_keys_a_row_only_when_given() -> None:
    assert RunSettings().min_both_right is None
    assert "min_both_right" not in RunSettings().measured()  # rows made before the gate keep their cache keys
    assert RunSettings(min_both_right=0.75).measured()["min_both_right"] == 0.75
    assert verdict_for("failed", "grading") == "acc-issue"


def _table_row(stdout: str, profile: str) -> list[str]:
    """The cells of `profile`'s line in the table a run prints last (cli/run_table.py); every line of the table
    fits 100 columns."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("row "))
    end = next(i for i, line in enumerate(lines) if line.startswith("both q: "))
    assert all(len(line) <= WIDTH for line in lines[start : end + 1]), lines[start : end + 1]
    return next(line.split() for line in lines[start + 1 : end] if line.split()[0] == profile)


@pytest.mark.e2e
def test_a_server_that_answers_one_letter_fails_the_gate_and_passes_without_it(
    tmp_path: Path, quick_http_run: SharedRun
) -> None:
    """The reference endpoint answering "A" to every question: valid options (the output check passes), so without
    the gate the row is endpoint-qualified with its low both-right figure (exit 0); with it, failed at grading, and
    the run exits 3 (before: 0, though it printed "not met"). The terminal's table shows the gated row's both-right
    counts beside those of the self-test's passing row on the same workload (shared_runs.quick_self_test_over_http:
    the reference endpoint answering right), where before both lines said the same but the name."""
    with reference(tmp_path, answer_text="A") as url:
        endpoint = ("qualify", "--endpoint", url, "--model", "trtmc-videoqa-reference", *QUICK)
        plain = run_main(None, *endpoint, "--out", str(tmp_path / "plain"))
        gated = run_main(None, *endpoint, "--out", str(tmp_path / "gated"), "--min-both-right", "0.75")
    assert plain.returncode == 0 and gated.returncode == 3, plain.stderr + gated.stderr
    free = row(tmp_path / "plain", "trtmc-videoqa-reference")
    assert free.status == "endpoint-qualified" and free.accuracy is not None and free.accuracy.both_right < 0.75
    failed = row(tmp_path / "gated", "trtmc-videoqa-reference")
    assert failed.status == "failed" and failed.failed_stage == "grading", failed.status_reason
    assert failed.aiperf_qual_verdict == "acc-issue" and "gate --min-both-right 0.75: not met" in failed.status_reason
    assert "min_both_right" in (failed.provenance.settings if failed.provenance else {})
    assert "gate --min-both-right 0.75" in (tmp_path / "gated" / "report.md").read_text()
    assert "exit 3: a row asked about failed" in gated.stdout
    # name, status, both q, pairs, fwd, rev, client, task, req/s
    failing = _table_row(gated.stdout, "trtmc-videoqa-reference")
    passing = _table_row(quick_http_run.done().stdout, "reference-self-test.synthetic")
    assert (failing[1], passing[1]) == ("failed", "endpoint-qualified")
    questions, pairs = (int(n) for n in passing[2].split("/")), (int(n) for n in passing[3].split("/"))
    assert len(set(questions)) == 1 and len(set(pairs)) == 1  # the passing row: every question and pair right
    right, asked = (int(n) for n in failing[3].split("/"))
    assert right < 0.75 * asked and failing[2:4] != passing[2:4]  # the failing row: under the gate, and says so
