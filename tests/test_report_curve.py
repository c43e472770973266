"""The report draws a row's load levels (docs/throughput.md): the throughput-latency curve as inline SVG of our own
(points placed by their figures, every text escaped, nothing drawn for a figure that is not a finite number), the
table of levels with each interval beside the figure it qualifies, and in `report A B` the rows on one pair of axes.
The rows here are made by hand (no AIPerf run); tests/test_throughput.py renders a real sweep's report."""

from __future__ import annotations

import math
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from helpers import endpoint_provenance, run_main

from trtmc_videoqa.report.curve import CurvePoint, CurveSeries, curve_svg, scale, series_of
from trtmc_videoqa.report.html import render_html
from trtmc_videoqa.report.markdown import render_markdown, render_step_summary
from trtmc_videoqa.report.sweep import sweep_table
from trtmc_videoqa.results import (
    FigureInterval,
    LatencyStats,
    LoadLevel,
    Report,
    ResultRow,
    RunFigures,
    Sweep,
)
from trtmc_videoqa.results.reports import GroupLine

SVG = "{http://www.w3.org/2000/svg}"


def _svg(text: str | None) -> ET.Element:
    assert text is not None
    return ET.fromstring(text)  # well-formed XML, or this raises


def _shown(text: ET.Element) -> str:
    """What a <text> shows: its own characters, not its hover <title>."""
    return (text.text or "") + "".join(child.tail or "" for child in text)


def _points(svg: ET.Element) -> list[tuple[str, float, float]]:
    return [
        (circle.get("data-level", ""), float(circle.get("cx", "nan")), float(circle.get("cy", "nan")))
        for circle in svg.iter(f"{SVG}circle")
    ]


def test_points_sit_where_their_figures_say() -> None:
    # Throughput grows then flattens while latency climbs: a knee, drawn point for point.
    series = CurveSeries(
        "row",
        (
            CurvePoint("c1", 5.0, 200.0, 260.0),
            CurvePoint("c2", 9.5, 210.0, 280.0, 300.0),
            CurvePoint("c4", 9.8, 410.0),
            CurvePoint("c8", 9.9, 820.0),
        ),
    )
    svg = _svg(curve_svg([series]))
    points = _points(svg)
    assert [level for level, _, _ in points] == ["c1", "c2", "c4", "c8"]
    xs, ys = [x for _, x, _ in points], [y for _, _, y in points]
    assert xs == sorted(xs) and len(set(xs)) == 4  # more requests per second: further right
    assert ys == sorted(ys, reverse=True) and len(set(ys)) == 4  # more latency: higher up (SVG's y grows down)
    # the level's label is drawn beside its point
    labels = [_shown(text) for text in svg.iter(f"{SVG}text")]
    assert {"c1", "c2", "c4", "c8"} <= set(labels)
    # c1's bar reaches its p90, higher than its p50
    bars = [line for line in svg.iter(f"{SVG}line") if line.get("x1") == line.get("x2") == f"{xs[0]:.1f}"]
    assert bars and min(float(bar.get("y2", "nan")) for bar in bars) < ys[0]


def test_a_point_out_of_level_order_is_placed_by_its_own_figure() -> None:
    series = CurveSeries("row", (CurvePoint("c4", 3.0, 300.0), CurvePoint("c1", 1.0, 100.0)))
    (c4, c1) = _points(_svg(curve_svg([series])))
    assert c4[0] == "c4" and c1[1] < c4[1] and c1[2] > c4[2]


def test_every_text_is_escaped() -> None:
    hostile = '</svg><script>alert("x")</script>&amp;'
    svg_text = curve_svg([CurveSeries(hostile, (CurvePoint('c1"><b>', 1.0, 10.0),), (hostile,))])
    assert svg_text is not None and "<script>" not in svg_text and "<b>" not in svg_text
    svg = _svg(svg_text)
    assert any(hostile in _shown(text) for text in svg.iter(f"{SVG}text"))  # shown as text, whole
    assert [level for level, _, _ in _points(svg)] == ['c1"><b>']


def test_a_long_legend_line_is_cut_in_the_middle_to_the_picture_and_whole_on_hover() -> None:
    name = "a-profile-name " + "far-longer-than-the-picture-is-wide " * 4 + "at 127.0.0.1:8124"
    svg = _svg(curve_svg([CurveSeries(name, (CurvePoint("c1", 1.0, 1.0),))], width=400))
    (legend,) = [t for t in svg.iter(f"{SVG}text") if t.get("class") == "series"]
    shown = _shown(legend)
    assert "…" in shown and len(shown) * 6.4 <= 400 - 56 - 18 - 30
    assert shown.startswith("a-profile-name") and shown.endswith("127.0.0.1:8124")  # both ends: where it was served
    assert legend.findtext(f"{SVG}title") == name


def test_nothing_to_draw_draws_nothing_and_one_level_draws_one_point() -> None:
    assert curve_svg([]) is None
    assert curve_svg([CurveSeries("row", (), ("c1", "c2"))]) is None
    (point,) = _points(_svg(curve_svg([CurveSeries("row", (CurvePoint("c1", 0.0, 0.0),))])))
    assert point[0] == "c1" and all(math.isfinite(v) for v in point[1:])


@pytest.mark.parametrize("largest", [0.0, 5e-324, 0.004, 1.0, 8.12, 9.9, 1012.6, 123456.0, 1e308])
def test_an_axis_reaches_past_its_largest_figure_in_at_most_five_round_ticks(largest: float) -> None:
    step, ticks = scale(largest)
    assert 1 <= ticks <= 5 and math.isfinite(step * ticks)
    assert step * ticks >= min(largest, 1e300)
    assert f"{step / 10 ** math.floor(math.log10(step)):g}" in {"1", "2", "2.5", "5"}
    svg = _svg(curve_svg([CurveSeries("row", (CurvePoint("c1", largest, largest),))]))
    ((_, x, y),) = _points(svg)
    assert math.isfinite(x) and math.isfinite(y)


@pytest.mark.parametrize(
    "point",
    [
        CurvePoint("c1", math.nan, 10.0),
        CurvePoint("c1", 1.0, math.inf),
        CurvePoint("c1", 1.0, 10.0, p90=math.nan),
        CurvePoint("c1", 1.0, 10.0, p99=-math.inf),
        CurvePoint("c1", -1.0, 10.0),
    ],
)
def test_a_figure_that_is_not_a_finite_number_is_refused_naming_the_level(point: CurvePoint) -> None:
    with pytest.raises(ValueError, match="row c1"):
        curve_svg([CurveSeries("row", (CurvePoint("c2", 1.0, 1.0), point))])


# --- rows with a sweep, made by hand ------------------------------------------------------------------------------


def _interval(mean: float, low: float, high: float, n: int = 3) -> FigureInterval:
    return FigureInterval(mean=mean, low=low, high=high, n=n, confidence=0.95, method="Student t over run values")


def _level(concurrency: int, per_s: float | None, p50: float | None, runs: int = 3, **extra: object) -> LoadLevel:
    labels = [f"c{concurrency}" + (f"-run{i}" if i > 1 else "") for i in range(1, runs + 1)]
    figures = [
        RunFigures(run=i, label=label, folder="aiperf", requests="r.jsonl", passed=True)
        for i, label in enumerate(labels, 1)
    ]
    latency = None if p50 is None else LatencyStats(count=6 * runs, p50_ms=p50, p90_ms=p50 * 1.3, mean_ms=p50)
    values: dict[str, object] = dict(
        concurrency=concurrency,
        runs=figures,
        requests_per_s=per_s,
        clips_per_s=per_s,
        output_tokens_per_s=None if per_s is None else per_s * 4,
        client_latency=latency,
        server_task_time=None if p50 is None else LatencyStats(count=6 * runs, p50_ms=p50 - 9),
        completed=6 * runs if p50 is not None else 0,
        questions=3,
        questions_both_right=3,
        repeat_pairs=f"{3 * runs}/{3 * runs}",
        passed=p50 is not None,
        failed_at=None if p50 is not None else "aiperf",
    )
    values.update(extra)
    return LoadLevel.model_validate(values)


def _swept(profile: str, endpoint: str, levels: list[LoadLevel], runs: int = 3, **extra: object) -> ResultRow:
    sweep = Sweep.model_validate(dict(axis="concurrency", runs_per_level=runs, confidence=0.95, levels=levels, **extra))
    provenance = endpoint_provenance(endpoint)
    return ResultRow(
        profile=profile, status="endpoint-qualified", status_reason="measured", sweep=sweep, provenance=provenance
    )


def _report(*rows: ResultRow) -> Report:
    group = GroupLine(status="qualified", line="g")
    return Report(
        title="curves",
        generated_by="test",
        sources=["a"],
        reference_self_test=False,
        group=group,
        rows=list(rows),
        counts={},
        models={},
        variants={},
    )


def _three_runs_row() -> ResultRow:
    intervals = {
        "client_p50_ms": _interval(61.0, 58.0, 64.4),
        "requests_per_s": _interval(16.4, 15.1, 17.7),
        "task_p50_ms": _interval(52.0, 50.5, 53.5),
    }
    both = FigureInterval(mean=1.0, low=0.292, high=1.0, n=3, confidence=0.95, method="Clopper-Pearson exact")
    first = _level(1, 16.4, 61.2, intervals=intervals, both_right_interval=both)
    return _swept("model.synthetic", "http://a:1", [first, _level(4, 31.0, 120.0), _level(8, None, None)])


def test_the_markdown_has_the_table_of_levels_with_each_interval_beside_its_figure() -> None:
    markdown = render_markdown(_report(_three_runs_row()))
    assert "| level | req/s | clips/s | output tok/s | client p50 ms | p90 | p99 | task p50 ms |" in markdown
    assert "61.2 (95% CI 58.0–64.4, 3 runs; 3 questions: a tiny workload)" in markdown
    assert "16.4 (95% CI 15.1–17.7, 3 runs; 3 questions: a tiny workload)" in markdown
    assert "3/3 (95% CI 29%–100%, 3 questions: a tiny workload); pairs 9/9" in markdown
    lines = [line for line in markdown.splitlines() if line.startswith("| c")]
    assert [line.split(" | ")[0] for line in lines] == ["| c1", "| c4", "| c8"]
    assert lines[2].endswith("| failed at aiperf |") and "TTFT" not in markdown  # not streamed: no TTFT column
    assert "Best level" not in markdown  # the sweep names none: the table does not invent one
    assert "tiny workloads (3 questions on synthetic" in markdown
    assert "| c1 |" in render_step_summary(_report(_three_runs_row()))


def test_the_page_draws_the_curve_beside_the_same_table() -> None:
    page = render_html(_report(_three_runs_row()))
    start = page.index('<svg class="throughput-curve"')
    svg = _svg(page[start : page.index("</svg>", start) + len("</svg>")])
    assert [level for level, _, _ in _points(svg)] == ["c1", "c4"]  # c8 completed nothing: named, not drawn
    assert any("not drawn, nothing completed: c8" in _shown(t) for t in svg.iter(f"{SVG}text"))
    assert '<table class="sweep">' in page
    assert "61.2 (95% CI 58.0–64.4, 3 runs; 3 questions: a tiny workload)" in page
    assert "Throughput against latency, row beside row" not in page  # one swept row: its own section draws it


def test_streamed_levels_show_ttft_and_itl_and_goodput_shows_where_it_was_met() -> None:
    stats = LatencyStats(count=6, p50_ms=12.5)
    levels = [
        _level(1, 5.0, 50.0, runs=1, ttft=stats, itl=LatencyStats(count=6, p50_ms=3.25), goodput_met=True),
        _level(2, 8.0, 90.0, runs=1, ttft=stats, itl=stats, goodput_met=False),
    ]
    goodput = dict(goodput_objective="request_latency:80", goodput_best_level=1.0, best_level=2.0)
    row = _swept("m", "http://a:1", levels, runs=1, **goodput)
    table = sweep_table(row)
    assert table is not None
    header = list(table.header)
    assert header[8:10] == ["TTFT p50 ms", "ITL p50 ms"] and "goodput request_latency:80" in header
    assert table.lines[0][8:10] == ("12.5", "3.2") and table.lines[1][header.index("goodput request_latency:80")]
    assert "Best level (the passing one with the most requests per second): c2." in table.notes
    assert "Goodput request_latency:80: highest level met: 1." in table.notes
    assert "CI" not in " ".join(" ".join(line) for line in table.lines)  # one run a level: no interval


def test_a_row_of_one_level_and_one_run_adds_no_table() -> None:
    row = _swept("m", "http://a:1", [_level(1, 5.0, 50.0, runs=1)], runs=1)
    assert sweep_table(row) is None
    assert '<table class="sweep">' not in render_html(_report(row)) and "| level |" not in render_markdown(_report(row))


def test_report_a_b_draws_the_rows_on_one_pair_of_axes_with_a_legend() -> None:
    a = _swept("model.synthetic", "http://a:1", [_level(1, 5.0, 100.0), _level(2, 9.0, 110.0)])
    b = _swept("model.synthetic", "http://b:2", [_level(1, 4.0, 150.0), _level(2, 6.0, 250.0)])
    page = render_html(_report(a, b))
    start = page.index("Throughput against latency, row beside row")
    svg = _svg(page[page.index("<svg", start) : page.index("</svg>", start) + 6])
    assert len(list(svg.iter(f"{SVG}polyline"))) == 2 and len(_points(svg)) == 4
    legend = [_shown(t) for t in svg.iter(f"{SVG}text") if t.get("class") == "series"]
    assert legend == ["model.synthetic (some server at a:1)", "model.synthetic (some server at b:2)"]
    assert page.count('class="throughput-curve"') == 3  # the overlay, and each row's own


def test_series_of_a_sweep_keeps_level_order_and_names_what_it_cannot_draw() -> None:
    sweep = _three_runs_row().sweep
    assert sweep is not None
    series = series_of(sweep, "r")
    assert [p.level for p in series.points] == ["c1", "c4"] and series.missing == ("c8",)
    assert series.points[0] == CurvePoint("c1", 16.4, 61.2, pytest.approx(61.2 * 1.3), None)


def test_report_of_two_runs_puts_their_curves_on_one_pair_of_axes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = []
    for name, endpoint, slow in (("a", "http://127.0.0.1:8123", 1.0), ("b", "http://127.0.0.1:8124", 2.0)):
        levels = [_level(1, 4.0 / slow, 250.0 * slow), _level(2, 7.0 / slow, 300.0 * slow)]
        row = _swept("model.synthetic", endpoint, levels, runs=1)
        folder = tmp_path / name / "checkpoints" / row.profile
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(row.model_dump_json())
        runs.append(str(tmp_path / name))
    done = run_main(capsys, "report", *runs, "--out", str(tmp_path / "ab"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "ab" / "report.html").read_text()
    start = page.index("<svg", page.index("Throughput against latency, row beside row"))
    svg = _svg(page[start : page.index("</svg>", start) + len("</svg>")])
    legend = [_shown(t) for t in svg.iter(f"{SVG}text") if t.get("class") == "series"]
    assert [line.rsplit(":", 1)[1] for line in legend] == ["8123)", "8124)"]
    assert [level for level, _, _ in _points(svg)] == ["c1", "c2", "c1", "c2"]
    markdown = (tmp_path / "ab" / "report.md").read_text()
    assert markdown.count("| level | req/s |") == 2  # each row's own table of levels


def test_a_hand_made_level_with_a_negative_rate_is_named_and_the_rest_of_the_page_stands() -> None:
    bad = _swept("m", "http://a:1", [_level(1, -3.0, 50.0, runs=1), _level(2, 5.0, 60.0, runs=1)], runs=1)
    good = _swept("n", "http://a:1", [_level(1, 3.0, 50.0, runs=1), _level(2, 5.0, 60.0, runs=1)], runs=1)
    page = render_html(_report(bad, good))
    assert "Curves not drawn: m (some server at a:1) c1: x is -3.0, not a finite number &gt;= 0" in page
    assert "Curve not drawn: m c1: x is -3.0" in page and '<table class="sweep">' in page
    assert page.count('class="throughput-curve"') == 1  # the good row's own curve
