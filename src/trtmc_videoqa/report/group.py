"""The group's status in one line, read off the rows alone: the line every report opens with.

TRTMC rows are those with `provenance.mode == "trtmc"`, or without provenance and not the reference self-test (the
unsupported rows of a TRTMC run). Over the in-group TRTMC rows, a *capable* row is a capable normal profile: verdict
`temporal-video-qa`, status not `unsupported`, `normal_profile` true. The group is `failed` when a capable row
failed, `qualified` only when there is one and every capable row is `aiperf-qualified`, else `blocked`. A run without
TRTMC rows says what it is instead (the reference self-test, an endpoint run) and never claims a qualification.
"""

from __future__ import annotations

from collections import Counter
from typing import Final

from ..aiperf_qual.verdicts import group_verdict
from ..common.text_escape import shown_name
from ..results import COMPARISON_LABEL, GroupLine, GroupVerdict, ResultRow

CAPABLE_VERDICT: Final = "temporal-video-qa"
QUALIFIED: Final = "aiperf-qualified"
# A capable row with one of these fails the group: it ran and failed, or it claims a result its folder cannot show.
FAILING: Final = frozenset({"failed", "unverified"})
SELF_TEST_LINE: Final = "Reference self-test: the tool checked against a test double; no TRTMC model was qualified"
_REASON_CHARS: Final = 200


def is_trtmc_row(row: ResultRow) -> bool:
    if row.provenance is not None:
        return row.provenance.mode == "trtmc"
    return not row.reference_self_test


def is_capable(row: ResultRow) -> bool:
    """A capable normal profile: the rows the group's status is read from (one the server then rejected counts, as
    not qualified)."""
    return row.verdict == CAPABLE_VERDICT and row.normal_profile is True


def statuses(rows: list[ResultRow]) -> str:
    """'aiperf-qualified 1, unsupported 3': rows by status, in name order."""
    counts = Counter(row.status for row in rows)
    return ", ".join(f"{status} {count}" for status, count in sorted(counts.items())) or "none"


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _REASON_CHARS else flat[: _REASON_CHARS - 1] + "…"


def _first_line_evidence(row: ResultRow) -> str | None:
    """The row's first evidence that names a line (file:line), else its first evidence."""
    for item in row.status_evidence:
        head, _, tail = item.rpartition(":")
        if head and tail.isdigit():
            return item
    return row.status_evidence[0] if row.status_evidence else None


def _common_gap(rows: list[ResultRow]) -> str:
    """The most common reason among unsupported rows (first seen wins a tie), with its first evidence."""
    unsupported = [row for row in rows if row.status == "unsupported"]
    if not unsupported:
        return "no unsupported row names a capability gap"
    reason, count = Counter(row.status_reason for row in unsupported).most_common(1)[0]
    first = next(row for row in unsupported if row.status_reason == reason)
    evidence = _first_line_evidence(first)
    where = f" ({evidence})" if evidence else ""
    return f"most common gap ({count} of {len(unsupported)} unsupported): {_short(reason)}{where}"


def _where(row: ResultRow) -> str:
    stage = f" at {row.failed_stage}" if row.failed_stage else ""
    return f"{shown_name(row.profile)}{stage}: {_short(row.status_reason)}"


def _trtmc_line(rows: list[ResultRow], declared: str | None = None) -> GroupLine:
    group = [row for row in rows if row.in_group]
    capable = [row for row in group if is_capable(row)]
    failed = [row for row in capable if row.status in FAILING]
    if failed:
        named = "; ".join(_where(row) for row in failed)
        line = f"Group: failed: {len(failed)} of {len(capable)} capable checkpoint(s) failed ({named})"
        return GroupLine(status="failed", line=line)
    if capable and all(row.status == QUALIFIED for row in capable):
        line = f"Group: qualified: every capable checkpoint's normal profile ({len(capable)}) is {QUALIFIED}"
        return GroupLine(status="qualified", line=line)
    if not capable:
        rows_word = "row" if len(group) == 1 else "rows"
        line = (
            f"Group: blocked: {len(group)} in-group {rows_word}, 0 with an existing native temporal video QA "
            f"capability; {_common_gap(group)}"
        )
        if declared:  # the furthest state along TRTMC's own declarations, from the run's inventory (issue 27)
            line += f"; {declared}"
        return GroupLine(status="blocked", line=line)
    short = [row for row in capable if row.status != QUALIFIED]
    named = "; ".join(f"{shown_name(row.profile)} ({row.status}: {_short(row.status_reason)})" for row in short)
    line = f"Group: blocked: {len(short)} of {len(capable)} capable checkpoint(s) not {QUALIFIED}: {named}"
    return GroupLine(status="blocked", line=line)


def _not_counted(others: list[ResultRow]) -> str:
    """'2 comparison (not a TRTMC capability) row(s) and 1 self-test/endpoint row(s), not counted'."""
    comparisons = sum(1 for row in others if row.comparison is not None)
    parts = [f"{comparisons} {COMPARISON_LABEL} row(s)"] if comparisons else []
    if len(others) > comparisons:
        parts.append(f"{len(others) - comparisons} self-test/endpoint row(s)")
    return f"{' and '.join(parts)}, not counted"


def declared_state(inventory_line: str | None) -> str | None:
    """The inventory's blocked group line without its head: 'TRTMC declares video_text_to_text (...) but ...'."""
    head = "Group: blocked: "
    if not inventory_line or not inventory_line.startswith(head) or "; " not in inventory_line:
        return None
    return shown_name(inventory_line.split("; ", 1)[1])


def group_line(rows: list[ResultRow], inventory_line: str | None = None) -> GroupLine:
    """The group's status in one line (see the module's docstring for the rule). `inventory_line` is the run's
    inventory group line; when blocked, the line names the furthest state it reached."""
    trtmc = [row for row in rows if is_trtmc_row(row)]
    others = [row for row in rows if not is_trtmc_row(row)]
    if not trtmc and others and all(row.comparison is not None for row in others):
        line = (
            f"Comparison run: {len(others)} row(s) of upstream servers, {COMPARISON_LABEL} (statuses "
            f"{statuses(others)}); no TRTMC model was qualified"
        )
        return GroupLine(status="comparison", line=line)
    if not trtmc and others and all(row.reference_self_test for row in others):
        line = f"{SELF_TEST_LINE}; {len(others)} row(s), statuses: {statuses(others)}"
        return GroupLine(status="reference-self-test", line=line)
    if not trtmc and others:
        line = (
            f"Endpoint run: {len(others)} row(s) of a server this tool did not build (statuses {statuses(others)}); "
            "no TRTMC model was qualified"
        )
        return GroupLine(status="endpoint", line=line)
    group = _trtmc_line(trtmc, declared_state(inventory_line))
    if others:
        line = f"{group.line}; plus {_not_counted(others)}"
        return GroupLine(status=group.status, line=line)
    return group


def aiperf_qual_group(rows: list[ResultRow]) -> GroupVerdict:
    """The group in aiperf_qual's verdicts: the worst over the group's models (in-group normal profiles of TRTMC
    rows), or over every row of a report without TRTMC rows (which then says it judged no TRTMC model)."""
    trtmc = [row for row in rows if is_trtmc_row(row) and row.comparison is None]
    if trtmc:
        models = [row for row in trtmc if row.in_group and row.normal_profile is True]
        return group_verdict(rows, models, "the group's models: in-group normal profiles of TRTMC rows")
    return group_verdict(rows, rows, "every row; no TRTMC row in this report, so no TRTMC model was judged")
