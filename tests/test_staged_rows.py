"""Evidence that survives interruption (issue 40, item 3): each row is built in a staging folder and put in place
whole, so a signal or a crash never loses what was measured nor mixes two attempts.

- SIGTERM while identity runs, after AIPerf measured: the row is `interrupted` with its measured requests, and the
  report says so, never "nothing was measured" (the row was lost: no result.json, "nothing was measured").
- A `--force` re-run over a qualified row, SIGTERMed during AIPerf: the earlier row folder is byte for byte the same,
  and the report names the interrupted attempt (the folder held both attempts' files, the report said qualified).
- A crash while the row is written: once, the row is `failed` and whole; every time, the earlier row is untouched
  (files of the new attempt were written into it). A new row that cannot be renamed in puts the earlier one back, and
  a run that died between the two renames is recovered by the next.

The servers are the reference endpoint (a test double) with its fault knobs, as their own processes; the signal is
sent from here to a real `python -m trtmc_videoqa qualify` process, as `docker stop` or `timeout` sends it.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fault_helpers import MODEL, server_records
from helpers import QUICK, building, no_traceback, reference, row, run_main
from shared_runs import SharedRun

from trtmc_videoqa.common.errors import EXIT_TOOL_ERROR
from trtmc_videoqa.results import InterruptedAttempt, Interruption
from trtmc_videoqa.rows import end as row_end
from trtmc_videoqa.rows import finish as row_finish
from trtmc_videoqa.rows import staging as row_staging
from trtmc_videoqa.rows.staging import Staging, recover_rows

SIGTERM_EXIT = 128 + signal.SIGTERM


def _hashes(folder: Path) -> dict[str, str]:
    """Every file under `folder`, by its relative path, with its sha256 (links by where they point)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[relative] = "link:" + os.readlink(path)
        elif path.is_file():
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _qualify_until(
    url: str, out: Path, ready: Callable[[], bool], *extra: str, then_s: float = 0.0
) -> subprocess.CompletedProcess[str]:
    """`qualify --endpoint URL` as its own process, sent SIGTERM `then_s` after `ready()` holds (a bounded wait)."""
    argv = [sys.executable, "-m", "trtmc_videoqa", "qualify", "--endpoint", url, "--model", MODEL, *QUICK]
    argv += ["--out", str(out), *extra]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None and not ready():
            time.sleep(0.05)
        assert process.poll() is None and ready(), process.communicate()
        time.sleep(then_s)
        os.kill(process.pid, signal.SIGTERM)  # to our process only
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


@pytest.mark.e2e
def test_sigterm_while_identity_runs_keeps_the_measured_row_interrupted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    staged = building(out, MODEL)

    def measured() -> bool:  # the output check is written: identity runs next (wherever the row is being built)
        return any((d / "output_check.json").is_file() for d in (staged, out / "checkpoints" / MODEL))

    # Chat requests #1 capability, #2 warmup, #3..#8 profiling answer at once; identity's chat side (#9 on) is slow.
    with reference(tmp_path, slow_after=8, added_task_ms=60_000) as url:
        done = _qualify_until(url, out, measured, "--native-url", url, then_s=1.0)  # identity waits 60 s
    assert done.returncode == SIGTERM_EXIT, done.stderr
    no_traceback(done)
    kept = row(out, MODEL)
    assert kept.status == "interrupted", kept.status_reason
    assert kept.interruption is not None and (kept.interruption.signal, kept.interruption.stage) == (
        "SIGTERM",
        "identity",
    )
    # what AIPerf measured is kept and counted: one warmup and six profiling requests, all answered
    assert len(kept.requests) == 7 and kept.profiling_requests_completed == 6 == kept.profiling_requests_planned
    assert "6 of 6 profiling request(s) answered" in kept.status_reason
    assert [s.name for s in kept.stages][-2:] == ["output-check", "identity"]
    row_dir = out / "checkpoints" / MODEL
    assert len((row_dir / "requests.jsonl").read_text().splitlines()) == 7
    batches = [json.loads(line) for line in (row_dir / "execution.jsonl").read_text().splitlines()]
    assert [len(b["records"]) for b in batches] == [6]
    assert not staged.exists()  # put in place, nothing left behind
    report = (out / "report.md").read_text()
    assert "nothing was measured" not in report and "interrupted" in report
    assert json.loads((out / "report.json").read_text())["counts"] == {"interrupted": 1}


@pytest.mark.e2e
def test_a_force_rerun_interrupted_during_aiperf_leaves_the_earlier_row_byte_for_byte(
    tmp_path: Path, auto_key_run: SharedRun
) -> None:
    # The earlier run: the reference endpoint qualified (shared_runs.endpoint_auto_with_key, made once per test
    # run), copied: its out is this test's own, as if the run had written it here.
    out = auto_key_run.copy(tmp_path / "out")
    assert auto_key_run.done().returncode == 0, auto_key_run.done().stderr
    row_dir = out / "checkpoints" / MODEL
    assert row(out, MODEL).status == "endpoint-qualified"
    before = _hashes(row_dir)
    # The re-run's profiling requests are slow: the signal comes while AIPerf measures (the capability check and
    # the warmup were served).
    with reference(tmp_path, name="again", slow_after=2, added_task_ms=2_000) as url:
        done = _qualify_until(url, out, lambda: len(server_records(tmp_path, "again")) >= 2, "--force")
    assert done.returncode == SIGTERM_EXIT, done.stderr
    no_traceback(done)
    assert _hashes(row_dir) == before  # the earlier row, whole: not one file added, changed or removed
    record = json.loads((out / "checkpoints" / f".interrupted.{MODEL}.json").read_text())
    assert record["interruption"] == {"signal": "SIGTERM", "stage": "aiperf"}
    kept = out / record["kept"]
    assert (kept / "result.json").is_file() and (kept / "aiperf" / "inputs.jsonl").is_file()
    assert json.loads((kept / "result.json").read_text())["status"] == "interrupted"
    report = json.loads((out / "report.json").read_text())
    assert [r["status"] for r in report["rows"]] == ["endpoint-qualified"]
    assert [a["profile"] for a in report["interrupted_attempts"]] == [MODEL]
    for name in ("report.md", "report.html"):
        text = (out / name).read_text()
        assert f"An attempt at {MODEL} was interrupted (SIGTERM) at aiperf" in text, name


NOBODY = "http://127.0.0.1:9"  # nothing listens: the row fails its capability check at once, no AIPerf run


def _failing_run(capsys: pytest.CaptureFixture[str], out: Path, url: str = NOBODY) -> subprocess.CompletedProcess[str]:
    return run_main(capsys, "qualify", "--endpoint", url, "--model", "m", "--out", str(out), *QUICK)


def test_a_crash_while_the_row_is_written_leaves_no_half_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    _failing_run(capsys, out)  # an honest failed row (whatever exit code a failed row calls for)
    row_dir = out / "checkpoints" / "m"
    before = _hashes(row_dir)
    assert "result.json" in before and row(out, "m").failed_stage == "capability"
    real = row_finish.write_model_atomic

    def never(path: Path, model: object) -> Path:  # a test double of the writer: result.json never writes
        raise RuntimeError("result.json never writes (a test double)")

    monkeypatch.setattr(row_finish, "write_model_atomic", never)
    crashed = _failing_run(capsys, out, "http://127.0.0.1:10")  # another URL: every file of the row would differ
    assert crashed.returncode == EXIT_TOOL_ERROR, crashed.stdout + crashed.stderr
    assert _hashes(row_dir) == before  # the earlier row, untouched: nothing of the new attempt in it
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["m"]
    calls = []

    def once(path: Path, model: object) -> Path:  # a test double: the first result.json write fails, then all do
        calls.append(path)
        if len(calls) == 1:
            raise RuntimeError("the first result.json does not write (a test double)")
        return real(path, model)  # type: ignore[arg-type]

    monkeypatch.setattr(row_finish, "write_model_atomic", once)
    again = _failing_run(capsys, out, "http://127.0.0.1:10")
    assert again.returncode == EXIT_TOOL_ERROR, again.stdout + again.stderr
    crashed_row = row(out, "m")  # the crash net's row, whole: failed where it was, the exception on it
    assert crashed_row.status == "failed" and crashed_row.failed_stage == "capability"
    assert crashed_row.tool_error is not None and crashed_row.tool_error.type == "RuntimeError"
    assert "127.0.0.1:10" in (row_dir / "capability.json").read_text()  # all of it this attempt's
    assert {"result.json", "command.txt", "capability.json", "private/traceback.txt"} <= set(_hashes(row_dir))


def test_a_row_that_cannot_be_renamed_in_puts_the_earlier_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    _failing_run(capsys, out)
    row_dir = out / "checkpoints" / "m"
    before = _hashes(row_dir)
    assert "result.json" in before
    real = os.rename

    def refusing(source: Path, target: Path) -> None:  # a test double: the new row's rename into place fails
        if Path(source).parent.name == "staging":
            raise OSError(5, "Input/output error (a test double)")
        real(source, target)

    monkeypatch.setattr(row_staging.os, "rename", refusing)
    done = _failing_run(capsys, out, "http://127.0.0.1:10")
    assert done.returncode != 0 and "a test double" in done.stderr, done.stdout + done.stderr
    assert _hashes(row_dir) == before


def test_a_row_put_in_place_takes_the_record_of_an_interrupted_attempt_with_the_earlier_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    _failing_run(capsys, out)
    record = out / "checkpoints" / ".interrupted.m.json"
    attempt = InterruptedAttempt(
        profile="m",
        interruption=Interruption(signal="SIGTERM", stage="aiperf"),
        status_reason="aiperf: interrupted (SIGTERM) while aiperf ran",
        profiling_requests_planned=6,
        profiling_requests_completed=2,
    )
    record.write_text(attempt.model_dump_json())
    run_main(capsys, "report", str(out), "--out", str(tmp_path / "report"))
    said = "An attempt at m was interrupted (SIGTERM) at aiperf (2 of 6 profiling request(s) answered)"
    assert said in (tmp_path / "report" / "report.md").read_text()
    _failing_run(capsys, out, "http://127.0.0.1:10")  # a row finished over it: the attempt is history now
    assert not record.exists() and "interrupted" not in (out / "report.md").read_text()


def test_a_run_that_died_between_the_two_renames_is_recovered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The state a run killed between `place`'s two renames leaves (the earlier row aside, nothing in its place),
    made by hand; the next run puts it back before anything else; a row in place with one aside drops the aside."""
    out = tmp_path / "out"
    _failing_run(capsys, out)
    staging = Staging.of(out, "m")
    before = _hashes(staging.final)
    assert "result.json" in before
    staging.earlier.parent.mkdir(parents=True)
    os.rename(staging.final, staging.earlier)
    recover_rows(out)
    assert _hashes(staging.final) == before and not staging.earlier.exists()
    (staging.earlier / "private").mkdir(parents=True)  # a row in place, and a leftover aside
    recover_rows(out)
    assert _hashes(staging.final) == before and not staging.earlier.exists()


def test_a_stop_signal_while_the_row_is_written_writes_it_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C lands while the row's status is being made (a test double raises it there, once): the row is written
    again, `interrupted` at the last stage it reached, put in place, and the run exits with Ctrl-C's code."""
    real = row_end.measured_row
    calls = []

    def interrupted_once(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(row_end, "measured_row", interrupted_once)
    out = tmp_path / "out"
    done = _failing_run(capsys, out)
    assert done.returncode == 128 + signal.SIGINT, done.stdout + done.stderr
    kept = row(out, "m")
    assert kept.status == "interrupted" and kept.interruption is not None
    assert (kept.interruption.signal, kept.interruption.stage) == ("SIGINT", "capability")
    assert "interrupted (SIGINT) while the row was finished" in kept.status_reason
    assert not building(out, "m").exists()
