"""What report.md and report.html both say about a row, as plain text: each format escapes and marks it up."""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit

from ..common.shell_quoting import reproducible_command
from ..common.text_escape import cut, shown_name
from ..results import IdentityCheck, IdentityPair, LatencyStats, OutputCheck, RecordedCommand, Report, ResultRow

EXAMPLES: Final = 5
_ANSWER_CHARS: Final = 200
# A summary cell's longest text: the full value is in the row's section (and on hover in the HTML).
SHORT_CHARS: Final = 56
# Samples a percentile needs before the row's figures give it (at least one sample above it), as climb/stats.py says.
MIN_SAMPLES: Final = {"p50": 2, "p90": 10, "p99": 100}


def command_text(command: RecordedCommand) -> str:
    """A recorded command as a person reads it again: its notes as `#` lines, then its one shell-quoted line."""
    return "\n".join([*(f"# {note}" for note in command.notes), reproducible_command(command.argv)])


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def flat(text: str | None, limit: int = _ANSWER_CHARS) -> str:
    """One line, at most `limit` characters."""
    return cut(" ".join((text or "").split()), limit)


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


def served_model_line(row: ResultRow) -> str | None:
    """One line: the model the server named (its answers, else GET /v1/models), beside the one asked for."""
    served = row.served_model
    if served is None:
        return None
    if served.verdict == "unnamed":
        return f"Served model: not named by the server (asked for {served.asked!r})"
    names = served.answered or served.listed or []
    shown = flat(", ".join(repr(name) for name in names), SHORT_CHARS * 2) + ("" if served.answered else ", listed")
    verdict = "the same model" if served.verdict == "same" else "another model"
    return f"Served model: {shown} (asked for {served.asked!r}: {verdict})"


def served_by_short(row: ResultRow) -> str:
    """`served_by` for a summary cell: the server's name shortened, an endpoint as host:port (no scheme, no user)."""
    if row.comparison is not None:
        c = row.comparison
        return flat(f"{c.server} {c.server_version or ''}", 40) + " (comparison)"
    p = row.provenance
    if p is None:
        return "–"
    name = flat(p.served_by or p.server_version or p.mode, 40)
    if not (p.endpoint and p.mode == "endpoint"):
        return name
    where = urlsplit(p.endpoint).netloc.rpartition("@")[2] or p.endpoint
    return f"{name} at {flat(where, 32)}"


def reason_lines(reason: str) -> list[str]:
    """The status reason, one line per part: split at each `;` outside brackets (the stage story, a stage a line)."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(reason):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char == ";" and depth == 0:
            parts.append(reason[start:index])
            start = index + 1
    parts.append(reason[start:])
    return [" ".join(part.split()) for part in parts if part.strip()]


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def accuracy_line(row: ResultRow) -> str | None:
    """'Accuracy: forward 100%, reversed 100%, both right 100% (30 graded: correct 30, ...)'; None without it."""
    a = row.accuracy
    if a is None:
        return None
    return (
        f"Accuracy over {a.questions} question(s): forward {pct(a.forward)}, reversed {pct(a.reversed)}, both right "
        f"{pct(a.both_right)} ({a.graded} graded: correct {a.correct}, wrong {a.wrong}, unparseable "
        f"{a.unparseable}, empty {a.empty}; {a.incomplete} incomplete)"
    )


def percentile_cells(stats: LatencyStats | None) -> list[str]:
    """[p50, p90, p99, n] as text; a percentile the row has too few samples for says how many it needs."""
    if stats is None or not stats.count:
        return ["–", "–", "–", "0"]
    cells = []
    for name, value in (("p50", stats.p50_ms), ("p90", stats.p90_ms), ("p99", stats.p99_ms)):
        short = stats.count < MIN_SAMPLES[name]
        cells.append(ms(value) if value is not None else f"– (needs n≥{MIN_SAMPLES[name]})" if short else "–")
    return [*cells, str(stats.count)]


def distribution_line(name: str, stats: LatencyStats | None) -> str:
    """'client end-to-end: p50 54.3 ms, p90 110.6 ms, p99 – (needs n≥100), n=30'."""
    *figures_ms, count = percentile_cells(stats)
    p50, p90, p99 = (cell if cell.startswith("–") else f"{cell} ms" for cell in figures_ms)
    return f"{name}: p50 {p50}, p90 {p90}, p99 {p99}, n={count}"


def by_status(counts: dict[str, int]) -> str:
    return ", ".join(f"{status} {count}" for status, count in counts.items()) or "none"


def counts_line(report: Report) -> str:
    """Models and variants apart, as the inventory counts them, then every row."""
    return (
        f"Counts: models {by_status(report.models)}; variants {by_status(report.variants)}; "
        f"all rows {by_status(report.counts)}"
    )


def unreadable_lines(report: Report) -> list[str]:
    """One line per result file the report could not read: where it is and why (the rest is reported)."""
    return [f"{damaged.path} (in {damaged.source}): {damaged.error}" for damaged in report.unreadable]


def interrupted_lines(report: Report) -> list[str]:
    """One line per attempt a stop signal ended over an earlier row, which still stands: what the attempt reached
    and where it was kept."""
    lines = []
    for attempt in report.interrupted_attempts:
        stop = attempt.interruption
        planned, done = attempt.profiling_requests_planned, attempt.profiling_requests_completed
        measured = f"{done} of {planned} profiling request(s) answered" if planned else "nothing measured"
        kept = f"; its files are kept in {attempt.kept}" if attempt.kept else ""
        lines.append(
            f"An attempt at {shown_name(attempt.profile)} was interrupted ({stop.signal}) at {stop.stage} "
            f"({measured}); the row reported is the earlier one, left as it was{kept}"
        )
    return lines


def profile_note(row: ResultRow) -> str | None:
    """Whether the row is its checkpoint's normal profile, with its variant kinds; None off TRTMC without kinds."""
    kinds = ", ".join(row.variant_kinds)
    if row.normal_profile is True:
        where = f" ({row.checkpoint}@{(row.revision or 'no revision')[:12]})" if row.checkpoint else ""
        return f"normal profile of its checkpoint{where}, counted as a model; variant kinds: {kinds or 'none'}"
    if row.normal_profile is False:
        return f"variant of its checkpoint: not counted as a model; variant kinds: {kinds or 'none'}"
    return f"variant kinds: {kinds}" if kinds else None


def ran_aiperf(row: ResultRow) -> bool:
    """The row ran AIPerf: its aiperf stage passed or failed, or it has client latency."""
    if any(stage.name == "aiperf" and stage.status in ("passed", "failed") for stage in row.stages):
        return True
    return bool(row.client_latency and row.client_latency.count)


def figures(stats: LatencyStats) -> str:
    return (
        f"mean {ms(stats.mean_ms)} ms, p50 {ms(stats.p50_ms)}, p90 {ms(stats.p90_ms)}, p99 {ms(stats.p99_ms)} "
        f"(n={stats.count})"
    )


def streaming_lines(row: ResultRow) -> list[str]:
    """A streamed row's time to first token and inter-token latency, its output tokens per second, and the note of
    a row where --streaming was asked and not used: plain text, for every format to escape its own way."""
    lines = []
    if row.ttft and row.ttft.count:
        lines.append(f"Time to first token, TTFT (AIPerf, streamed): {figures(row.ttft)}")
    if row.itl and row.itl.count:
        lines.append(f"Inter-token latency, ITL (AIPerf, streamed): {figures(row.itl)}")
    if row.output_tokens_per_s is not None:
        lines.append(f"Output tokens per second (AIPerf's token count): {row.output_tokens_per_s:g}")
    if row.streaming_note:
        lines.append(row.streaming_note)
    return lines


def has_task_time(row: ResultRow) -> bool:
    return bool(row.server_task_time and row.server_task_time.count)


def timing_scope(row: ResultRow) -> str:
    return row.timing_scope or "scope not stated"


def outcomes(check: OutputCheck) -> str:
    return ", ".join(f"{outcome} {count}" for outcome, count in check.by_outcome.items() if count) or "none"


def output_check_summary(check: OutputCheck) -> str:
    verdict = "passed" if check.passed else "failed"
    return f"{verdict}, {check.checked} answer(s) checked: {outcomes(check)}"


def output_check_cell(row: ResultRow) -> str:
    check = row.output_check
    if check is None:
        return "–"
    if check.passed:
        return f"passed ({check.checked})"
    return f"failed ({outcomes(check)})"


def identity_cell(row: ResultRow) -> str:
    """The identity verdict as it is: `not-applicable` and `blocked` are never shown as a pass."""
    return row.identity.verdict if row.identity else "–"


def identity_summary(identity: IdentityCheck) -> str:
    never = "; not a pass" if identity.verdict == "not-applicable" else ""
    return f"identity: {identity.verdict} ({flat(identity.reason, 400)}){never}"


def pair_counts(identity: IdentityCheck) -> str:
    counts: dict[str, int] = {}
    for pair in identity.pairs:
        counts[pair.verdict] = counts.get(pair.verdict, 0) + 1
    return ", ".join(f"{verdict} {count}" for verdict, count in counts.items()) or "none"


def first_differing(identity: IdentityCheck) -> IdentityPair | None:
    return next((pair for pair in identity.pairs if pair.verdict != "same"), None)


def side(answer_text: str | None, error: str | None, http_status: int | None) -> str:
    """One side of an identity pair: its answer, else its error and HTTP status."""
    if answer_text is not None:
        return flat(answer_text)
    status = f"HTTP {http_status}" if http_status is not None else ""
    return flat(" ".join(part for part in (status, error or "") if part)) or "no answer"


def transport_cell(row: ResultRow) -> str:
    """The video transport the row's requests used; `none accepted` when its capability check tried and failed."""
    if row.video_transport:
        return row.video_transport
    return "none accepted" if row.transport_attempts else "–"


def transport_line(row: ResultRow) -> str | None:
    """How the clip was carried, with every try of the capability check; None for a row that tried none."""
    if not row.video_transport and not row.transport_attempts:
        return None
    tries = "; ".join(
        f"{a.transport}: {'accepted' if a.accepted else 'refused'}"
        + (f" (HTTP {a.http_status})" if a.http_status is not None else "")
        + ("" if a.accepted else f" — {flat(a.detail, 200)}")
        for a in row.transport_attempts
    )
    used = row.video_transport or "none accepted"
    return f"video transport: {used}" + (f"; tried {tries}" if tries else "")


def comparison_line(row: ResultRow) -> str | None:
    """What a comparison row measured, with its label: an upstream server of the checkpoint, not TRTMC."""
    c = row.comparison
    if c is None:
        return None
    version = f" {c.server_version}" if c.server_version else ""
    revision = f"@{c.revision}" if c.revision else ""
    beside = f", beside TRTMC profile {c.compared_profile}" if c.compared_profile else ""
    return (
        f"{c.label[0].upper()}{c.label[1:]}: {c.server}{version} serving {c.checkpoint}{revision} on {c.device}"
        f"{beside}; media adaptation: {c.media_adaptation}"
    )


AIPERF_QUAL_NOTE: Final = (
    "TRTMC aiperf_qual's verdict each row's evidence supports, by a fixed table from our status and failed stage "
    "(docs/trtmc-mechanics.md); `pass` would need its gold benchmarks against the native model, which this "
    "workload does not run. Worst first, in aiperf_qual's severity order."
)


def mechanics_lines(row: ResultRow) -> list[str]:
    """Which serving mechanics the row ran through, and its aiperf_qual verdict; [] for a row without them."""
    lines = [f"aiperf_qual verdict: {row.aiperf_qual_verdict}"] if row.aiperf_qual_verdict else []
    mechanics = row.serving_mechanics
    if mechanics is not None:
        lines += [f"Chat served by: {mechanics.chat}", f"Native Task route served by: {mechanics.native}"]
        lines.append(f"Evidence for aiperf_qual: {mechanics.evidence}")
    return lines


def aiperf_qual_line(report: Report) -> str | None:
    """'aiperf_qual verdict of the group: acc-inconclusive (scope)'; None for a report made before the field."""
    group = report.aiperf_qual
    if group is None:
        return None
    return f"aiperf_qual verdict of the group: {group.verdict or 'none (no row to judge)'} ({group.scope})"


def aiperf_qual_rows(report: Report) -> list[tuple[str, str]]:
    """(verdict, its profiles) worst first."""
    group = report.aiperf_qual
    return [(verdict, ", ".join(profiles)) for verdict, profiles in (group.rows.items() if group else [])]
