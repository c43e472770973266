"""Progress during long work (common/progress.py, aiperf/progress.py, cli/run_output.py's wiring), without AIPerf:
the cadence proven with an injected clock, AIPerf's count read from a records export written here a piece at a
time, the in-place line of a terminal, the escaping and the scrubbing of every line."""

from __future__ import annotations

import io
import json
import sys
import threading
from pathlib import Path

import pytest

from trtmc_videoqa.aiperf.progress import AiperfCount
from trtmc_videoqa.common.progress import (
    CLEAR_LINE,
    JsonlTail,
    Progress,
    Watch,
    last_log_line,
    log_status,
    watched_log,
    watching,
)
from trtmc_videoqa.common.scrub import REDACTED

NEVER_S = 3600.0  # a watch's own thread never ticks within a test: the test polls it at the clock it sets


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _record(phase: str, start_s: float, end_s: float, *, error: bool = False) -> str:
    meta = {"benchmark_phase": phase, "request_start_ns": int(start_s * 1e9), "request_end_ns": int(end_s * 1e9)}
    record: dict[str, object] = {"metadata": meta, "metrics": {}}
    if error:
        record["error"] = {"code": 500, "message": "boom"}
    return json.dumps(record) + "\n"


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def test_without_a_terminal_a_watched_step_prints_a_line_every_10_s_and_at_its_end() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress(stream, terminal=False, clock=clock)
    progress("p: aiperf: 2 warmup + 30 profiling requests")
    seen = iter(range(100))
    with Watch(progress, lambda elapsed: f"p: step {next(seen)} at {elapsed:.0f} s", tick_s=NEVER_S) as watch:
        for _ in range(35):  # a poll a second, as the watch's thread does, for 35 s
            clock.now += 1
            watch.poll()
        clock.now += 0.5
    lines = stream.getvalue().splitlines()
    assert lines[0] == "  [   0.0 s] p: aiperf: 2 warmup + 30 profiling requests"
    # 10 s after the last line, again 10 s later, and so on; then the step's end, whatever the time.
    assert lines[1:] == [
        "  [  10.0 s] p: step 9 at 10 s",
        "  [  20.0 s] p: step 19 at 20 s",
        "  [  30.0 s] p: step 29 at 30 s",
        "  [  35.5 s] p: step 35 at 36 s",
    ]
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()  # a CI log gets plain lines


def test_a_line_of_its_own_restarts_the_10_s() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress(stream, terminal=False, clock=clock)
    clock.now += 9
    progress("p: capability check")
    clock.now += 9
    progress.update("quiet: 9 s after the last line")
    clock.now += 1
    progress.update("shown: 10 s after it")
    assert [line.split("] ", 1)[1] for line in stream.getvalue().splitlines()] == [
        "p: capability check",
        "shown: 10 s after it",
    ]


def test_on_a_terminal_the_line_is_rewritten_in_place() -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress(stream, terminal=True, clock=clock, width=60)
    progress("p: aiperf: 2 warmup + 30 profiling requests")
    for done in (1, 2, 3):
        clock.now += 1
        progress.update(f"p: aiperf: {done}/30 profiling requests done " + "x" * 80)
    clock.now += 1
    progress("p: timing")  # a step's own line clears the one being rewritten
    clock.now += 1
    progress.update("p: aiperf: 30/30")
    progress.done("p: aiperf: 30/30 profiling requests done")
    text = stream.getvalue()
    first, rewritten, rest = text.split("\n", 2)
    assert first == "  [   0.0 s] p: aiperf: 2 warmup + 30 profiling requests"
    updates = rewritten.split(CLEAR_LINE)
    assert updates[0] == "" and len(updates) == 5
    for n, update in enumerate(updates[1:4], start=1):
        assert update.startswith(f"  [   {n}.0 s] p: aiperf: {n}/30 profiling requests done xxx")
    assert all(len(u) == 59 for u in updates[1:4])  # cut to the terminal's width: a wrapped line is not rewritten
    assert updates[4] == "  [   4.0 s] p: timing"
    done = "  [   5.0 s] p: aiperf: 30/30 profiling requests done\n"  # the step's end ends the line
    assert rest == f"{CLEAR_LINE}  [   5.0 s] p: aiperf: 30/30{CLEAR_LINE}{done}"


def test_every_line_is_inert_and_scrubbed() -> None:
    stream = io.StringIO()
    secret = "s3cret-token-value"
    progress = Progress(stream, terminal=False, clock=Clock(), secrets=[secret, ""])
    progress(f"p\u200b\x1b[2J: line\nforged: passed \u202eevil Bearer {secret}")
    text = stream.getvalue()
    assert text.count("\n") == 1 and "\x1b" not in text and "\u202e" not in text and secret not in text
    assert "\u200b" not in text and "p\\u200b" in text  # a name's invisible character shown, as on every line
    assert "\\u202e" in text and REDACTED in text


def test_aiperf_progress_counts_the_records_aiperf_has_written(tmp_path: Path) -> None:
    """Requests done out of planned (warmup apart), the rate and the time left, all from AIPerf's own records: the
    clock never moves here, yet the count, rate and estimate do."""
    export = tmp_path / "profile_export.jsonl"
    count = AiperfCount(tmp_path, warmup=2, profiling=30, label="p: aiperf")
    starting = "p: aiperf: AIPerf starting, 0 s: no request answered yet (30 profiling and 2 warmup requests planned)"
    assert count() == starting  # no file yet: AIPerf is starting, said as such
    _append(export, _record("warmup", 0, 1) + _record("warmup", 1, 2))
    assert count() == "p: aiperf: 0/30 profiling requests done (warmup 2/2)"
    profiling = "".join(_record("profiling", 2 + i * 0.5, 2.5 + i * 0.5) for i in range(12))
    torn = _record("profiling", 8, 8.5)
    _append(export, profiling + torn[:40])  # the 13th record is still being written
    assert count() == "p: aiperf: 12/30 profiling requests done (warmup 2/2), 2.00 req/s, about 9 s left"
    _append(export, torn[40:] + _record("profiling", 8.5, 9, error=True))
    assert count() == "p: aiperf: 14/30 profiling requests done (warmup 2/2), 1 failed, 2.00 req/s, about 8 s left"
    _append(export, "".join(_record("profiling", 9 + i * 0.5, 9.5 + i * 0.5) for i in range(16)))
    assert count() == "p: aiperf: 30/30 profiling requests done (warmup 2/2), 1 failed, 2.00 req/s"


def test_aiperf_progress_while_aiperf_runs_then_at_its_end(tmp_path: Path) -> None:
    """The watch as stages/aiperf.py runs it, without a terminal: a line every 10 s with the count AIPerf's records
    give then, and the last one at the stage's end."""
    clock, stream = Clock(), io.StringIO()
    progress = Progress(stream, terminal=False, clock=clock)
    export = tmp_path / "profile_export.jsonl"
    count = AiperfCount(tmp_path, warmup=1, profiling=6, label="p: aiperf")
    with watching(progress, count, tick_s=NEVER_S) as watch:
        assert isinstance(watch, Watch)
        for second in range(25):
            clock.now += 1
            if second in (3, 12, 21):
                phase = "warmup" if second == 3 else "profiling"
                _append(export, _record(phase, second, second + 1) + _record("profiling", second, second + 1))
            watch.poll()
        _append(export, _record("profiling", 30, 31))
    assert stream.getvalue().splitlines() == [
        "  [  10.0 s] p: aiperf: 1/6 profiling requests done (warmup 1/1), 1.00 req/s, about 5 s left",
        "  [  20.0 s] p: aiperf: 3/6 profiling requests done (warmup 1/1), 0.30 req/s, about 10 s left",
        "  [  25.0 s] p: aiperf: 6/6 profiling requests done (warmup 1/1), 0.21 req/s",  # the stage's end
    ]


def test_a_records_export_is_read_only_where_it_grew(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    tail = JsonlTail(path)
    assert tail.new_records() == []
    path.write_text('{"a": 1}\n[1, 2]\nnot json\n{"b":')
    assert tail.new_records() == [{"a": 1}]  # a list and a broken line skipped, the torn last line kept for later
    _append(path, ' 2}\n{"c": 3}\n')
    assert tail.new_records() == [{"b": 2}, {"c": 3}]
    assert tail.new_records() == []
    path.write_text('{"d": 4}\n')  # replaced by a shorter file: read again from its start
    assert tail.new_records() == [{"d": 4}]


def test_a_line_too_long_to_hold_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trtmc_videoqa.common.progress as module

    monkeypatch.setattr(module, "_LINE_BYTES", 64)
    path = tmp_path / "records.jsonl"
    tail = JsonlTail(path)
    path.write_text('{"a": 1}\n{"long": "' + "x" * 100)
    assert tail.new_records() == [{"a": 1}]
    _append(path, "y" * 100)
    assert tail.new_records() == []
    _append(path, '"}\n{"b": 2}\n')
    assert tail.new_records() == [{"b": 2}]


def test_a_long_step_shows_its_elapsed_time_and_its_logs_last_line(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    describe = log_status("p: build", log)
    assert describe(3.2) == "p: build: 3 s"  # no log yet
    log.write_bytes(b"x" * 10_000 + b"\nloading weights\n[#####     ] 50%\r[########  ] 80%\r\n\n")
    assert describe(125.6) == "p: build: 126 s; log: [######## ] 80%"
    log.write_bytes(b"\xff\xfe bad bytes \x1b[31m" + b"z" * 400 + b"\n")
    line = last_log_line(log)
    assert "\x1b" not in line and len(line) == 160 and line.endswith("…")


def test_a_long_steps_watch_prints_its_end_even_when_it_fails(tmp_path: Path) -> None:
    clock, stream = Clock(), io.StringIO()
    progress = Progress(stream, terminal=False, clock=clock, secrets=["hunter2-token"])
    log = tmp_path / "server.log"
    with pytest.raises(KeyboardInterrupt), watched_log(progress, "p: serve", log):
        log.write_text("loading the bundle with key hunter2-token\n")
        clock.now += 42
        raise KeyboardInterrupt
    assert stream.getvalue() == f"  [  42.0 s] p: serve: 42 s; log: loading the bundle with key {REDACTED}\n"


def test_a_describe_that_fails_is_not_reported() -> None:
    stream = io.StringIO()
    progress = Progress(stream, terminal=True, clock=Clock())

    def broken(_: float) -> str:
        raise OSError("gone")

    with Watch(progress, broken, tick_s=NEVER_S) as watch:
        watch.poll()
    assert stream.getvalue() == ""


def test_the_watch_thread_polls_by_itself() -> None:
    polled = threading.Event()
    stream = io.StringIO()

    def describe(_: float) -> str:
        polled.set()
        return "p: step"

    with Watch(Progress(stream, terminal=True), describe, tick_s=0.01):
        assert polled.wait(timeout=60)  # a bound for a busy machine; no duration is asserted
    assert stream.getvalue().endswith("p: step\n")


def test_quiet_progress_watches_nothing() -> None:
    def quiet(_: str) -> None:
        raise AssertionError("nothing may be reported")

    with watching(quiet, lambda _: "p: step"):
        pass


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_cli_wiring(monkeypatch: pytest.MonkeyPatch) -> None:
    from trtmc_videoqa.cli.run_output import progress_line as _progress

    assert not isinstance(_progress(True, None), Progress)  # --quiet: nothing
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    plain = _progress(False, "the-api-key-1234")
    assert isinstance(plain, Progress) and not plain.terminal
    plain("p: key the-api-key-1234")
    assert "the-api-key-1234" not in sys.stderr.getvalue() and REDACTED in sys.stderr.getvalue()
    monkeypatch.setattr(sys, "stderr", _Terminal())
    on_a_terminal = _progress(False, None)
    assert isinstance(on_a_terminal, Progress) and on_a_terminal.terminal
    monkeypatch.setenv("CI", "true")
    in_ci = _progress(False, None)
    assert isinstance(in_ci, Progress) and not in_ci.terminal  # CI logs get plain lines, even on a terminal


def test_aiperf_says_it_is_starting_until_its_first_record(tmp_path: Path) -> None:
    """Before AIPerf's first record (its start takes about 30 s under load) the line says it is starting and for how
    long, never a bare 0/30 (issue 40); the first record turns it into the count."""
    count = AiperfCount(tmp_path, warmup=2, profiling=30, label="p: aiperf")
    assert count(12.4).startswith("p: aiperf: AIPerf starting, 12 s: no request answered yet")
    _append(tmp_path / "profile_export.jsonl", _record("warmup", 0, 1))
    assert count(31.0) == "p: aiperf: 0/30 profiling requests done (warmup 1/2)"


def test_at_100_columns_the_label_is_cut_and_the_rate_and_time_left_stay(tmp_path: Path) -> None:
    """A long profile name on a 100-column terminal: the line rewritten in place keeps the count, the rate and the
    time left whole and cuts the label (it cut the end, rate and time left first, before issue 40)."""
    export = tmp_path / "profile_export.jsonl"
    label = "qwen2.5-vl-72b-instruct-awq-int4-long-profile-name.transformers-serve: aiperf"
    count = AiperfCount(tmp_path, warmup=2, profiling=30, label=label)
    _append(export, _record("warmup", 0, 1) + _record("warmup", 1, 2))
    _append(export, "".join(_record("profiling", 2 + i * 0.5, 2.5 + i * 0.5) for i in range(12)))
    stream = io.StringIO()
    progress = Progress(stream, terminal=True, clock=Clock(), width=100)
    progress.update(count())
    (line,) = stream.getvalue().split(CLEAR_LINE)[1:]
    assert len(line) == 99  # one short of the width: a wrapped line would not be rewritten in place
    assert line.endswith(": 12/30 profiling requests done (warmup 2/2), 2.00 req/s, about 9 s left"), line
    assert line.startswith("  [   0.0 s] qwen2.5-vl-") and "…: 12/30" in line  # the label, cut
    stream.truncate(0)
    progress.update("a plain line without figures " + "x" * 200)  # any other line is cut at its end, as before
    assert stream.getvalue().split(CLEAR_LINE)[1] == ("  [   0.0 s] a plain line without figures " + "x" * 200)[:99]
