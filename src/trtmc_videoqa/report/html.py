"""report.html: one self-contained page (no scripts, no external files): status table, per-checkpoint latency
plots drawn as inline SVG, the frame strip of the declared sampling policy, and answers beside the expected ones."""

from __future__ import annotations

import base64
from pathlib import Path

from ..common.text_escape import html_text as escape
from ..results import IdentityCheck, OutputCheck, Report, ResultRow
from .details import (
    AIPERF_QUAL_NOTE,
    EXAMPLES,
    NOT_REPORTED_LINE,
    aiperf_qual_line,
    aiperf_qual_rows,
    comparison_line,
    counts_line,
    figures,
    flat,
    has_task_time,
    identity_cell,
    identity_summary,
    mechanics_lines,
    output_check_cell,
    output_check_summary,
    pair_counts,
    profile_note,
    ran_aiperf,
    side,
    timing_scope,
    transport_cell,
    transport_line,
    unreadable_lines,
)
from .markdown import served_by, served_by_test_double

_STATUS_COLOURS = {
    "aiperf-qualified": "#1a7f37",
    "endpoint-qualified": "#1a7f37",
    "family-validated": "#4d8f3a",
    "implemented": "#8a6d00",
    "planned": "#57606a",
    "unsupported": "#57606a",
    "blocked": "#9a6700",
    "failed": "#cf222e",
}
_STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1f2328}\
table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f6f8fa}
.status{color:#fff;border-radius:4px;padding:1px 6px;white-space:nowrap}.note{background:#fff8c5;padding:.6em 1em;
border:1px solid #d4a72c;border-radius:6px}img.strip{max-width:100%;image-rendering:pixelated;border:1px solid #d0d7de}
.wrong{color:#cf222e}.correct{color:#1a7f37}code{font-size:12px}
.group{font-size:1.2em;font-weight:600;padding:.6em 1em;border-radius:6px;border:2px solid #57606a}
.group-qualified{border-color:#1a7f37}.group-failed{border-color:#cf222e}.group-blocked{border-color:#9a6700}"""
_GROUP_COLOURS = {"qualified": "#dafbe1", "failed": "#ffebe9", "blocked": "#fff8c5"}


def _status(row: ResultRow) -> str:
    colour = _STATUS_COLOURS.get(row.status, "#57606a")
    return f'<span class="status" style="background:{colour}">{escape(row.status)}</span>'


def latency_svg(row: ResultRow, width: int = 560, height: int = 160) -> str:
    """Client latency per profiling request in order, with the server's task time beneath it where known."""
    points = [
        (r.client_latency_ms, r.server_task_ms)
        for r in row.requests
        if r.phase == "profiling" and r.client_latency_ms is not None
    ]
    if not points:
        return "<p>No completed profiling requests to plot.</p>"
    top = max(max(c, t or 0) for c, t in points) * 1.1 or 1.0
    pad = 30
    step = (width - 2 * pad) / max(len(points) - 1, 1)

    def polyline(values: list[float | None], colour: str) -> str:
        coords = " ".join(
            f"{pad + i * step:.1f},{height - pad - (v / top) * (height - 2 * pad):.1f}"
            for i, v in enumerate(values)
            if v is not None
        )
        return f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coords}"/>' if coords else ""

    axis = (
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#8c959f"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#8c959f"/>'
        f'<text x="{pad}" y="{pad - 8}" font-size="11">{top:.0f} ms</text>'
        f'<text x="{width - pad}" y="{height - 8}" font-size="11" text-anchor="end">request #</text>'
    )
    legend = (
        f'<text x="{width - 200}" y="{pad - 8}" font-size="11" fill="#0969da">client end-to-end (AIPerf)</text>'
        f'<text x="{width - 200}" y="{pad + 6}" font-size="11" fill="#bf8700">server task time</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="latency of {escape(row.profile)}">{axis}'
        f"{polyline([c for c, _ in points], '#0969da')}{polyline([t for _, t in points], '#bf8700')}"
        f"{legend}</svg>"
    )


def _answers(row: ResultRow) -> str:
    rows = [r for r in row.requests if r.phase == "profiling"]
    if not rows:
        return ""
    body = "".join(
        f"<tr><td><code>{escape(r.session_id)}</code></td><td>{escape(r.question_id)}</td><td>{escape(r.clip_id)}</td>"
        f"<td>{escape(r.answer or r.error or '')}</td><td>{escape(r.expected or '')}</td>"
        f'<td class="{escape(r.grade or "")}">{escape(r.grade or "–")}</td>'
        f"<td>{'' if r.client_latency_ms is None else f'{r.client_latency_ms:.1f}'}</td>"
        f"<td>{'' if r.server_task_ms is None else f'{r.server_task_ms:.1f}'}</td></tr>"
        for r in rows
    )
    return (
        "<details><summary>Answers beside the expected ones</summary><table><tr><th>request</th><th>question"
        "</th><th>clip</th><th>answer</th><th>expected</th><th>grade</th><th>client ms</th><th>task ms</th></tr>"
        f"{body}</table></details>"
    )


def _output_check(check: OutputCheck) -> str:
    parts = [f"<p>Output check: {escape(output_check_summary(check))}</p>"]
    if check.declared_no_answer:
        parts.append(f"<p>Declared no-answer (the run's own plan): {escape(check.declared_no_answer)}</p>")
    if check.examples:
        body = "".join(
            f"<tr><td>{escape(e.outcome)}</td><td><code>{escape(e.session_id)}</code></td>"
            f"<td>{escape(e.question_id)}</td><td>{escape(e.clip_id)}</td><td>{escape(flat(e.answer))}</td></tr>"
            for e in check.examples[:EXAMPLES]
        )
        parts.append(
            "<table><tr><th>outcome</th><th>request</th><th>question</th><th>clip</th><th>answer</th></tr>"
            f"{body}</table>"
        )
    return "".join(parts)


def _identity(identity: IdentityCheck) -> str:
    parts = [f"<p>Native/HTTP {escape(identity_summary(identity))}</p>"]
    if identity.native_route:
        source = f" ({escape(identity.request_source)})" if identity.request_source else ""
        fields = escape(", ".join(identity.request_fields)) or "–"
        parts.append(
            f"<p>Native route <code>{escape(identity.native_route)}</code>; request fields {fields}{source}; "
            f"compared {escape(identity.normalisation)}; pairs: {escape(pair_counts(identity))}</p>"
        )
    if identity.pairs:
        body = "".join(
            f"<tr><td>{escape(p.question_id)}</td><td>{escape(p.clip_id)}</td>"
            f"<td>{escape(side(p.chat.answer, p.chat.error, p.chat.http_status))}<br><code>"
            f"{escape(p.chat.request_id)}</code></td>"
            f"<td>{escape(side(p.native.answer, p.native.error, p.native.http_status))}<br><code>"
            f"{escape(p.native.request_id)}</code></td><td>{escape(p.verdict)}</td></tr>"
            for p in identity.pairs
        )
        parts.append(
            "<table><tr><th>question</th><th>clip</th><th>chat answer</th><th>native answer</th><th>pair</th></tr>"
            f"{body}</table>"
        )
    return "".join(parts)


def _timing(row: ResultRow) -> str:
    parts = []
    if row.client_latency and row.client_latency.count:
        parts.append(f"<p>Client end-to-end latency (AIPerf): {escape(figures(row.client_latency))}</p>")
    if row.server_task_time and has_task_time(row):
        field = escape(row.task_time_field or "field not stated")
        parts.append(
            f"<p>Server task time (<code>{field}</code>, {escape(timing_scope(row))}): "
            f"{escape(figures(row.server_task_time))}</p>"
        )
    elif ran_aiperf(row):
        parts.append(f"<p>{escape(NOT_REPORTED_LINE)}</p>")
    return "".join(parts)


def _row_section(row: ResultRow) -> list[str]:
    parts = [f"<h2>{escape(row.profile)} {_status(row)}</h2><p>{escape(row.status_reason)}</p>"]
    if served_by_test_double(row):
        parts.append('<p class="note">Reference endpoint (test double): not a TRTMC model qualification.</p>')
    comparison = comparison_line(row)
    if comparison:
        parts.append(f'<p class="note">{escape(comparison)}</p>')
    note = profile_note(row)
    if note:
        parts.append(f"<p>Profile: {escape(note)}</p>")
    if row.profile_gap:
        parts.append(f"<p>Profile gap: {escape(row.profile_gap)}</p>")
    stages = "".join(f"<li>{escape(s.name)}: {escape(s.status)} — {escape(s.detail)}</li>" for s in row.stages)
    parts.append(f"<ul>{stages}</ul>")
    transport = transport_line(row)
    if transport:
        parts.append(f"<p>{escape(transport[0].upper() + transport[1:])}</p>")
    parts.append(_timing(row))
    if row.output_check is not None:
        parts.append(_output_check(row.output_check))
    if row.identity is not None:
        parts.append(_identity(row.identity))
    mechanics = mechanics_lines(row)
    if mechanics:
        parts.append("<ul>" + "".join(f"<li>{escape(line)}</li>" for line in mechanics) + "</ul>")
    if row.requests:
        parts.append(latency_svg(row))
    parts.append(_answers(row))
    if row.commands:
        commands = "".join(f"<li>{escape(k)}: <code>{escape(v)}</code></li>" for k, v in row.commands.items())
        parts.append(f"<details><summary>Reproduce</summary><ul>{commands}</ul></details>")
    return parts


def _status_table(report: Report) -> str:
    header = (
        "<tr><th>profile</th><th>served by</th><th>status</th><th>aiperf_qual</th><th>reason</th><th>transport</th>"
        "<th>output check</th><th>identity</th>"
        "<th>p50 client ms</th><th>p50 task ms</th><th>req/s</th><th>both right</th></tr>"
    )
    cells = "".join(
        f"<tr><td>{escape(r.profile)}</td><td>{escape(served_by(r))}</td><td>{_status(r)}</td>"
        f"<td>{escape(r.aiperf_qual_verdict or '')}</td>"
        f"<td>{escape(r.status_reason)}</td><td>{escape(transport_cell(r))}</td>"
        f"<td>{escape(output_check_cell(r))}</td>"
        f"<td>{escape(identity_cell(r))}</td>"
        f"<td>{'' if not r.client_latency or r.client_latency.p50_ms is None else r.client_latency.p50_ms}</td>"
        f"<td>{'' if not r.server_task_time or r.server_task_time.p50_ms is None else r.server_task_time.p50_ms}</td>"
        f"<td>{r.requests_per_s or ''}</td>"
        f"<td>{'' if not r.accuracy or r.accuracy.both_right is None else f'{r.accuracy.both_right:.0%}'}</td></tr>"
        for r in report.rows
    )
    return f"<table>{header}{cells}</table>"


def _aiperf_qual_section(report: Report) -> list[str]:
    line = aiperf_qual_line(report)
    if line is None:
        return []
    rows = "".join(f"<tr><td>{escape(v)}</td><td>{escape(p)}</td></tr>" for v, p in aiperf_qual_rows(report))
    return [
        f"<h2>In TRTMC aiperf_qual's verdicts</h2><p><b>{escape(line)}</b></p><p>{escape(AIPERF_QUAL_NOTE)}</p>",
        f"<table><tr><th>aiperf_qual verdict</th><th>rows</th></tr>{rows}</table>",
    ]


def render_html(report: Report, frames_png: Path | None = None) -> str:
    group = report.group
    background = _GROUP_COLOURS.get(group.status, "#f6f8fa")
    parts = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(report.title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{escape(report.title)}</h1>",
        f'<p class="group group-{escape(group.status)}" style="background:{background}">{escape(group.line)}</p>',
        f"<p>{escape(report.generated_by)}; built from {escape(', '.join(report.sources))}.</p>",
    ]
    if report.reference_self_test:
        parts.append(
            '<p class="note">Every row was served by the reference endpoint, a <b>test double</b> that '
            "answers the synthetic clip by computation. It checks the tool, not a model.</p>"
        )
    parts.append(f"<p>{escape(counts_line(report))}</p>")
    parts.append(_status_table(report))
    parts += _aiperf_qual_section(report)
    if report.unreadable:
        items = "".join(f"<li>{escape(line)}</li>" for line in unreadable_lines(report))
        parts.append(f"<h2>Result files that could not be read</h2><ul>{items}</ul>")
    if frames_png is not None and frames_png.is_file():
        encoded = base64.b64encode(frames_png.read_bytes()).decode()
        parts.append(
            "<h2>What the model is meant to see</h2><p>The frames the declared sampling policy picks from "
            f'the first clip.</p><img class="strip" alt="frame strip" src="data:image/png;base64,{encoded}">'
        )
    for row in report.rows:
        parts += _row_section(row)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
