"""`--min-both-right`: an opt-in accuracy gate for endpoint and comparison rows. Off by default (accuracy is a figure,
and a row's cache key is as before); given, a both-right share under it fails the row at grading, which aiperf_qual
calls acc-issue, and a qualified row's reason names the gate it held."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import QUICK, qualify, reference, row

from trtmc_videoqa.aiperf_qual.verdicts import verdict_for
from trtmc_videoqa.plan.settings import RunSettings


def test_the_gate_is_off_by_default_and_keys_a_row_only_when_given() -> None:
    assert RunSettings().min_both_right is None
    assert "min_both_right" not in RunSettings().measured()  # rows made before the gate keep their cache keys
    assert RunSettings(min_both_right=0.75).measured()["min_both_right"] == 0.75
    assert verdict_for("failed", "grading") == "acc-issue"


@pytest.mark.e2e
def test_a_server_that_answers_one_letter_fails_the_gate_and_passes_without_it(tmp_path: Path) -> None:
    """The reference endpoint answering "A" to every question: valid options (the output check passes), so without
    the gate the row is endpoint-qualified with its low both-right figure; with it, failed at grading."""
    with reference(tmp_path, answer_text="A") as url:
        plain = qualify(
            "--endpoint", url, "--model", "trtmc-videoqa-reference", "--out", str(tmp_path / "plain"), *QUICK
        )
        gated = qualify(
            "--endpoint", url, "--model", "trtmc-videoqa-reference", "--out", str(tmp_path / "gated"), *QUICK,
            "--min-both-right", "0.75",
        )  # fmt: skip
    assert plain.returncode == 0 and gated.returncode == 0, plain.stderr + gated.stderr
    free = row(tmp_path / "plain", "trtmc-videoqa-reference")
    assert free.status == "endpoint-qualified" and free.accuracy is not None and free.accuracy.both_right < 0.75
    failed = row(tmp_path / "gated", "trtmc-videoqa-reference")
    assert failed.status == "failed" and failed.failed_stage == "grading", failed.status_reason
    assert failed.aiperf_qual_verdict == "acc-issue" and "gate --min-both-right 0.75: not met" in failed.status_reason
    assert "min_both_right" in (failed.provenance.settings if failed.provenance else {})
    assert "gate --min-both-right 0.75" in (tmp_path / "gated" / "report.md").read_text()
