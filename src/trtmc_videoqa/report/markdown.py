"""report.md and the GitHub step summary."""

from __future__ import annotations

from ..common.text_escape import md_code, md_fence, md_text
from ..results import IdentityCheck, OutputCheck, Report, ResultRow, SamplingFacts
from .details import (
    AIPERF_QUAL_NOTE,
    EXAMPLES,
    NOT_REPORTED_LINE,
    aiperf_qual_line,
    aiperf_qual_rows,
    comparison_line,
    counts_line,
    figures,
    first_differing,
    flat,
    has_task_time,
    identity_cell,
    identity_summary,
    mechanics_lines,
    ms,
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


def served_by_test_double(row: ResultRow) -> bool:
    """The row's server said it is a test double (the reference endpoint does, in every response)."""
    return row.reference_self_test or "test double" in ((row.provenance.served_by or "") if row.provenance else "")


def served_by(row: ResultRow) -> str:
    """Which server a row measured, so rows of one profile merged from two servers can be told apart."""
    if row.comparison is not None:
        c = row.comparison
        return f"{c.server} {c.server_version or ''}".rstrip() + f", {c.label}"
    p = row.provenance
    if p is None:
        return "–"
    where = f" at {p.endpoint}" if p.endpoint and p.mode == "endpoint" else ""
    return f"{p.served_by or p.server_version or p.mode}{where}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


# Every value from a row goes through one of these: text (md_text) or code (_code, md_fence); never raw.
_cell = md_text


def _code(text: str | None) -> str:
    return md_code(flat(text))


def status_table(report: Report) -> list[str]:
    lines = [
        "| profile | served by | status | aiperf_qual | reason | transport | output check | identity | p50 client ms | "
        "p50 task ms | req/s | forward | reversed | both right |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report.rows:
        c, t, a = row.client_latency, row.server_task_time, row.accuracy
        stage = f" (at {row.failed_stage})" if row.failed_stage else ""
        lines.append(
            f"| {_cell(row.profile)} | {_cell(served_by(row))} | **{row.status}**{stage} | "
            f"{row.aiperf_qual_verdict or '–'} | {_cell(row.status_reason)} | {_cell(transport_cell(row))} | "
            f"{_cell(output_check_cell(row))} | {_cell(identity_cell(row))} | "
            f"{ms(c.p50_ms if c else None)} | {ms(t.p50_ms if t else None)} | "
            f"{row.requests_per_s or '–'} | {_pct(a.forward if a else None)} | "
            f"{_pct(a.reversed if a else None)} | {_pct(a.both_right if a else None)} |"
        )
    return lines


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
        out.append(f"- {NOT_REPORTED_LINE}")
    return out


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


def _row_details(row: ResultRow) -> list[str]:
    out = [f"### {_cell(row.profile)}", "", f"- Status: **{row.status}** — {_cell(row.status_reason)}"]
    if served_by_test_double(row):
        out.append("- Served by the reference endpoint, a **test double**: not a TRTMC model qualification")
    comparison = comparison_line(row)
    if comparison:
        out.append(f"- {_cell(comparison)}")
    out += _profile_lines(row)
    if row.status_evidence:
        out.append(f"- Evidence: {', '.join(_code(e) for e in row.status_evidence)}")
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
    for clip_id, clip in row.clips.items():
        out.append(
            f"- Clip {_code(clip_id)}: {clip.frames_counted} frames, {clip.width}x{clip.height}, "
            f"{clip.duration_s} s at {_cell(clip.fps)} fps, sha256 {_cell(clip.sha256[:12])}"
        )
    if isinstance(row.sampling, SamplingFacts):  # else {}: the row ran nothing
        sampling = row.sampling
        out.append(
            f"- Sampling: {_code(sampling.applied_by_server or sampling.policy)} applied by the {sampling.where}"
        )
        if sampling.mismatch:
            out.append(f"- Sampling mismatch: {_cell(sampling.mismatch)}")
    out += _provenance_lines(row)
    for name, command in row.commands.items():
        out += [f"- Reproduce ({_cell(name)}):", "", *md_fence(command, indent="  ")]
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
    out += [f"Generated by {_cell(report.generated_by)} from {_cell(', '.join(report.sources))}.", ""]
    if report.reference_self_test:
        out += [
            "> Every row here was served by the reference endpoint, a test double that answers the synthetic "
            "clip by computation. It checks the tool, not a model.",
            "",
        ]
    out += [counts_line(report), ""]
    out += status_table(report) + [""]
    out += _aiperf_qual_lines(report)
    if report.unreadable:
        out += ["## Result files that could not be read", ""]
        out += [f"- {_cell(line)}" for line in unreadable_lines(report)] + [""]
    out += ["## Checkpoints", ""]
    for row in report.rows:
        out += _row_details(row)
    return "\n".join(out) + "\n"


def render_step_summary(report: Report) -> str:
    heading = [f"## {_cell(report.title)}", "", f"**{_cell(report.group.line)}**", ""]
    return "\n".join([*heading, *status_table(report), ""]) + "\n"
