"""report.html in a real browser: headless Chromium (Debian's, found with `command -v chromium`; never downloaded)
renders the page at 1,280 px, and the layout is measured by the browser itself over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: fd 3 in, fd 4 out, NUL-separated JSON; spoken here with the standard library alone).

The page is built by the report builder from an artifacts folder this test writes (two rows shaped like the
reference self-test's: the synthetic clip answered right on both clips, the real clip answered "cannot tell"; the
figures are made up, no AIPerf runs), so the test is fast. It checks that the page does not scroll sideways (also
with every <details> block open), that the group line and the summary table with every row's status, p50s, req/s
and both-right sit on the first screen, that each row has its question grid and latency distribution, that the page
loads nothing from outside (every request the browser made is the page itself or a data: URL) and needs no script
(scripts are off while it renders), that each row's load levels (made-up levels of a server that saturates past
concurrency 2) are drawn as a curve with a point per level and given as a table, both within the window, with the
rows on one pair of axes above them, and that report.md keeps every table cell within 80 characters.

Screenshots: `report-summary.png` (the first screen) and `report-grid.png` (one row's grid and distribution) go to
$REPORT_SCREENSHOTS_DIR, by default build/report-screenshots/ (CI uploads it); `REPORT_SCREENSHOTS_DIR=docs/images`
regenerates the docs' pictures (docs/reports.md). REPORT_BROWSER_ARTIFACTS=DIR renders a real run's artifacts
instead. Without Chromium the test is skipped saying why; in CI (CI set) it fails.
"""

from __future__ import annotations

import json
import os
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from browser import HEIGHT, WIDTH, chromium_or_skip, evaluate, open_page, screenshot

from trtmc_videoqa.climb.stats import latency_stats, requests_per_second
from trtmc_videoqa.report.build import build_report, frame_strip, write_report
from trtmc_videoqa.results import (
    Accuracy,
    AnswerExample,
    FigureInterval,
    IdentityAnswer,
    IdentityCheck,
    IdentityPair,
    LatencyStats,
    LoadLevel,
    OutputCheck,
    Provenance,
    RequestRow,
    ResultRow,
    RunFigures,
    StageResult,
    Sweep,
    TransportAttempt,
)

REPO = Path(__file__).resolve().parent.parent
TITLE = "Report layout test: rows shaped like the reference self-test's (made-up figures, no model)"


# --- what the browser measures ---------------------------------------------------------------------------------------

MEASURE = """(() => {
  const root = document.documentElement;
  const box = (element) => element ? element.getBoundingClientRect().toJSON() : null;
  const summary = document.querySelector('table.summary');
  const spills = (e) => e.getBoundingClientRect().right > root.clientWidth + 0.5
    || (e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible');
  const outside = [...document.querySelectorAll('body *')].filter(spills)
    .map((e) => e.tagName.toLowerCase() + (e.className && e.className.baseVal === undefined ? '.' + e.className : ''));
  return {
    scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, innerWidth: innerWidth, innerHeight: innerHeight,
    outside: outside.slice(0, 12), scripts: document.scripts.length,
    group: box(document.querySelector('p.group')),
    summary: box(summary),
    header: summary ? [...summary.querySelectorAll('thead th')].map((th) => th.textContent.trim()) : [],
    rows: summary ? [...summary.querySelectorAll('tbody tr')].map((tr) => ({
      cells: [...tr.cells].map((td) => td.textContent.trim()), box: box(tr),
    })) : [],
    sections: [...document.querySelectorAll('section.checkpoint')].map((s) => ({
      profile: s.dataset.profile,
      gridLines: s.querySelectorAll('table.grid tr').length - 1,
      gridMarks: [...s.querySelectorAll('table.grid td')].map((td) => td.textContent).join(' '),
      distribution: box(s.querySelector('svg.distribution')),
      curves: s.querySelectorAll('svg.distribution path').length,
      marks: s.querySelectorAll('svg.distribution circle').length,
      panels: box(s.querySelector('.panels')),
      curve: box(s.querySelector('svg.throughput-curve')),
      curvePoints: s.querySelectorAll('svg.throughput-curve circle').length,
      sweep: box(s.querySelector('table.sweep')),
      sweepSpill: [...s.querySelectorAll('table.sweep')].some((t) => t.scrollWidth > t.clientWidth + 1),
    })),
    curves: [...document.querySelectorAll('svg.throughput-curve')].map(box),
    resources: performance.getEntriesByType('resource').map((entry) => entry.name),
  };
})()"""
OPEN_DETAILS = "document.querySelectorAll('details').forEach((d) => { d.open = true; }); true"


def render(page: Path, shots: Path, tmp: Path) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(measurements at 1,280 px, the same with every <details> open, every URL the browser requested); the
    screenshots written to `shots`."""
    browser, session = open_page(page, tmp)
    try:
        measured = evaluate(browser, session, MEASURE)
        shots.mkdir(parents=True, exist_ok=True)
        screenshot(browser, session, shots / "report-summary.png")
        panels = next(s["panels"] for s in measured["sections"] if s["profile"].endswith("synthetic"))
        screenshot(browser, session, shots / "report-grid.png", _page_clip(panels))
        evaluate(browser, session, OPEN_DETAILS)
        opened = evaluate(browser, session, MEASURE)
    finally:
        browser.close()
    urls = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
    return measured, opened, urls


def _page_clip(box: dict[str, float]) -> dict[str, float]:
    """A box measured at the top of the page, widened by a margin, as a screenshot clip."""
    return {
        "x": max(box["x"] - 8, 0),
        "y": max(box["y"] - 8, 0),
        "width": box["width"] + 16,
        "height": box["height"] + 16,
    }


# --- the artifacts the page is built from ----------------------------------------------------------------------------

ENDPOINT = "http://127.0.0.1:40123"
SERVED_BY = "trtmc-videoqa-reference (test double)"
QUESTIONS = {
    "synthetic": {"synthetic-direction": "AB", "synthetic-appearance": "AB", "synthetic-first-visible": "BC"},
    "bigbuckbunny": {
        "bbb-burrow-direction": "BA",
        "bbb-posture-change": "AB",
        "bbb-yawn-scratch-order": "AB",
        "bbb-burrow-or-stretch-first": "BA",
    },
}


def _latency(index: int, base: float) -> tuple[float, float]:
    """A made-up but uneven (client, task) latency: a long tail every few requests."""
    wobble = (index * 37 % 23) / 23
    task = base * (0.6 + wobble) + (base * 2.2 if index % 9 == 4 else 0.0)
    return round(task + base * 0.35 + wobble * 9, 3), round(task, 3)


def _requests(workload: str, base: float) -> list[RequestRow]:
    rows, index, start = [], 0, 1_700_000_000_000_000_000
    for question, accepted in QUESTIONS[workload].items():
        for repeat in range(5):
            for clip, letter in zip(("forward", "reversed"), accepted, strict=True):
                client, task = _latency(index, base)
                right = workload == "synthetic"
                rows.append(
                    RequestRow(
                        session_id=f"{question}.{clip}.r{repeat:02d}",
                        x_request_id=f"{index:08x}-6c1e-4bd2-9d0f-{index * 7919:012x}",
                        phase="profiling",
                        question_id=question,
                        clip_id=clip,
                        repeat=repeat,
                        start_ns=start,
                        end_ns=start + int(client * 1e6),
                        client_latency_ms=client,
                        server_task_ms=task,
                        http_status=200,
                        answer=letter if right else "I cannot tell from this clip.",
                        expected=letter,
                        grade="correct" if right else "unparseable",
                        rule="whole-letter" if right else None,
                    )
                )
                index, start = index + 1, start + int(client * 1e6) + 2_000_000
    return rows


def _story(workload: str, count: int) -> str:
    timing = (
        f"timing: server task time joined by X-Request-ID for all {count} profiling requests from "
        "`response.trtmc_timing.model_call_ms` (reference task: decode the sampled frames and answer (a test double, "
        "not a TRTMC task call))"
    )
    if workload == "synthetic":
        checks = f"output-check: {count} of {count} answers complete and resolving to one option"
        return f"complete AIPerf run, every request accounted for; {timing}; {checks}; identity: all 6 pairs answered"
    return (
        "transport and timing only: the reference endpoint (a test double) cannot tell what happens in a real clip, "
        f"and says so ({count} of {count} answers were the declared no-answer 'cannot tell'); complete AIPerf run, "
        f"every request accounted for; {timing}; output-check: 0 of {count} answers complete and resolving to one "
        f"option, {count} declared no-answer (as the self-test plan declares); identity: all 8 pairs answered the same"
    )


def _identity(requests: list[RequestRow]) -> IdentityCheck:
    pairs = [
        IdentityPair(
            question_id=r.question_id,
            clip_id=r.clip_id,
            chat=IdentityAnswer(
                route="POST /v1/chat/completions", request_id=f"{r.x_request_id}-chat", answer=r.answer
            ),
            native=IdentityAnswer(
                route="POST /v1/tasks/generate", request_id=f"{r.x_request_id}-task", answer=r.answer
            ),
            verdict="same",
        )
        for r in requests
        if r.repeat == 0
    ]
    return IdentityCheck(
        verdict="held",
        reason=f"all {len(pairs)} pairs answered the same through HTTP chat and the native route",
        native_route="POST /v1/tasks/generate",
        request_fields=["max_new_tokens", "prompt", "temperature", "video_path"],
        pairs=pairs,
    )


def _row(workload: str, base: float) -> ResultRow:
    requests = _requests(workload, base)
    right = sum(r.grade == "correct" for r in requests)
    profile = f"reference-self-test.{workload}"
    command = (
        f"aiperf profile --model trtmc-videoqa-reference --url {ENDPOINT} --endpoint-type chat --tokenizer tokenizer "
        f"--input-file checkpoints/{profile}/aiperf/inputs.jsonl --custom-dataset-type single_turn "
        f"--request-count {len(requests)} --concurrency 1 --artifact-dir checkpoints/{profile}/aiperf/export"
    )
    stages = [
        StageResult(name=name, status="passed", detail=detail, wall_s=wall)
        for name, detail, wall in (
            ("plan", f"endpoint {ENDPOINT}, model trtmc-videoqa-reference", None),
            ("capability", "answered: 'A' (video as data-url)", 0.3),
            ("aiperf", f"exit 0; 2 warmup and {len(requests)} profiling requests, every one accounted for", 12.0),
            ("timing", _story(workload, len(requests)).split("; ")[1], None),
            ("grading", f"{len(requests)} answers graded", None),
        )
    ]
    return ResultRow(
        profile=profile,
        status="endpoint-qualified",
        status_reason=_story(workload, len(requests)),
        status_evidence=["result.json#requests", "aiperf/outcome.json"],
        stages=stages,
        reference_self_test=True,
        warmup_requests=2,
        profiling_requests_planned=len(requests),
        profiling_requests_completed=len(requests),
        requests=requests,
        client_latency=latency_stats([r.client_latency_ms for r in requests]),
        server_task_time=latency_stats([r.server_task_ms for r in requests]),
        task_time_field="response.trtmc_timing.model_call_ms",
        timing_scope="reference task: decode the sampled frames and answer (a test double, not a TRTMC task call)",
        requests_per_s=requests_per_second([(r.start_ns, r.end_ns) for r in requests]),
        video_transport="data-url",
        transport_attempts=[TransportAttempt(transport="data-url", http_status=200, accepted=True)],
        accuracy=_accuracy(workload, requests, right),
        output_check=OutputCheck(
            passed=True,
            checked=len(requests),
            by_outcome={"resolved": right, "declared-no-answer": len(requests) - right},
            examples=[
                AnswerExample(
                    session_id=r.session_id,
                    question_id=r.question_id,
                    clip_id=r.clip_id,
                    outcome="resolved" if r.grade == "correct" else "declared-no-answer",
                    answer=r.answer or "",
                )
                for r in requests[:3]
            ],
        ),
        identity=_identity(requests),
        provenance=Provenance(
            tool_versions={},
            aiperf={"version": "0.13.0"},
            workload=workload,
            workload_digest="0" * 64,
            endpoint=ENDPOINT,
            mode="endpoint",
            served_by=SERVED_BY,
        ),
        commands={"aiperf": command},
    )


def _sweep(base: float, runs: int) -> Sweep:
    """Made-up load levels of a server that saturates past concurrency 2: throughput flattens, latency climbs."""
    levels = []
    for concurrency in (1, 2, 4, 8):
        per_s = round(1000 / base * min(concurrency, 2) * 0.9, 3)
        p50 = round(base * max(concurrency / 2, 1.0) + 3.0, 3)
        stats = LatencyStats(count=6 * runs, p50_ms=p50, p90_ms=round(p50 * 1.2, 3), mean_ms=p50)
        interval = FigureInterval(
            mean=p50, low=round(p50 * 0.93, 3), high=round(p50 * 1.07, 3), n=runs, confidence=0.95,
            method="Student t over run values",
        )  # fmt: skip
        levels.append(
            LoadLevel(
                concurrency=concurrency,
                runs=[
                    RunFigures(run=run, label=f"c{concurrency}", folder="aiperf", requests="r.jsonl", passed=True)
                    for run in range(1, runs + 1)
                ],
                requests_per_s=per_s,
                clips_per_s=per_s,
                output_tokens_per_s=round(per_s * 3, 3),
                client_latency=stats,
                server_task_time=LatencyStats(count=6 * runs, p50_ms=round(p50 - 3.0, 3)),
                completed=6 * runs,
                intervals={"client_p50_ms": interval} if runs > 1 else {},
                questions=3,
                questions_both_right=3,
                repeat_pairs=f"{3 * runs}/{3 * runs}",
                passed=True,
            )
        )
    return Sweep(axis="concurrency", runs_per_level=runs, confidence=0.95, levels=levels, best_level=2.0)


def _accuracy(workload: str, requests: list[RequestRow], right: int) -> Accuracy:
    rate = 1.0 if workload == "synthetic" else 0.0
    questions = QUESTIONS[workload]
    per_question = [
        {"question_id": q, "forward": rate, "reversed": rate, "both_right": rate, "passed": bool(rate)}
        for q in questions
    ]
    return Accuracy(
        questions=len(questions),
        forward=rate,
        reversed=rate,
        both_right=rate,
        graded=len(requests),
        correct=right,
        wrong=0,
        unparseable=len(requests) - right,
        empty=0,
        incomplete=0,
        per_question=per_question,
    )


def _png(width: int, height: int) -> bytes:
    """A small grey-gradient PNG (a stand-in for the frame strip), written with zlib alone."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    lines = b"".join(b"\0" + bytes((x * 255 // width) for x in range(width)) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(lines)) + chunk(b"IEND", b"")


def write_artifacts(out: Path) -> Path:
    """Two self-test-shaped rows as a run leaves them: result.json and the evidence a measured row's folder holds."""
    swept = (_row("synthetic", 32.0), _sweep(32.0, 3)), (_row("bigbuckbunny", 230.0), _sweep(230.0, 1))
    for row in (row.model_copy(update={"sweep": sweep}) for row, sweep in swept):
        folder = out / "checkpoints" / row.profile
        (folder / "aiperf").mkdir(parents=True)
        (folder / "result.json").write_text(row.model_dump_json())
        (folder / "aiperf" / "outcome.json").write_text('{"exit_code": 0, "timed_out": false}\n')
        (folder / "requests.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in row.requests))
    strip = out / "workload" / "synthetic" / "frames.png"
    strip.parent.mkdir(parents=True)
    strip.write_bytes(_png(2560, 90))  # wider than the window: the page scales it down
    return out


# --- the test ---------------------------------------------------------------------------------------------------------


def _built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The report folder: from $REPORT_BROWSER_ARTIFACTS (a real run) or from the artifacts this test writes."""
    given = os.environ.get("REPORT_BROWSER_ARTIFACTS")
    monkeypatch.chdir(tmp_path)  # the report names its sources relative to here: no machine path in a screenshot
    if given:
        source, title = Path(given).resolve(), None
    else:
        source, title = write_artifacts(Path("artifacts")), TITLE
    out = tmp_path / "report"
    report = build_report([source], title=title)
    write_report(report, out, frame_strip(report, [source]))
    return out


def _markdown_cells(markdown: str) -> list[str]:
    """Every cell of every GitHub table in the text, as written (escapes included)."""
    rows = [line for line in markdown.splitlines() if line.startswith("|") and not set(line) <= set("|-: ")]
    return [cell.strip() for line in rows for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_report_html_fits_1280_px_and_shows_every_row_at_a_glance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium_or_skip()
    out = _built(tmp_path, monkeypatch)
    cells = _markdown_cells((out / "report.md").read_text())
    assert cells and max(len(cell) for cell in cells) <= 80, max(cells, key=len)
    shots = REPO / Path(os.environ.get("REPORT_SCREENSHOTS_DIR") or "build/report-screenshots")
    measured, opened, urls = render(out / "report.html", shots, tmp_path)
    rows = json.loads((out / "report.json").read_text())["rows"]

    # no sideways scroll at 1,280 px, with the <details> blocks closed and open
    for state in (measured, opened):
        assert state["innerWidth"] == WIDTH and state["scrollWidth"] <= state["clientWidth"], state["outside"]
        assert state["outside"] == []
    # the first screen: the group line, then the summary table with every row's figures
    assert measured["group"]["bottom"] <= measured["summary"]["top"]
    assert measured["header"] == [
        "profile", "status", "failed stage", "served by", "transport", "p50 client ms", "p50 task ms", "req/s",
        "both right",
    ]  # fmt: skip
    assert [r["cells"][1] for r in measured["rows"]] == [r["status"] for r in rows]
    for line, row in zip(measured["rows"], rows, strict=True):
        assert line["box"]["bottom"] <= HEIGHT, line
        p50_client, p50_task, per_s, both = line["cells"][5:]
        assert p50_client == f"{row['client_latency']['p50_ms']:.1f}" and p50_task != "–" and per_s != "–"
        assert re.fullmatch(r"\d+/\d+", both), both
    # each row: its grid (a line per question, marks by symbol) and its distribution (two CDFs, percentiles marked)
    assert [s["profile"] for s in measured["sections"]] == [r["profile"] for r in rows]
    for section, row in zip(measured["sections"], rows, strict=True):
        questions = {r["question_id"] for r in row["requests"] if r["phase"] == "profiling"}
        assert section["gridLines"] == len(questions) and "accepted" in section["gridMarks"]
        assert re.search("[✓✗?]", section["gridMarks"])
        assert section["distribution"]["width"] > 200 and section["curves"] == 2 and section["marks"] >= 2
        assert section["distribution"]["right"] <= WIDTH
    # each row's load levels: the curve (a point per level) and the table, within the window and not spilling;
    # both rows on one pair of axes above them
    for section, row in zip(opened["sections"], rows, strict=True):
        assert section["curve"]["width"] > 200 and section["curve"]["right"] <= WIDTH
        assert section["curvePoints"] == len(row["sweep"]["levels"])
        assert section["sweep"]["right"] <= opened["clientWidth"] and not section["sweepSpill"]
    assert len(opened["curves"]) == len(rows) + 1 and all(box["right"] <= WIDTH for box in opened["curves"])
    # self-contained: nothing but the page itself and data: URLs, and no script
    assert measured["scripts"] == 0 and measured["resources"] == []
    page = (out / "report.html").resolve().as_uri()
    assert urls and all(url == page or url.startswith("data:") for url in urls), urls
    assert (shots / "report-summary.png").stat().st_size > 1000 and (shots / "report-grid.png").stat().st_size > 1000
