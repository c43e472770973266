"""The report's differences (report/differences.py) in words: the pair's heading, per figure its short cells (figure,
level, A, B, B - A with its interval, the verdict, the test) and beneath the table why each verdict is what it is,
rendered as report.md's and report.html's section and as the terminal's lines; each value escaped as its format
escapes it. Table cells stay short (report.md keeps every cell within 80 characters); the whys go below."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..common.text_escape import cut, html_text, md_text, one_line, shown_name
from ..results import ComparedRow, FigureDifference, Report, RowDifference
from .differences import FIGURE_WORDS

HEADER: Final = ("figure", "level", "A", "B", "B − A (interval)", "B against A", "test")
INTRO: Final = (
    "B read against A, each figure at each load level both rows were measured at: faster or slower only where "
    "Welch's t interval for the difference, over one value per run (each run's median, or its requests per "
    "second, as TRTMC's aiperf_qual judges speed), excludes 0; more or fewer right only where Fisher's exact test "
    "over the questions right both ways says so. One run a side cannot be judged."
)
SHORT_TESTS: Final = {
    "client_p50_ms": "Welch's t, run medians",
    "task_p50_ms": "Welch's t, run medians",
    "requests_per_s": "Welch's t, run req/s",
    "both_right": "Fisher's exact",
}


@dataclass(frozen=True)
class FigureCells:
    figure: str
    level: str
    a: str
    b: str
    difference: str
    verdict: str
    test: str

    def cells(self) -> tuple[str, ...]:
        return (self.figure, self.level, self.a, self.b, self.difference, self.verdict, self.test)


def side_text(side: ComparedRow) -> str:
    served = f" at {side.endpoint}" if side.endpoint else ""
    return f"{shown_name(side.profile)}{served} ({side.status}; from {side.source})"


def heading(pair: RowDifference) -> str:
    workload = f" on {pair.workload}" if pair.workload else ""
    return f"A: {side_text(pair.a)} — B: {side_text(pair.b)}{workload}"


def _number(figure: FigureDifference, value: float, unit: bool = True) -> str:
    """A figure's value as shown: milliseconds whole from 10 on, requests per second to 3 significant digits."""
    sign = "−" if value < 0 else ""
    size = abs(value)
    if figure.figure == "requests_per_s":
        return f"{sign}{size:.3g}"
    shown = f"{sign}{size:.0f}" if size >= 10 else f"{sign}{size:.1f}"
    return f"{shown} ms" if unit else shown


def _values(figure: FigureDifference, values: list[float], estimate: float | None) -> str:
    """A side's values in a few words: `k/n` questions, or the runs' mean and how many runs."""
    if figure.figure == "both_right":
        right, questions = (int(v) for v in values)
        return f"{right}/{questions}"
    if not values:
        return "–"
    if len(values) == 1:
        return f"{_number(figure, values[0])}, 1 run"
    mean = estimate if estimate is not None else sum(values) / len(values)
    return f"{_number(figure, mean)} mean, {len(values)} runs"


def run_values(figure: FigureDifference, values: list[float]) -> str:
    """Every run's value, for the page's hover and the lines beneath the table."""
    return ", ".join(_number(figure, v) for v in values) if figure.figure != "both_right" else ""


def _difference(figure: FigureDifference) -> str:
    if figure.difference is None:
        return "–"
    if figure.figure == "both_right":
        p = f"; p = {figure.p_value:.2g}" if figure.p_value is not None else ""
        return f"{figure.difference:+.0%} of questions{p}"
    said = ("+" if figure.difference >= 0 else "") + _number(figure, figure.difference)
    if figure.low is not None and figure.high is not None:
        low, high = _number(figure, figure.low, unit=False), _number(figure, figure.high)
        said += f" ({figure.confidence:.0%}: {low} to {high})"
    return said


def _short(figure: FigureDifference) -> str:
    """The terminal's few words after the verdict: the difference, else what the test had to go on."""
    if figure.figure == "both_right":
        a, b = _values(figure, figure.a_values, None), _values(figure, figure.b_values, None)
        p = f", p = {figure.p_value:.2g}" if figure.p_value is not None else ""
        return f"by Fisher's exact test: {b} against {a}{p}"
    if figure.difference is None:
        return f"by Welch's t: {len(figure.b_values)} run against {len(figure.a_values)}, 2 a side needed"
    return f"by Welch's t: {_difference(figure)}"


def verdict_text(figure: FigureDifference) -> str:
    if figure.verdict in ("no clear difference", "cannot be judged"):
        return figure.verdict
    return f"B {figure.verdict}"


def level_text(figure: FigureDifference) -> str:
    if figure.axis is None or figure.level is None:
        return "–"
    return f"{'concurrency' if figure.axis == 'concurrency' else 'rate'} {figure.level:g}"


def figure_cells(figure: FigureDifference) -> FigureCells:
    return FigureCells(
        figure=FIGURE_WORDS[figure.figure],
        level=level_text(figure),
        a=_values(figure, figure.a_values, figure.a_estimate),
        b=_values(figure, figure.b_values, figure.b_estimate),
        difference=_difference(figure),
        verdict=verdict_text(figure),
        test=SHORT_TESTS[figure.figure],
    )


def why_lines(pair: RowDifference) -> list[str]:
    """Beneath the table: why each verdict is what it is (figures of one level with the same reason on one line),
    and every run's value."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for figure in pair.figures:
        grouped.setdefault((level_text(figure), figure.why), []).append(FIGURE_WORDS[figure.figure])
    out = [f"{', '.join(names)} at {level}: {why}" for (level, why), names in grouped.items() if why]
    for figure in pair.figures:
        if figure.figure != "both_right" and (figure.a_values or figure.b_values):
            a, b = run_values(figure, figure.a_values) or "none", run_values(figure, figure.b_values) or "none"
            out.append(f"{FIGURE_WORDS[figure.figure]} at {level_text(figure)}, run by run: A {a}; B {b}")
    return out


def terminal_lines(differences: list[RowDifference], width: int = 100) -> list[str]:
    """A line per pair and an indented line per figure: its verdict and difference; the report has the rest."""
    out = []
    for pair in differences:
        out.append(cut(f"B {shown_name(pair.b.profile)} against A {shown_name(pair.a.profile)}:", width))
        if pair.not_compared:
            out.append(cut(f"  {one_line(pair.not_compared)}", width))
        for figure in pair.figures:
            cells = figure_cells(figure)
            out.append(cut(f"  {cells.figure} at {cells.level}: {cells.verdict} {_short(figure)}", width))
    return out


def markdown_lines(report: Report) -> list[str]:
    """report.md's section: a heading, what it says, and a table per pair; [] where no rows were compared."""
    if not report.differences:
        return []
    out = ["## Differences between rows", "", md_text(INTRO), ""]
    for pair in report.differences:
        out += [f"**{md_text(heading(pair))}**", ""]
        if pair.not_compared:
            out += [f"- {md_text(pair.not_compared)}", ""]
        if pair.figures:
            out.append("| " + " | ".join(HEADER) + " |")
            out.append("|" + "---|" * len(HEADER))
            out += ["| " + " | ".join(md_text(c) for c in figure_cells(f).cells()) + " |" for f in pair.figures]
            out.append("")
            out += [f"- {md_text(line)}" for line in why_lines(pair)] + [""]
        out += [f"_{md_text(pair.note)}_", ""]
    return out


def html_section(report: Report) -> list[str]:
    """report.html's section, as markdown_lines; [] where no rows were compared."""
    if not report.differences:
        return []
    out = ["<h2>Differences between rows</h2>", f"<p>{html_text(INTRO)}</p>"]
    head = "".join(f"<th>{html_text(title)}</th>" for title in HEADER)
    for pair in report.differences:
        out.append(f"<p><b>{html_text(heading(pair))}</b></p>")  # a p: long paths wrap inside 1,280 px
        if pair.not_compared:
            out.append(f"<p>{html_text(pair.not_compared)}</p>")
        if pair.figures:
            body = "".join(
                "<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in figure_cells(f).cells()) + "</tr>"
                for f in pair.figures
            )
            out.append(f'<table class="differences"><tr>{head}</tr>{body}</table>')
            out.append("<ul>" + "".join(f"<li>{html_text(line)}</li>" for line in why_lines(pair)) + "</ul>")
        out.append(f'<p class="legend">{html_text(pair.note)}</p>')
    return out
