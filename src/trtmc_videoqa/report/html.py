"""report.html: one self-contained page (no script, no external file) that fits a 1,280 px window: the group line,
the counts and one compact table (a row per checkpoint, long values shortened with the full value on hover), then
each row's section: its stage story a line a part, the questions as a grid beside the latency distribution (inline
SVG), and the rest folded in <details> blocks (the per-request plot, every answer, the checks, the commands)."""

from __future__ import annotations

import base64
from pathlib import Path

from ..common.safe_read import MAX_STRIP_BYTES, UnreadableInput, read_regular_file
from ..common.text_escape import html_text as escape
from ..common.text_escape import one_line, shown_name
from ..results import IdentityCheck, LatencyStats, OutputCheck, Report, ResultRow
from ..results.rows import TASK_TIME_NOT_REPORTED_LINE
from .details import (
    AIPERF_QUAL_NOTE,
    EXAMPLES,
    SHORT_CHARS,
    accuracy_line,
    aiperf_qual_line,
    aiperf_qual_rows,
    command_text,
    comparison_line,
    counts_line,
    figures,
    flat,
    has_task_time,
    identity_summary,
    interrupted_lines,
    mechanics_lines,
    ms,
    output_check_summary,
    pair_counts,
    percentile_cells,
    profile_note,
    ran_aiperf,
    reason_lines,
    served_by,
    served_by_short,
    served_by_test_double,
    served_model_line,
    side,
    streaming_lines,
    timing_scope,
    transport_cell,
    transport_line,
    unreadable_lines,
)
from .difference_view import html_section as difference_section
from .grid import ENTRIES, LEGEND, Cell, Given, both_right_cell, both_text, given_text, question_grid
from .svg import distribution_svg, request_svg
from .sweep_html import curves_section, sweep_section

_STATUS_COLOURS = {
    "aiperf-qualified": "#1a7f37",
    "endpoint-qualified": "#1a7f37",
    "family-validated": "#4d8f3a",
    "implemented": "#8a6d00",
    "planned": "#57606a",
    "unsupported": "#57606a",
    "blocked": "#9a6700",
    "failed": "#cf222e",
    "interrupted": "#bc4c00",
}
_STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1f2328}\
table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f6f8fa}.num{text-align:right;white-space:nowrap}p,li,code,summary{overflow-wrap:anywhere}
.status{color:#fff;border-radius:4px;padding:1px 6px;white-space:nowrap}.note{background:#fff8c5;padding:.6em 1em;
border:1px solid #d4a72c;border-radius:6px}img.strip{max-width:100%;image-rendering:pixelated;border:1px solid #d0d7de}
.wrong{color:#cf222e}.correct{color:#1a7f37}.unparseable,.empty,.error,.ungraded{color:#9a6700}code{font-size:12px}
.group{font-size:1.2em;font-weight:600;padding:.6em 1em;border-radius:6px;border:2px solid #57606a}
.group-qualified{border-color:#1a7f37}.group-failed{border-color:#cf222e}.group-blocked{border-color:#9a6700}
.counts{font-weight:600}table.summary td,table.summary th{padding:4px 10px;overflow-wrap:normal}
.nowrap{white-space:nowrap}
section.checkpoint{border-top:2px solid #d0d7de;margin-top:2em}ul.story{margin:.3em 0}
.panels{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}.panel{min-width:0;max-width:100%}
table.grid td{white-space:nowrap}table.grid td.question{white-space:normal}.accepted{color:#57606a;font-size:12px}
.legend{color:#57606a;font-size:12px;max-width:560px}svg{max-width:100%;height:auto}
table.sweep td,table.sweep th{overflow-wrap:normal;font-variant-numeric:tabular-nums}"""
_GROUP_COLOURS = {"qualified": "#dafbe1", "failed": "#ffebe9", "blocked": "#fff8c5"}


def _status(row: ResultRow) -> str:
    colour = _STATUS_COLOURS.get(row.status, "#57606a")
    return f'<span class="status" style="background:{colour}">{escape(row.status)}</span>'


def _short(text: str, limit: int = SHORT_CHARS) -> str:
    """The text shortened for a cell, the full text on hover."""
    return f'<span title="{escape(flat(text, 2000))}">{escape(flat(text, limit))}</span>'


def _given(given: Given) -> str:
    return f'<span class="{escape(given.outcome)}">{escape(given_text(given))}</span>'


def _grid_cell(cell: Cell | None) -> str:
    if cell is None:
        return "<td>–</td>"
    shown = " ".join(_given(g) for g in cell.given[:ENTRIES])
    hidden = sum(g.count for g in cell.given[ENTRIES:])
    more = f" +{hidden} more" if hidden else ""
    accepted = f' <span class="accepted">accepted {escape(cell.accepted)}</span>' if cell.accepted else ""
    return f'<td title="{escape(chr(10).join(cell.answers))}">{shown}{more}{accepted}</td>'


def grid_table(row: ResultRow) -> str:
    """One line per question, a column per clip (forward, then reversed) and both; '' for a row without grades."""
    grid = question_grid(row)
    if grid is None:
        return "<p>No graded answers: nothing to show per question.</p>"
    both = len(grid.clips) == 2
    header = "".join(f"<th>{escape(clip)}</th>" for clip in grid.clips) + ("<th>both</th>" if both else "")
    body = []
    for line in grid.lines:
        cells = "".join(_grid_cell(cell) for cell in line.cells)
        if both:
            kind = "correct" if line.both and line.both.mark == "✓" else "wrong"
            cells += f'<td class="{kind}">{escape(both_text(line.both))}</td>'
        body.append(f'<tr><td class="question">{escape(line.question_id)}</td>{cells}</tr>')
    return (
        f'<table class="grid"><tr><th>question</th>{header}</tr>{"".join(body)}</table>'
        f'<p class="legend">{escape(LEGEND)}</p>'
    )


def _figures_row(name: str, stats: LatencyStats | None) -> str:
    cells = "".join(f'<td class="num">{escape(cell)}</td>' for cell in percentile_cells(stats))
    return f"<tr><th>{escape(name)}</th>{cells}</tr>"


def distribution(row: ResultRow) -> str:
    """The CDF of both clocks, with their p50/p90/p99 (ms) as a table beneath it."""
    svg = distribution_svg(row)
    if svg is None:
        return "<p>No completed profiling request: no latency to show.</p>"
    task = (
        _figures_row("server task time", row.server_task_time)
        if has_task_time(row)
        else f'<tr><td colspan="5">{escape(TASK_TIME_NOT_REPORTED_LINE)}</td></tr>'
    )
    return (
        f'{svg}<p class="legend">Each curve: the share of profiling requests done within a latency (a CDF); the dots '
        "are the row's own p50, p90 and p99 (a percentile needs enough samples to be given).</p>"
        f'<table class="figures"><tr><th>ms</th><th>p50</th><th>p90</th><th>p99</th><th>n</th></tr>'
        f"{_figures_row('client end-to-end', row.client_latency)}{task}</table>"
    )


def _answers(row: ResultRow) -> str:
    rows = [r for r in row.requests if r.phase == "profiling"]
    if not rows:
        return ""
    body = "".join(
        f"<tr><td><code>{escape(r.session_id)}</code></td><td>{escape(r.question_id)}</td><td>{escape(r.clip_id)}</td>"
        f"<td>{escape(r.answer or r.error or '')}</td><td>{escape(r.expected or '')}</td>"
        f'<td class="{escape(r.grade or "")}">{escape(r.grade or "–")}</td>'
        f'<td class="num">{ms(r.client_latency_ms)}</td><td class="num">{ms(r.server_task_ms)}</td></tr>'
        for r in rows
    )
    return (
        "<details><summary>Each request: its latency in order, its answer beside the expected one</summary>"
        f"{request_svg(row)}<table><tr><th>request</th><th>question</th><th>clip</th><th>answer</th><th>expected"
        f"</th><th>grade</th><th>client ms</th><th>task ms</th></tr>{body}</table></details>"
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
    if identity.sampling:
        parts.append(f"<p>Frames sent: {escape(identity.sampling)}</p>")
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
        parts.append(f"<p>{escape(TASK_TIME_NOT_REPORTED_LINE)}</p>")
    return "".join(parts + [f"<p>{escape(line)}</p>" for line in streaming_lines(row)])


def _story(row: ResultRow) -> list[str]:
    """The status and its reason a part a line (the stage story), where the row was served, its accuracy."""
    stage = f" (failed stage: {escape(row.failed_stage)})" if row.failed_stage else ""
    story = "".join(f"<li>{escape(part)}</li>" for part in reason_lines(row.status_reason))
    parts = [f'<p>Why {escape(row.status)}{stage}, a part a line:</p><ul class="story">{story}</ul>']
    parts.append(f"<p>Served by: {escape(served_by(row))}</p>")
    model = served_model_line(row)
    if model:
        parts.append(f"<p>{escape(model)}</p>")
    if served_by_test_double(row):
        parts.append('<p class="note">Reference endpoint (test double): not a TRTMC model qualification.</p>')
    comparison = comparison_line(row)
    if comparison:
        parts.append(f'<p class="note">{escape(comparison)}</p>')
    accuracy = accuracy_line(row)
    if accuracy:
        parts.append(f"<p>{escape(accuracy)}</p>")
    return parts


def _checks(row: ResultRow) -> str:
    """Everything else the row holds, folded: profile, stages, transport, timing, the checks, the mechanics."""
    parts = []
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
    return f"<details><summary>Stages, checks and serving mechanics</summary>{''.join(parts)}</details>"


def _row_section(row: ResultRow, index: int) -> list[str]:
    parts = [
        f'<section class="checkpoint" id="row-{index}" data-profile="{escape(row.profile)}">'
        f"<h2>{escape(shown_name(row.profile))} {_status(row)}</h2>",
        *_story(row),
        '<div class="panels"><div class="panel"><h3>Questions: forward, reversed, both</h3>'
        f'{grid_table(row)}</div><div class="panel"><h3>Latency distribution</h3>{distribution(row)}</div></div>',
        sweep_section(row),
        _checks(row),
        _answers(row),
    ]
    if row.commands:
        commands = "".join(
            f"<li>{escape(k)}: <code>{escape(command_text(v))}</code></li>" for k, v in row.commands.items()
        )
        parts.append(f"<details><summary>Reproduce</summary><ul>{commands}</ul></details>")
    return [*parts, "</section>"]


_NUMERIC = ("p50 client ms", "p50 task ms", "req/s", "both right")
_SUMMARY_HEADER = "".join(
    f"<th>{name}</th>" for name in ("profile", "status", "failed stage", "served by", "transport")
) + "".join(f'<th class="num">{name}</th>' for name in _NUMERIC)


def _summary_line(row: ResultRow, index: int) -> str:
    c, t = row.client_latency, row.server_task_time
    numbers = (ms(c.p50_ms if c else None), ms(t.p50_ms if t else None), str(row.requests_per_s or "–"))
    both = f'<td class="num" title="{escape(accuracy_line(row) or "no accuracy")}">{escape(both_right_cell(row))}</td>'
    name = shown_name(row.profile)
    return (
        f'<tr><td><a href="#row-{index}" title="{escape(name)}">{escape(flat(name, SHORT_CHARS))}</a>'
        f'</td><td>{_status(row)}</td><td class="nowrap">{escape(row.failed_stage or "–")}</td>'
        f'<td title="{escape(one_line(served_by(row)))}">{escape(served_by_short(row))}</td>'
        f'<td class="nowrap">{escape(transport_cell(row))}</td>'
        + "".join(f'<td class="num">{escape(number)}</td>' for number in numbers)
        + f"{both}</tr>"
    )


def summary_table(report: Report) -> str:
    """One line per row, every cell short; the full value on hover and in the row's section."""
    lines = "".join(_summary_line(row, index) for index, row in enumerate(report.rows, 1))
    return f'<table class="summary"><thead><tr>{_SUMMARY_HEADER}</tr></thead><tbody>{lines}</tbody></table>'


def _aiperf_qual_section(report: Report) -> list[str]:
    line = aiperf_qual_line(report)
    if line is None:
        return []
    rows = "".join(f"<tr><td>{escape(v)}</td><td>{escape(p)}</td></tr>" for v, p in aiperf_qual_rows(report))
    return [
        f"<h2>In TRTMC aiperf_qual's verdicts</h2><p><b>{escape(line)}</b></p><p>{escape(AIPERF_QUAL_NOTE)}</p>",
        f"<table><tr><th>aiperf_qual verdict</th><th>rows</th></tr>{rows}</table>",
    ]


def _strip_png(frames_png: Path | None) -> bytes | None:
    """The strip's bytes: a regular file, never through a link, at most MAX_STRIP_BYTES (report/build.py's
    `frame_strip` chose it inside the report's folders); None without one."""
    if frames_png is None:
        return None
    try:
        return read_regular_file(frames_png, MAX_STRIP_BYTES, follow_links=False)
    except UnreadableInput:
        return None


def render_html(report: Report, frames_png: Path | None = None) -> str:
    group = report.group
    background = _GROUP_COLOURS.get(group.status, "#f6f8fa")
    parts = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{escape(report.title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{escape(report.title)}</h1>",
        f'<p class="group group-{escape(group.status)}" style="background:{background}">{escape(group.line)}</p>',
        *(f'<p class="note"><b>{escape(line)}</b></p>' for line in interrupted_lines(report)),
        f'<p class="counts">{escape(counts_line(report))}</p>',
        summary_table(report),
        f"<p>{escape(report.generated_by)}; built from {escape(', '.join(report.sources))}.</p>",
    ]
    if report.reference_self_test:
        parts.append(
            '<p class="note">Every row was served by the reference endpoint, a <b>test double</b> that '
            "answers the synthetic clip by computation. It checks the tool, not a model.</p>"
        )
    parts += _aiperf_qual_section(report)
    parts += curves_section(report)
    parts += difference_section(report)
    if report.unreadable:
        items = "".join(f"<li>{escape(line)}</li>" for line in unreadable_lines(report))
        parts.append(f"<h2>Result files that could not be read</h2><ul>{items}</ul>")
    if (png := _strip_png(frames_png)) is not None:
        encoded = base64.b64encode(png).decode()
        parts.append(
            "<h2>What the model is meant to see</h2><p>The frames the declared sampling policy picks from "
            f'the first clip.</p><img class="strip" alt="frame strip" src="data:image/png;base64,{encoded}">'
        )
    for index, row in enumerate(report.rows, 1):
        parts += _row_section(row, index)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
