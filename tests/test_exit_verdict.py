"""Exit codes that say the verdict, and the verdict on the terminal (issue 40, items 6 and 7 of "What is wrong").

- A run whose row failed exits 3 (`qualify --endpoint http://127.0.0.1:9` exited 0); one where nothing failed but
  nothing qualified (a blocked or unsupported group) exits 4 (`qualify --trtmc tests/fixtures/trtmc_e2e`, whose
  group line says blocked, exited 0); `--exit-zero` gives 0 for a report-only job; `--strict` is refused, saying so.
- The verdict is a pure function of the run's rows (`runs/verdict.py`): the rows the run was asked about, reused
  ones counting as measured ones, rows outside the group never failing a run, an interrupted row a signal's code.
- The terminal ends with the group or run line and one table that fits 100 columns, a short line per row that is
  not qualified, and what a non-zero code says.

The verdicts of gates, public checks and doctor are asserted where those runs are: `test_accuracy_gate.py` (the
both-right gate, exit 3, and the table's counts beside a passing row), `test_public_outputs.py` (a public-check hit,
exit 3), `test_qualify.py` (aiperf_qual's reader refusing a file, exit 3), `test_cli.py` (doctor, exit 3).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest
from helpers import QUICK, one_message, row, run_main

from trtmc_videoqa.cli.run_table import WIDTH, table
from trtmc_videoqa.common import stop_signals
from trtmc_videoqa.common.errors import EXIT_FAILED, EXIT_NOT_QUALIFIED, EXIT_OK, EXIT_TOOL_ERROR
from trtmc_videoqa.results import ResultRow, ToolError
from trtmc_videoqa.runs.verdict import run_exit_code

FIXTURES = Path(__file__).parent / "fixtures"
Captured = pytest.CaptureFixture[str]
DEAD = ("--endpoint", "http://127.0.0.1:9", "--model", "m", *QUICK)  # nothing listens: capability fails at once


def _without_trtmc() -> dict[str, str]:
    """This environment with neither TRTMC nor a GPU on PATH: a capable row is blocked, nothing is faked."""
    return dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin")


def _table_lines(stdout: str) -> list[str]:
    """The table's lines: from its header to its legend."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("row "))
    end = next(i for i, line in enumerate(lines) if line.startswith("both q: "))
    return lines[start : end + 1]


# --- whole runs, in this process ------------------------------------------------------------------------------------


def test_a_failed_row_exits_3_and_exit_zero_gives_0(tmp_path: Path, capsys: Captured) -> None:
    done = run_main(capsys, "qualify", *DEAD, "--out", str(tmp_path / "out"))
    assert done.returncode == EXIT_FAILED == 3, done.stderr  # before: 0, a CI job stayed green
    assert row(tmp_path / "out", "m").status == "failed"
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Endpoint run: 1 row(s)") and "statuses failed 1" in lines[0]
    assert all(len(line) <= WIDTH for line in _table_lines(done.stdout))
    assert "m: failed at capability — capability: no answer from http://127.0.0.1:9" in done.stdout
    assert lines[-1] == "exit 3: a row asked about failed"
    # a report-only job: the same verdict, exit 0; the row and the report are the same
    zero = run_main(capsys, "qualify", *DEAD, "--out", str(tmp_path / "zero"), "--exit-zero")
    assert zero.returncode == EXIT_OK, zero.stderr
    assert row(tmp_path / "zero", "m").status == "failed" and "exit " not in zero.stdout.splitlines()[-1]
    assert json.loads((tmp_path / "zero" / "report.json").read_text())["rows"][0]["status"] == "failed"


def test_strict_is_gone_and_says_what_to_do_instead(tmp_path: Path, capsys: Captured) -> None:
    done = run_main(capsys, "qualify", *DEAD, "--out", str(tmp_path / "out"), "--strict")
    assert done.returncode == 2
    message = one_message(done)
    assert "--strict is gone" in message and "exits 3" in message and "--exit-zero" in message
    assert not (tmp_path / "out").exists()  # refused before anything ran


def test_a_blocked_group_exits_4_not_0(tmp_path: Path, capsys: Captured) -> None:
    """`qualify --trtmc tests/fixtures/trtmc_e2e` on a machine without TRTMC: its one capable checkpoint is blocked,
    the group line says blocked, and the run says nothing qualified (before: exit 0)."""
    out = tmp_path / "out"
    done = run_main(capsys, "qualify", "--trtmc", str(FIXTURES / "trtmc_e2e"), "--out", str(out), *QUICK,
                    env=_without_trtmc())  # fmt: skip
    assert done.returncode == EXIT_NOT_QUALIFIED == 4, done.stderr
    assert json.loads((out / "report.json").read_text())["group"]["status"] == "blocked"
    assert done.stdout.startswith("Group: blocked: ")
    assert row(out, "oldvideo-7b").status == "blocked"
    assert "exit 4: nothing failed, but not every row asked about is qualified" in done.stdout
    table_lines = _table_lines(done.stdout)
    assert all(len(line) <= WIDTH for line in table_lines)
    assert len(table_lines) == 2 + len(list(out.glob("checkpoints/*/result.json")))  # header, rows, legend


def test_an_inventory_without_a_capable_checkpoint_exits_4(tmp_path: Path, capsys: Captured) -> None:
    """Every in-group row unsupported (as every checkpoint of TRTMC is today): nothing qualifiable, exit 4; the
    unsupported rows were not asked about one by one, so none of them fails the run."""
    tree = tmp_path / "trtmc"
    shutil.copytree(FIXTURES / "trtmc_families", tree)
    shutil.rmtree(tree / "families" / "vidqa")  # the only family with a capable checkpoint
    out = tmp_path / "out"
    done = run_main(capsys, "qualify", "--trtmc", str(tree), "--out", str(out), *QUICK, env=_without_trtmc())
    assert done.returncode == EXIT_NOT_QUALIFIED, done.stderr
    statuses = {ResultRow.model_validate_json(p.read_bytes()).status for p in out.glob("checkpoints/*/result.json")}
    assert statuses == {"unsupported"}


# --- the rule, over rows ----------------------------------------------------------------------------------------


def _row(profile: str, status: str, **fields: object) -> ResultRow:
    """A row as a TRTMC run writes it without provenance (the unsupported rows of a run): verdict and normal profile
    say whether it is one of the group's capable models."""
    facts: dict[str, object] = {"verdict": "image-only" if status == "unsupported" else "temporal-video-qa"}
    return ResultRow.model_validate(
        {"profile": profile, "status": status, "status_reason": "r", "normal_profile": True, **facts, **fields}
    )


def test_the_verdict_reads_the_rows_the_run_was_asked_about() -> None:
    qualified, failed = _row("a", "aiperf-qualified"), _row("b", "failed")
    unsupported, blocked = _row("c", "unsupported"), _row("d", "blocked")
    assert run_exit_code([qualified, unsupported]) == EXIT_OK  # the group's model qualified; c was not asked about
    assert run_exit_code([qualified, failed, unsupported]) == EXIT_FAILED
    assert run_exit_code([qualified, blocked]) == EXIT_NOT_QUALIFIED
    assert run_exit_code([unsupported]) == EXIT_NOT_QUALIFIED  # nothing capable: nothing qualifiable
    assert run_exit_code([unsupported], named=True) == EXIT_NOT_QUALIFIED  # named with --profile: asked about
    assert run_exit_code([]) == EXIT_NOT_QUALIFIED
    outside = failed.model_copy(update={"in_group": False})
    assert run_exit_code([qualified, outside]) == EXIT_OK  # a row outside the group never fails the run
    reused = qualified.model_copy(update={"reused": True})
    assert run_exit_code([reused]) == EXIT_OK and run_exit_code([reused, failed]) == EXIT_FAILED
    variant = _row("a-fp8", "failed", normal_profile=False)
    assert run_exit_code([qualified, variant]) == EXIT_OK and run_exit_code([variant], named=True) == EXIT_FAILED
    self_test = _row("s", "endpoint-qualified", reference_self_test=True, verdict=None, normal_profile=None)
    assert run_exit_code([self_test]) == EXIT_OK
    assert run_exit_code([self_test.model_copy(update={"status": "unsupported"})]) == EXIT_NOT_QUALIFIED


def test_a_tool_error_or_an_interruption_outranks_the_verdict_and_exit_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    crashed = _row("b", "failed", tool_error=ToolError(stage="build", type="RuntimeError", message="boom"))
    assert run_exit_code([crashed]) == run_exit_code([crashed], exit_zero=True) == EXIT_TOOL_ERROR
    assert run_exit_code([_row("b", "failed")], exit_zero=True) == EXIT_OK
    # A row recorded `interrupted` (a stop signal after it was measured): the signal's code, as the shell reports it.
    interrupted = _row("a", "aiperf-qualified").model_copy(update={"status": "interrupted"})
    monkeypatch.setattr(stop_signals, "_received", [signal.SIGTERM])
    assert run_exit_code([interrupted, crashed], exit_zero=True) == 143


def test_the_table_fits_100_columns_whatever_the_names() -> None:
    rows = [_row("x" * 80 + ".transformers-serve", "endpoint-qualified"), _row("short", "unverified")]
    lines = table(rows)
    assert all(len(line) <= WIDTH for line in lines), lines
    name = lines[1].split()[0]
    assert name.startswith("xxxxxxxxxx") and "…" in name and name.endswith("formers-serve")  # both ends of it
    assert lines[2].split()[:2] == ["short", "unverified"]
