"""A run's verdict as the terminal shows it, on stdout after the run: the group or run line over the run's rows
(report/group.py, the line every report opens with), then one table of the rows that fits 100 columns (row, status,
both right over the questions and over the repeat pairs, forward and reversed, client and task p50, requests per
second), a line naming a sweep's best level where a row was measured at several, then one short line per row that
is not qualified or was reused. Long reasons stay off the table: the
report holds them whole."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ..common.text_escape import cut, cut_middle, one_line, shown_name
from ..report.grid import question_grid
from ..report.group import group_line
from ..results import LoadLevel, ResultRow

WIDTH: Final = 100  # the table, its header and every line under it fit this many columns
GAP: Final = "  "
NONE: Final = "–"
QUALIFIED: Final = frozenset({"aiperf-qualified", "endpoint-qualified"})
LEGEND: Final = "both q: questions right both ways every repeat; pairs: repeats right both ways; client, task: p50 ms"


@dataclass(frozen=True)
class Column:
    title: str
    width: int  # the most it takes: a column is as wide as its title and its widest cell, up to this
    right: bool = True  # figures right-aligned, words left


COLUMNS: Final = (
    Column("status", 18, right=False),
    Column("both q", 6),
    Column("pairs", 7),
    Column("fwd", 4),
    Column("rev", 4),
    Column("client", 6),
    Column("task", 6),
    Column("req/s", 5),
)
# What the row's name may take at least: the rest of WIDTH when every column is as wide as it may be.
NAME_WIDTH: Final = WIDTH - sum(c.width for c in COLUMNS) - len(GAP) * len(COLUMNS)


def _pct(value: float | None) -> str:
    return NONE if value is None else f"{value * 100:.0f}%"


def _ms(value: float | None) -> str:
    if value is None:
        return NONE
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def _rate(value: float | None) -> str:
    if value is None:
        return NONE
    return f"{value:.0f}" if value >= 100 else f"{value:.2f}"


def both_right(row: ResultRow) -> tuple[str, str]:
    """(questions both right in every repeat / questions, repeat pairs both right / pairs), from the graded requests
    as the report's grid counts them; dashes where nothing was graded."""
    grid = question_grid(row)
    counted = [line.both for line in grid.lines if line.both is not None] if grid else []
    if not counted:
        return NONE, NONE
    questions = sum(1 for both in counted if both.pairs and both.right == both.pairs)
    pairs = f"{sum(b.right for b in counted)}/{sum(b.pairs for b in counted)}"
    return f"{questions}/{len(counted)}", pairs


def cells(row: ResultRow) -> list[str]:
    accuracy, client, task = row.accuracy, row.client_latency, row.server_task_time
    questions, pairs = both_right(row)
    return [
        row.status,
        questions,
        pairs,
        _pct(accuracy.forward if accuracy else None),
        _pct(accuracy.reversed if accuracy else None),
        _ms(client.p50_ms if client else None),
        _ms(task.p50_ms if task else None),
        _rate(row.requests_per_s),
    ]


def _line(name: str, values: Sequence[str], name_width: int, widths: Sequence[int]) -> str:
    parts = [cut_middle(name, name_width).ljust(name_width)]
    for column, width, value in zip(COLUMNS, widths, values, strict=True):
        shown = cut(value, width)
        parts.append(shown.rjust(width) if column.right else shown.ljust(width))
    return GAP.join(parts).rstrip()


def table(rows: Sequence[ResultRow]) -> list[str]:
    """The header, one line per row, and the legend: each at most WIDTH columns. Each column takes what its title
    and cells need (up to its width); the row's name takes the rest, cut in the middle only when it must."""
    names = [shown_name(row.profile) for row in rows]
    values = [cells(row) for row in rows]
    widths = [
        min(column.width, max([len(column.title), *(len(v[i]) for v in values)])) for i, column in enumerate(COLUMNS)
    ]
    room = WIDTH - sum(widths) - len(GAP) * len(COLUMNS)
    name_width = min(max([len("row"), *map(len, names)]), room)
    lines = [_line("row", [c.title for c in COLUMNS], name_width, widths)]
    lines += [_line(name, cells_of, name_width, widths) for name, cells_of in zip(names, values, strict=True)]
    return [*lines, cut(LEGEND, WIDTH)]


def notes(rows: Sequence[ResultRow]) -> list[str]:
    """One short line per row that is not qualified (its stage and the start of its reason) or was reused."""
    out = []
    for row in rows:
        qualified = row.status in QUALIFIED
        if qualified and not row.reused:
            continue
        stage = f" at {row.failed_stage}" if row.failed_stage else ""
        reused = " (reused)" if row.reused else ""
        reason = "" if qualified else f" — {one_line(row.status_reason)}"
        out.append(cut(f"{shown_name(row.profile)}: {row.status}{stage}{reused}{reason}", WIDTH))
    return out


def best_levels(rows: Sequence[ResultRow]) -> list[str]:
    """One line per row measured at more than one level: its sweep's best level (the highest requests per second
    among the levels that passed), or that none passed."""
    out = []
    for row in rows:
        sweep = row.sweep
        if sweep is None or len(sweep.levels) < 2:
            continue
        axis = "concurrency" if sweep.axis == "concurrency" else "request rate"
        best = next((level for level in sweep.levels if _level_value(level) == sweep.best_level), None)
        if best is None:
            said = "no level passed"
        else:
            said = f"best level: {axis} {_level_value(best):g}, {_rate(best.requests_per_s)} req/s"
        levels = ",".join(f"{_level_value(level):g}" for level in sweep.levels)
        out.append(cut(f"{shown_name(row.profile)}: {said} (levels {levels})", WIDTH))
    return out


def _level_value(level: LoadLevel) -> float:
    return float(level.request_rate if level.request_rate is not None else level.concurrency or 0)


def verdict_lines(rows: Sequence[ResultRow]) -> list[str]:
    """The group or run line, the table (or the word that there is no row), a sweep's best level and the notes."""
    head = [one_line(group_line(list(rows)).line)]
    if not rows:
        return [*head, "no row: the run was asked about nothing it could make a row of"]
    return [*head, "", *table(rows), *best_levels(rows), *notes(rows)]
