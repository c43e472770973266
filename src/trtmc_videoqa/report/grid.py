"""The questions as a grid, read off a row's graded requests alone: one line per question, one cell per clip (the
forward clip, then its time-reversed twin, in the order the plan asked them), and a `both` cell that pairs the two
clips' answers by repeat, as grading does (a repeat is both right only when both its answers are right; a side that
is missing is not right). Each cell holds the answers given over the repeats, each marked by a symbol, and the
accepted answer beside them. Plain data and plain text: each format escapes and marks it up.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Final

from ..results import RequestRow, ResultRow

RIGHT: Final = "✓"
WRONG: Final = "✗"
# What each mark says, in the order a legend lists them; only ✓ is right, and only ✗ is a wrong option.
MARKS: Final = {
    "correct": RIGHT,
    "wrong": WRONG,
    "unparseable": "?",
    "empty": "∅",
    "error": "!",
    "ungraded": "–",
}
LEGEND: Final = (
    f"{RIGHT} right, {WRONG} wrong option, ? no option read from the answer, ∅ empty answer, ! request failed, "
    "– not graded; ×N: over N repeats; accepted: the answer the workload accepts on that clip; "
    f"both: repeats with both clips right ({RIGHT} only when every repeat is)"
)
_LABEL_CHARS: Final = 10  # a wrong answer that is not one letter is shown by its first characters
ENTRIES: Final = 2  # distinct answers shown in one cell, the most given first; the others are counted


@dataclass(frozen=True)
class Given:
    """One distinct answer given on a clip: its label (the option letter, or the answer's first characters), its
    outcome and how many repeats gave it."""

    label: str
    outcome: str
    count: int

    @property
    def mark(self) -> str:
        return MARKS.get(self.outcome, MARKS["ungraded"])


@dataclass(frozen=True)
class Cell:
    given: tuple[Given, ...]
    accepted: str | None
    answers: tuple[str, ...]  # every repeat's answer in full, 'r00: A (correct)', for a hover or a details line

    @property
    def right(self) -> int:
        return sum(g.count for g in self.given if g.outcome == "correct")

    @property
    def total(self) -> int:
        return sum(g.count for g in self.given)


@dataclass(frozen=True)
class Both:
    right: int
    pairs: int

    @property
    def mark(self) -> str:
        return RIGHT if self.pairs and self.right == self.pairs else WRONG


@dataclass(frozen=True)
class GridLine:
    question_id: str
    cells: tuple[Cell | None, ...]  # one per clip; None: the question was not asked on that clip
    both: Both | None


@dataclass(frozen=True)
class QuestionGrid:
    clips: tuple[str, ...]
    lines: tuple[GridLine, ...]

    @property
    def both(self) -> Both | None:
        """Pairs both right over every question: the `k/n` of the summary table."""
        counted = [line.both for line in self.lines if line.both is not None]
        if not counted:
            return None
        return Both(right=sum(b.right for b in counted), pairs=sum(b.pairs for b in counted))


def _outcome(request: RequestRow) -> str:
    if request.grade:
        return request.grade
    return "error" if request.error else "ungraded"


def _label(request: RequestRow) -> str:
    """The option letter a right answer gave (the accepted one); otherwise the answer's first characters."""
    outcome = _outcome(request)
    if outcome == "correct" and request.expected:
        return request.expected
    if outcome == "error":
        return f"HTTP {request.http_status}" if request.http_status else "error"
    text = " ".join((request.answer or "").split())
    if not text:
        return ""
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1].rstrip() + "…"


def _full(request: RequestRow) -> str:
    text = " ".join((request.answer or request.error or "").split())
    shown = text if len(text) <= 200 else text[:199] + "…"
    return f"r{request.repeat:02d}: {shown or '(none)'} ({_outcome(request)})"


def _cell(requests: list[RequestRow]) -> Cell:
    counts = Counter((_label(r), _outcome(r)) for r in requests)
    given = tuple(Given(label, outcome, count) for (label, outcome), count in counts.most_common())
    accepted = next((r.expected for r in requests if r.expected), None)
    ordered = sorted(requests, key=lambda r: r.repeat)
    return Cell(given=given, accepted=accepted, answers=tuple(_full(r) for r in ordered))


def _both(first: list[RequestRow], second: list[RequestRow]) -> Both:
    """Repeats seen on either clip, and those whose two answers are both right."""
    right_first = {r.repeat for r in first if r.grade == "correct"}
    right_second = {r.repeat for r in second if r.grade == "correct"}
    repeats = {r.repeat for r in first} | {r.repeat for r in second}
    return Both(right=len(right_first & right_second), pairs=len(repeats))


def question_grid(row: ResultRow) -> QuestionGrid | None:
    """The row's grid; None for a row without a graded profiling answer (nothing to show)."""
    asked = [r for r in row.requests if r.phase == "profiling"]
    if not any(r.grade for r in asked):
        return None
    clips = tuple(dict.fromkeys(r.clip_id for r in asked))
    questions = tuple(dict.fromkeys(r.question_id for r in asked))
    lines = []
    for question in questions:
        by_clip = [[r for r in asked if r.question_id == question and r.clip_id == clip] for clip in clips]
        cells = tuple(_cell(found) if found else None for found in by_clip)
        both = _both(by_clip[0], by_clip[1]) if len(clips) == 2 else None
        lines.append(GridLine(question_id=question, cells=cells, both=both))
    return QuestionGrid(clips=clips, lines=tuple(lines))


def given_text(given: Given) -> str:
    """'✓ A ×5', '✗ B', '? I cannot te… ×40'."""
    times = f" ×{given.count}" if given.count > 1 else ""
    label = f" {given.label}" if given.label else ""
    return f"{given.mark}{label}{times}"


def cell_text(cell: Cell | None) -> str:
    """A whole cell as one line: its answers (the most given first), then the accepted answer."""
    if cell is None:
        return "–"
    shown = [given_text(g) for g in cell.given[:ENTRIES]]
    hidden = sum(g.count for g in cell.given[ENTRIES:])
    if hidden:
        shown.append(f"+{hidden} more")
    accepted = f" · accepted {cell.accepted}" if cell.accepted else ""
    return " · ".join(shown) + accepted


def both_text(both: Both | None) -> str:
    return "–" if both is None else f"{both.mark} {both.right}/{both.pairs}"


def both_right_cell(row: ResultRow) -> str:
    """The summary's both-right: forward/reversed pairs both right as `k/n`, from the grid; else the row's rate."""
    grid = question_grid(row)
    both = grid.both if grid else None
    if both is not None:
        return f"{both.right}/{both.pairs}"
    rate = row.accuracy.both_right if row.accuracy else None
    return "–" if rate is None else f"{rate * 100:.0f}%"
