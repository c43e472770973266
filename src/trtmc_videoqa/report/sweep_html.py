"""report.html's part for load levels: a row's throughput-latency curve beside its table of levels, and every
swept row on one pair of axes when the report holds two or more (`report A B`). Every text is escaped here."""

from __future__ import annotations

from ..common.text_escape import html_text as escape
from ..common.text_escape import shown_name
from ..results import Report, ResultRow
from .curve import curve_svg, row_curve, series_of
from .details import flat, served_by_short
from .sweep import sweep_table

CURVE_LEGEND = (
    "A point per load level at its client p50 (AIPerf's end-to-end latency), labelled with its level (cN: "
    "concurrency N; N/s: a request rate); a bar up to its p90 and a tick at its p99 where the level has enough "
    "requests for them. Throughput that stops growing while latency climbs is the server's knee."
)


def sweep_section(row: ResultRow) -> str:
    """The row's load levels: the throughput-latency curve (two levels or more) and the table with its intervals;
    '' for a row with no sweep to show."""
    table = sweep_table(row)
    if table is None:
        return ""
    try:
        svg = row_curve(row, flat(shown_name(row.profile), 80))
    except ValueError as refused:  # a hand-made row's figure (a negative rate): named, and the rest still shown
        svg = f"<p>Curve not drawn: {escape(refused)}</p>"
    curve = f'<div class="panel">{svg}<p class="legend">{escape(CURVE_LEGEND)}</p></div>' if svg else ""
    head = "".join(f"<th>{escape(name)}</th>" for name in table.header)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in line) + "</tr>" for line in table.lines)
    notes = "".join(f'<p class="legend">{escape(note)}</p>' for note in table.notes)
    return (
        f'<h3>Throughput and latency by load level</h3><div class="panels">{curve}</div>'
        f'<table class="sweep"><tr>{head}</tr>{body}</table>{notes}'
    )


def curves_section(report: Report) -> list[str]:
    """Every row with a sweep of two levels or more on one pair of axes, a legend line each (`report A B`); [] for
    fewer than two such rows (a row's own section draws its curve)."""
    rows = [row for row in report.rows if row.sweep is not None and len(row.sweep.levels) > 1]
    if len(rows) < 2:
        return []
    names = [flat(f"{shown_name(row.profile)} ({served_by_short(row)})", 90) for row in rows]
    series = [series_of(row.sweep, name) for row, name in zip(rows, names, strict=True) if row.sweep]
    try:
        svg = curve_svg(series, width=720)
    except ValueError as refused:
        svg = f"<p>Curves not drawn: {escape(refused)}</p>"
    if svg is None:
        return []
    return [f'<h2>Throughput against latency, row beside row</h2>{svg}<p class="legend">{escape(CURVE_LEGEND)}</p>']
