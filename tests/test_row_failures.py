"""A failure stays in its row, and a run always ends in its report: a step made to raise on purpose, on every ladder
(the TRTMC ladder through the test doubles, the endpoint ladder through the self-test and through `compare`), ends
its row `failed` at that step with the exception on the row and its traceback in private/, writes every report over
every row in `--out` (earlier runs' too), passes the public check, and exits 1.

The raising step is a test double put into the ladder's tuple in this process (`run_main`); the servers and the
TRTMC toolchain doubles are real processes."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest
from doubles.toolchain import install_doubles
from helpers import QUICK, cli, reference, row, run_main
from shared_runs import FAMILIES, SharedRun

from trtmc_videoqa.climb.protocol import Climb, RowJob, Step, Stop
from trtmc_videoqa.common.errors import EXIT_FAILED, EXIT_OK, EXIT_TOOL_ERROR
from trtmc_videoqa.ladders import endpoint as endpoint_ladder
from trtmc_videoqa.ladders import trtmc as trtmc_ladder
from trtmc_videoqa.rows import end as row_end

RAISED = "a step made to raise on purpose: \ud800 and\na second line"


def _with_raising_step(
    monkeypatch: pytest.MonkeyPatch, module, attribute: str, name: str, only: str | None = None
) -> None:  # type: ignore[no-untyped-def]
    """The ladder `module.attribute` with its step `name` replaced by one that raises (for the rows `only` names)."""
    ladder = getattr(module, attribute)
    real = next(step.run for step in ladder if step.name == name)

    def raising(row: RowJob, climb: Climb) -> Climb | Stop:
        if only is None or row.profile.endswith(only):
            raise RuntimeError(RAISED)
        return real(row, climb)

    monkeypatch.setattr(module, attribute, tuple(Step(s.name, raising) if s.name == name else s for s in ladder))


def _reports_list(capsys: pytest.CaptureFixture[str], out: Path, profiles: set[str]) -> None:
    """report.json, report.md and report.html were written and each lists every profile; the public check passes."""
    report = json.loads((out / "report.json").read_text())
    assert profiles <= {r["profile"] for r in report["rows"]}
    for name in ("report.md", "report.html"):
        text = (out / name).read_text()
        assert all(profile in text for profile in profiles), name
    checked = run_main(capsys, "report", str(out), "--check-public", "--out", str(out.parent / f"{out.name}-rebuilt"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _crashed_at(out: Path, profile: str, stage: str) -> None:
    result = row(out, profile)
    assert result.status == "failed" and result.failed_stage == stage, result.status_reason
    assert result.tool_error is not None and result.tool_error.stage == stage
    assert result.tool_error.type == "RuntimeError" and "\n" not in result.tool_error.message
    assert "\\ud800" in result.tool_error.message  # escaped, never a lone surrogate in a file
    assert "internal error: RuntimeError" in result.status_reason
    traceback = (out / "checkpoints" / profile / "private" / "traceback.txt").read_text()
    assert "RuntimeError" in traceback and "raising" in traceback


def test_a_step_that_raises_on_the_trtmc_ladder_fails_its_row_and_the_run_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = install_doubles(tmp_path / "bin")
    monkeypatch.setenv("PATH", env["PATH"])
    _with_raising_step(monkeypatch, trtmc_ladder, "TRTMC_LADDER", "build")
    out = tmp_path / "out"
    done = run_main(capsys, "qualify", "--trtmc", str(FAMILIES), "--out", str(out), *QUICK)
    assert done.returncode == EXIT_TOOL_ERROR, done.stdout + done.stderr
    assert "vidqa-2b: failed at build" in done.stdout and "report:" in done.stdout
    _crashed_at(out, "vidqa-2b", "build")
    others = {p.name for p in (out / "checkpoints").iterdir()} - {"vidqa-2b"}
    assert any(row(out, other).status == "unsupported" for other in others)  # the rows after it are written too
    _reports_list(capsys, out, {"vidqa-2b", *others})


def test_a_step_that_raises_on_the_endpoint_ladder_fails_its_row_and_the_run_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An endpoint run, its capability step raising: the row failed at capability, reported, exit 1 (the self-test's
    two rows, the second raising after the first was measured, are the e2e test below)."""
    _with_raising_step(monkeypatch, endpoint_ladder, "ENDPOINT_LADDER", "capability")
    out = tmp_path / "out"
    done = run_main(capsys, "qualify", "--endpoint", "http://127.0.0.1:9", "--model", "m", "--out", str(out), *QUICK)
    assert done.returncode == EXIT_TOOL_ERROR, done.stdout + done.stderr
    _crashed_at(out, "m", "capability")
    _reports_list(capsys, out, {"m"})


@contextmanager
def _no_server():  # type: ignore[no-untyped-def]
    """A test double of the compare run's server start: nothing started (the raising step never reaches it)."""
    from trtmc_videoqa.plan.endpoint_target import LiveEndpoint

    yield LiveEndpoint(url="http://127.0.0.1:9")


def test_a_compare_that_raises_into_an_out_with_an_earlier_row_reports_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    earlier = run_main(capsys, "qualify", "--endpoint", "http://127.0.0.1:9", "--model", "m", "--out", str(out), *QUICK)
    assert earlier.returncode == EXIT_FAILED and row(out, "m").status == "failed"  # nothing listens there: honest
    from trtmc_videoqa.runs import compare as compare_run

    monkeypatch.setattr(compare_run, "find_transformers", lambda _: Path("/bin/true"))  # test double: never run
    monkeypatch.setattr(compare_run, "server_version", lambda _: "5.24.0")
    monkeypatch.setattr(compare_run, "_served", lambda *_: _no_server())
    _with_raising_step(monkeypatch, endpoint_ladder, "ENDPOINT_LADDER", "plan")
    done = run_main(capsys, "compare", "--checkpoint", "org/name", "--out", str(out), *QUICK, "--quiet")
    assert done.returncode == EXIT_TOOL_ERROR, done.stdout + done.stderr
    _crashed_at(out, "org--name.transformers-serve", "plan")
    _reports_list(capsys, out, {"m", "org--name.transformers-serve"})


@pytest.mark.e2e
def test_a_self_test_whose_second_row_raises_keeps_and_reports_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_raising_step(monkeypatch, endpoint_ladder, "ENDPOINT_LADDER", "aiperf", only="bigbuckbunny")
    out = tmp_path / "out"
    done = run_main(capsys, "qualify", "--out", str(out), "--repeats", "1", "--warmup", "0", "--quiet")
    assert done.returncode == EXIT_TOOL_ERROR, done.stdout + done.stderr
    first = row(out, "reference-self-test.synthetic")
    assert first.status == "endpoint-qualified" and first.tool_error is None, first.status_reason
    _crashed_at(out, "reference-self-test.bigbuckbunny", "aiperf")
    second = row(out, "reference-self-test.bigbuckbunny")
    assert [s.name for s in second.stages][-2:] == ["capability", "aiperf"]  # what it measured before stays
    _reports_list(capsys, out, {"reference-self-test.synthetic", "reference-self-test.bigbuckbunny"})


@pytest.mark.e2e
def test_two_runs_into_one_out_with_different_models_report_both_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], auto_key_run: SharedRun
) -> None:
    # The first run: the reference endpoint qualified as trtmc-videoqa-reference (shared_runs.endpoint_auto_with_key,
    # made once per test run), copied: its out is this test's own, as if the run had written it here.
    out = auto_key_run.copy(tmp_path / "out")
    first = auto_key_run.done()
    assert first.returncode == EXIT_OK, first.stderr
    second = cli("qualify", "--endpoint", "http://127.0.0.1:9", "--model", "other", "--out", str(out), *QUICK)
    assert second.returncode == EXIT_FAILED, second.stderr  # its own row failed; the first run's is not asked
    assert row(out, "trtmc-videoqa-reference").status == "endpoint-qualified"
    assert row(out, "other").status == "failed"
    _reports_list(capsys, out, {"trtmc-videoqa-reference", "other"})


def test_a_crash_while_a_row_is_finished_is_recorded_at_the_last_stage_it_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing listens on the endpoint (the row fails its capability check, honestly), then finishing the row
    raises: the row is failed at capability, the stage it reached, not at plan."""

    def raising(*_: object, **__: object) -> None:  # a test double of the row's finishing
        raise RuntimeError(RAISED)

    monkeypatch.setattr(row_end, "measured_row", raising)
    out = tmp_path / "out"
    done = run_main(capsys, "qualify", "--endpoint", "http://127.0.0.1:9", "--model", "m", "--out", str(out), *QUICK)
    assert done.returncode == EXIT_TOOL_ERROR, done.stdout + done.stderr
    _crashed_at(out, "m", "capability")
    assert [s.name for s in row(out, "m").stages] == ["plan", "capability"]
    _reports_list(capsys, out, {"m"})


@pytest.mark.e2e
def test_a_local_folder_as_model_names_the_row_by_the_folder_and_passes_the_public_check(tmp_path: Path) -> None:
    """`transformers serve` names a local model by its path as given: such a run measured everything, then failed
    its own public check (22 hits, exit 2), and its row folder was `--abs--path`. The row is named by the folder,
    the files the tool composes say `$MODEL_DIR`, the request bodies keep the path as sent, and the public check,
    in the run and by `report --check-public`, reads the row's own --model value past."""
    folder = tmp_path / "models" / "my-reference-model"
    folder.mkdir(parents=True)
    out = tmp_path / "out"
    with reference(tmp_path, model_name=str(folder)) as url:
        done = cli("qualify", "--endpoint", url, "--model", str(folder), "--out", str(out), *QUICK)
    assert done.returncode == 0, done.stdout + done.stderr
    result = out / "checkpoints" / "my-reference-model" / "result.json"
    assert row(out, "my-reference-model").status == "endpoint-qualified"
    assert str(folder) not in result.read_text() and "$MODEL_DIR" in result.read_text()
    raw = out / "checkpoints" / "my-reference-model" / "aiperf" / "export"
    assert any(str(folder) in p.read_text() for p in raw.rglob("*.jsonl"))  # measured evidence: as sent
    checked = cli("report", str(out), "--check-public", "--out", str(tmp_path / "rebuilt"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
