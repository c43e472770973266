"""report.md and the GitHub step summary: the group line, the counts, one compact table (a row per checkpoint), then
each row's own section: its stage story a line a part, the questions as a grid, the latency percentiles, and the
rest in a <details> block (GitHub renders no SVG, so the distribution is given as text)."""

from __future__ import annotations

from ..common.text_escape import html_text, md_code, md_fence, md_text, shown_name
from ..results import IdentityCheck, OutputCheck, Report, ResultRow, SamplingFacts
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
    distribution_line,
    figures,
    first_differing,
    flat,
    has_task_time,
    identity_summary,
    interrupted_lines,
    mechanics_lines,
    ms,
    output_check_summary,
    pair_counts,
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
from .difference_view import markdown_lines as difference_lines
from .grid import LEGEND, both_right_cell, both_text, cell_text, question_grid
from .sweep import sweep_table

# Every value from a row goes through one of these: text (md_text) or code (_code, md_fence); never raw.
_cell = md_text

SUMMARY_HEADER = (
    "| profile | status | failed stage | served by | transport | p50 client ms | p50 task ms | req/s | both right |"
)


def _code(text: str | None) -> str:
    return md_code(flat(text))


def status_table(report: Report) -> list[str]:
    """One line per row, every cell short (the full values are in the row's section)."""
    lines = [SUMMARY_HEADER, "|---|---|---|---|---|--:|--:|--:|--:|"]
    for row in report.rows:
        c, t = row.client_latency, row.server_task_time
        lines.append(
            f"| {_cell(flat(shown_name(row.profile), SHORT_CHARS))} | **{row.status}** | {row.failed_stage or '–'} | "
            f"{_cell(served_by_short(row))} | {_cell(transport_cell(row))} | {ms(c.p50_ms if c else None)} | "
            f"{ms(t.p50_ms if t else None)} | {row.requests_per_s or '–'} | {both_right_cell(row)} |"
        )
    return lines


def _story_lines(row: ResultRow) -> list[str]:
    """The status, then its reason a part a line (the stage story), where the row was served, and its accuracy."""
    stage = f" (failed stage: {row.failed_stage})" if row.failed_stage else ""
    out = [f"- Status: **{row.status}**{stage}"]
    out += [f"  - {_cell(part)}" for part in reason_lines(row.status_reason)]
    out.append(f"- Served by: {_cell(served_by(row))}")
    model = served_model_line(row)
    if model:
        out.append(f"- {_cell(model)}")
    if served_by_test_double(row):
        out.append("- Served by the reference endpoint, a **test double**: not a TRTMC model qualification")
    accuracy = accuracy_line(row)
    if accuracy:
        out.append(f"- {_cell(accuracy)}")
    return out


def _distribution_lines(row: ResultRow) -> list[str]:
    """The latency percentiles of both clocks as text (the HTML draws them)."""
    if not (row.client_latency and row.client_latency.count):
        return []
    out = [
        "- Latency of the profiling requests:",
        f"  - {_cell(distribution_line('client end-to-end (AIPerf)', row.client_latency))}",
    ]
    if has_task_time(row):
        out.append(f"  - {_cell(distribution_line('server task time', row.server_task_time))}")
    else:
        out.append(f"  - {_cell(TASK_TIME_NOT_REPORTED_LINE)}")
    return out


def sweep_lines(row: ResultRow) -> list[str]:
    """The row's load levels as a GitHub table, its notes beneath (report.html draws the curve); [] without."""
    table = sweep_table(row)
    if table is None:
        return []
    out = ["", "Load levels (report.html draws them as a throughput-latency curve):", ""]
    out += ["| " + " | ".join(_cell(name) for name in table.header) + " |", "|" + "---|" * len(table.header)]
    out += ["| " + " | ".join(_cell(cell) for cell in line) + " |" for line in table.lines]
    return [*out, *(line for note in table.notes for line in ("", _cell(note))), ""]


def grid_lines(row: ResultRow) -> list[str]:
    """The questions as a GitHub table: one line per question, a column per clip, then both; [] without grades."""
    grid = question_grid(row)
    if grid is None:
        return []
    both = len(grid.clips) == 2
    header = ["question", *grid.clips, *(["both"] if both else [])]
    out = ["| " + " | ".join(_cell(flat(name, 40)) for name in header) + " |", "|" + "---|" * len(header)]
    for line in grid.lines:
        cells = [_cell(flat(line.question_id, 40)), *(_cell(cell_text(cell)) for cell in line.cells)]
        if both:
            cells.append(both_text(line.both))
        out.append("| " + " | ".join(cells) + " |")
    return ["", *out, "", _cell(LEGEND), ""]


def _profile_lines(row: ResultRow) -> list[str]:
    note = profile_note(row)
    out = [f"- Profile: {_cell(note)}"] if note else []
    if row.profile_gap:
        out.append(f"- Profile gap: {_cell(row.profile_gap)}")
    return out


def _timing_lines(row: ResultRow) -> list[str]:
    out = []
    if row.client_latency and row.client_latency.count:
        out.append(f"- Client end-to-end latency (AIPerf): {figures(row.client_latency)}")
    if row.server_task_time and has_task_time(row):
        out.append(
            f"- Server task time ({_code(row.task_time_field or 'field not stated')}, {_cell(timing_scope(row))}): "
            f"{figures(row.server_task_time)}"
        )
    elif ran_aiperf(row):
        out.append(f"- {TASK_TIME_NOT_REPORTED_LINE}")
    return out + [f"- {_cell(line)}" for line in streaming_lines(row)]


def _output_check_lines(check: OutputCheck) -> list[str]:
    out = [f"- Output check: {_cell(output_check_summary(check))}"]
    if check.declared_no_answer:
        out.append(f"  - Declared no-answer (the run's own plan): {_cell(flat(check.declared_no_answer, 400))}")
    for example in check.examples[:EXAMPLES]:
        out.append(
            f"  - {_cell(example.outcome)}: {_code(example.session_id)} (question {_cell(example.question_id)}, "
            f"clip {_cell(example.clip_id)}): {_code(example.answer)}"
        )
    return out


def _identity_lines(identity: IdentityCheck) -> list[str]:
    out = [f"- Native/HTTP {_cell(identity_summary(identity))}"]
    if identity.native_route:
        fields = f"; request fields {_cell(', '.join(identity.request_fields))}" if identity.request_fields else ""
        source = f" ({_code(identity.request_source)})" if identity.request_source else ""
        out.append(f"  - Native route: {_code(identity.native_route)}{fields}{source}")
    if identity.sampling:
        out.append(f"  - Frames sent: {_cell(identity.sampling)}")
    if identity.pairs:
        counts = _cell(pair_counts(identity))
        out.append(f"  - Pairs: {len(identity.pairs)} ({counts}); compared {_cell(identity.normalisation)}")
    pair = first_differing(identity)
    if pair is not None:
        chat = side(pair.chat.answer, pair.chat.error, pair.chat.http_status)
        native = side(pair.native.answer, pair.native.error, pair.native.http_status)
        out.append(
            f"  - First differing pair (question {_cell(pair.question_id)}, clip {_cell(pair.clip_id)}, "
            f"{pair.verdict}): chat {_code(chat)} ({_code(pair.chat.request_id)}) vs native {_code(native)} "
            f"({_code(pair.native.request_id)})"
        )
    return out


def _provenance_lines(row: ResultRow) -> list[str]:
    p = row.provenance
    if p is None:
        return []
    source = f" ({p.settings['precision_source']})" if "precision_source" in p.settings else ""
    inventory = f", inventory {p.inventory_digest}" if p.inventory_digest else ""
    provenance = (
        f"workload {p.workload} ({p.workload_digest[:12]}), aiperf {p.aiperf.get('version')}, mode {p.mode}, "
        f"served by {served_by(row)}, server version {p.server_version or 'unknown'}, bundle "
        f"{p.bundle_digest or '–'}, TRTMC {p.trtmc_commit or '–'}, precision {p.effective_precision or '–'}"
        f"{source}{inventory}"
    )
    return [f"- Provenance: {_cell(provenance)}", f"- Tokenizer (token counts only): {_cell(p.tokenizer or 'unknown')}"]


def _details_lines(row: ResultRow) -> list[str]:
    """Everything else the row holds, for the <details> block."""
    out = []
    comparison = comparison_line(row)
    if comparison:
        out.append(f"- {_cell(comparison)}")
    out += _profile_lines(row)
    if row.status_evidence:
        out.append(f"- Evidence: {', '.join(_code(e) for e in row.status_evidence)}")
    out.append("- Stages:")
    for stage in row.stages:
        wall = f" ({stage.wall_s:.1f} s)" if stage.wall_s is not None else ""
        out.append(f"  - {stage.name}: {stage.status}{wall} — {_cell(stage.detail)}")
    transport = transport_line(row)
    if transport:
        out.append(f"- {_cell(transport[0].upper() + transport[1:])}")
    if row.profiling_requests_planned:
        out.append(
            f"- Requests: {row.warmup_requests} warmup (kept apart), {row.profiling_requests_completed}/"
            f"{row.profiling_requests_planned} profiling completed, {row.failed_requests} failed"
        )
    out += _timing_lines(row)
    if row.output_check is not None:
        out += _output_check_lines(row.output_check)
    if row.identity is not None:
        out += _identity_lines(row.identity)
    out += [f"- {_cell(line)}" for line in mechanics_lines(row)]
    out += _clip_lines(row)
    out += _provenance_lines(row)
    for name, command in row.commands.items():
        out += [f"- Reproduce ({_cell(name)}):", "", *md_fence(command_text(command), indent="  ")]
    return out


def _clip_lines(row: ResultRow) -> list[str]:
    out = [
        f"- Clip {_code(clip_id)}: {clip.frames_counted} frames, {clip.width}x{clip.height}, "
        f"{clip.duration_s} s at {_cell(clip.fps)} fps, sha256 {_cell(clip.sha256[:12])}"
        for clip_id, clip in row.clips.items()
    ]
    if isinstance(row.sampling, SamplingFacts):  # else {}: the row ran nothing
        sampling = row.sampling
        out.append(
            f"- Sampling: {_code(sampling.applied_by_server or sampling.policy)} applied by the {sampling.where}"
        )
        if sampling.mismatch:
            out.append(f"- Sampling mismatch: {_cell(sampling.mismatch)}")
    return out


def _details_block(summary: str, lines: list[str]) -> list[str]:
    """A <details> block GitHub renders Markdown inside (blank lines around the body); the summary is HTML text."""
    return [f"<details><summary>{html_text(flat(summary))}</summary>", "", *lines, "", "</details>"]


def _row_details(row: ResultRow) -> list[str]:
    heading = f"### {_cell(shown_name(row.profile))}"
    out = [heading, "", *_story_lines(row), *grid_lines(row), *_distribution_lines(row), *sweep_lines(row), ""]
    out += _details_block("Stages, checks, provenance and commands", _details_lines(row))
    return out + [""]


def _aiperf_qual_lines(report: Report) -> list[str]:
    line = aiperf_qual_line(report)
    if line is None:
        return []
    out = ["## In TRTMC aiperf_qual's verdicts", "", f"**{_cell(line)}**", "", _cell(AIPERF_QUAL_NOTE), ""]
    out += ["| aiperf_qual verdict | rows |", "|---|---|"]
    out += [f"| {verdict} | {_cell(profiles)} |" for verdict, profiles in aiperf_qual_rows(report)]
    return out + [""]


def render_markdown(report: Report) -> str:
    out = [f"# {_cell(report.title)}", "", f"**{_cell(report.group.line)}**", ""]
    out += [f"**{_cell(line)}**\n" for line in interrupted_lines(report)]
    out += [counts_line(report), ""]
    out += status_table(report) + [""]
    out += [f"Generated by {_cell(report.generated_by)} from {_cell(', '.join(report.sources))}.", ""]
    if report.reference_self_test:
        out += [
            "> Every row here was served by the reference endpoint, a test double that answers the synthetic "
            "clip by computation. It checks the tool, not a model.",
            "",
        ]
    out += _aiperf_qual_lines(report)
    out += difference_lines(report)
    if report.unreadable:
        out += ["## Result files that could not be read", ""]
        out += [f"- {_cell(line)}" for line in unreadable_lines(report)] + [""]
    out += ["## Checkpoints", ""]
    for row in report.rows:
        out += _row_details(row)
    return "\n".join(out) + "\n"


def render_step_summary(report: Report) -> str:
    """The group line, the counts and the table; each row's story, latency and grid folded in a <details> block."""
    out = [f"## {_cell(report.title)}", "", f"**{_cell(report.group.line)}**", ""]
    out += [f"**{_cell(line)}**\n" for line in interrupted_lines(report)]
    out += [counts_line(report), ""]
    out += status_table(report) + [""]
    out += difference_lines(report)
    for row in report.rows:
        body = [*_story_lines(row), *grid_lines(row), *_distribution_lines(row), *sweep_lines(row)]
        out += _details_block(f"{shown_name(row.profile)}: {row.status}", body) + [""]
    return "\n".join(out) + "\n"
