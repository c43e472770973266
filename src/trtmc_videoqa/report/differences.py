"""Whether two rows differ beyond their noise, figure by figure at each load level both were measured at: pure
arithmetic over their result rows (results/differences.py holds the verdicts).

Which rows are compared: one profile read from two artifact folders (`report A B`: A is the first folder that holds
it, B each later one), and a comparison row beside the TRTMC row it names (`compare --profile P`: A is P, B the
comparison). Rows of different workloads are named, never compared: their questions differ.

The tests, and why:
- client p50, task p50 and requests per second: Welch's t interval for the difference of the runs' means, over one
  value per run (each run's median, or its throughput), as TRTMC's aiperf_qual judges a speed difference. A run's
  median is one sample; the requests of one run are not independent samples of the server (they share its warm
  state and the machine's load), so the runs are the unit, and one run a side cannot be judged at all.
- both-right: Fisher's exact test, two-sided, over the questions right both ways of those graded on each side; exact
  as Clopper-Pearson's interval is (no normal approximation, right for a handful of questions), and it needs only
  the counts a level records. Both rows ask the same questions, so a paired test would be sharper, but a level keeps
  no per-question outcome over its runs. Where even every question right on one side and none on the other could
  not reach the confidence level (3 questions a side), the verdict is `cannot be judged`, never a quiet "no clear
  difference".
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..common.intervals import DEFAULT_CONFIDENCE, run_difference
from ..results import LoadLevel, ResultRow
from ..results.differences import (
    ComparedFigure,
    ComparedRow,
    DifferenceVerdict,
    FigureDifference,
    RowDifference,
)

WELCH_MEDIANS = "Welch's t over per-run medians (aiperf_qual's test of a speed difference)"
WELCH_THROUGHPUT = "Welch's t over per-run requests per second"
FISHER = "Fisher's exact test, two-sided, over questions right both ways"
# For each timed figure: its test, and the judgement of a higher B that makes it "slower".
TIMED: dict[ComparedFigure, tuple[str, bool]] = {
    "client_p50_ms": (WELCH_MEDIANS, True),
    "task_p50_ms": (WELCH_MEDIANS, True),
    "requests_per_s": (WELCH_THROUGHPUT, False),
}
NO_LEVELS = "a row written before load levels were recorded has no per-run figures: not compared"
FIGURE_WORDS: dict[ComparedFigure, str] = {
    "client_p50_ms": "client p50",
    "task_p50_ms": "task p50",
    "requests_per_s": "requests/s",
    "both_right": "both right",
}


@dataclass(frozen=True)
class Sourced:
    """A row and the artifact directory it was read from."""

    source: str
    row: ResultRow


def timed_difference(
    figure: ComparedFigure, a: Sequence[float], b: Sequence[float], confidence: float = DEFAULT_CONFIDENCE
) -> FigureDifference:
    """`figure` of B against A over one value per run, by Welch's t; `cannot be judged` with fewer than two a side."""
    test, higher_is_slower = TIMED[figure]
    judged = run_difference(a, b, confidence)
    unjudged = FigureDifference(
        figure=figure,
        a_values=list(a),
        b_values=list(b),
        a_estimate=statistics.fmean(a) if a else None,  # the means are given even where nothing can be judged
        b_estimate=statistics.fmean(b) if b else None,
        confidence=confidence,
        verdict="cannot be judged",
        test=test,
    )
    if judged.interval is None or judged.estimate is None:
        why = (
            f"A has {_runs(len(a))} and B {_runs(len(b))} with this figure: Welch's t needs 2 runs a side or more "
            "(measure both with --num-profile-runs 2 or more); one run's value is no measure of its own noise"
        )
        return unjudged.model_copy(update={"why": why})
    verdict: DifferenceVerdict = "no clear difference"
    if judged.judgement != "no clear difference":
        slower = (judged.judgement == "higher") == higher_is_slower
        verdict = "slower" if slower else "faster"
    why = "the interval holds 0" if verdict == "no clear difference" else "the interval excludes 0"
    return unjudged.model_copy(
        update=dict(
            difference=judged.estimate,
            low=judged.interval.low,
            high=judged.interval.high,
            verdict=verdict,
            why=f"{why} ({len(a)} runs against {len(b)})",
        )
    )


def both_right_difference(
    a_right: int, a_questions: int, b_right: int, b_questions: int, confidence: float = DEFAULT_CONFIDENCE
) -> FigureDifference:
    """Questions right both ways, B against A, by Fisher's exact test; `cannot be judged` where no outcome of this
    size could reach the confidence level."""
    unjudged = FigureDifference(
        figure="both_right",
        a_values=[float(a_right), float(a_questions)],
        b_values=[float(b_right), float(b_questions)],
        confidence=confidence,
        verdict="cannot be judged",
        test=FISHER,
    )
    if a_questions <= 0 or b_questions <= 0:
        return unjudged.model_copy(update={"why": "no graded question on one side"})
    from scipy.stats import fisher_exact  # loaded only where two rows are compared

    alpha = 1.0 - confidence
    a_share, b_share = a_right / a_questions, b_right / b_questions
    shares = dict(a_estimate=a_share, b_estimate=b_share, difference=b_share - a_share)
    best = float(fisher_exact([[a_questions, 0], [0, b_questions]]).pvalue)
    if best >= alpha:
        why = (
            f"{a_questions} questions against {b_questions}: even all right on one side and none on the other gives "
            f"p = {best:.2g}, not below {alpha:.2g}; no count of questions this small can show a difference"
        )
        return unjudged.model_copy(update={**shares, "why": why})
    p = float(fisher_exact([[a_right, a_questions - a_right], [b_right, b_questions - b_right]]).pvalue)
    verdict: DifferenceVerdict = "no clear difference"
    if p < alpha:
        verdict = "more right" if b_share > a_share else "fewer right"
    return unjudged.model_copy(
        update={**shares, "p_value": p, "verdict": verdict, "why": f"p = {p:.2g} against {alpha:.2g}"}
    )


def _runs(n: int) -> str:
    return f"{n} run" + ("" if n == 1 else "s")


def _level_key(level: LoadLevel) -> float:
    return float(level.request_rate if level.request_rate is not None else level.concurrency or 0)


def _per_run(level: LoadLevel, figure: ComparedFigure) -> list[float]:
    values: list[float | None] = []
    for run in level.runs:
        if figure == "client_p50_ms":
            values.append(run.client_latency.p50_ms if run.client_latency else None)
        elif figure == "task_p50_ms":
            values.append(run.server_task_time.p50_ms if run.server_task_time else None)
        else:
            values.append(run.requests_per_s)
    return [v for v in values if v is not None]


def level_differences(a: LoadLevel, b: LoadLevel, confidence: float) -> list[FigureDifference]:
    """Every shared figure of one level, B against A."""
    out = [timed_difference(figure, _per_run(a, figure), _per_run(b, figure), confidence) for figure in TIMED]
    if a.questions is not None and b.questions is not None:
        a_right, b_right = a.questions_both_right or 0, b.questions_both_right or 0
        out.append(both_right_difference(a_right, a.questions, b_right, b.questions, confidence))
    return out


def _side(sourced: Sourced) -> ComparedRow:
    row = sourced.row
    endpoint = row.provenance.endpoint if row.provenance else None
    return ComparedRow(profile=row.profile, source=sourced.source, endpoint=endpoint, status=row.status)


def _workload(row: ResultRow) -> str | None:
    return row.provenance.workload if row.provenance else None


def row_difference(a: Sourced, b: Sourced) -> RowDifference:
    """B against A at each level both were measured at (same axis, same value); the rest named."""
    pair = RowDifference(a=_side(a), b=_side(b), workload=_workload(a.row))
    sa, sb = a.row.sweep, b.row.sweep
    if _workload(a.row) != _workload(b.row):
        said = f"A measured workload {_workload(a.row)} and B {_workload(b.row)}: different questions, not compared"
        return pair.model_copy(update={"not_compared": said})
    if sa is None or sb is None:
        return pair.model_copy(update={"not_compared": NO_LEVELS})
    confidence = sa.confidence if sa.confidence == sb.confidence else DEFAULT_CONFIDENCE
    b_levels = {_level_key(level): level for level in sb.levels} if sa.axis == sb.axis else {}
    figures, unmatched = [], []
    for level in sa.levels:
        other = b_levels.pop(_level_key(level), None)
        if other is None:
            unmatched.append(f"A's {sa.axis} {_level_key(level):g}")
            continue
        for figure in level_differences(level, other, confidence):
            figures.append(figure.model_copy(update={"axis": sa.axis, "level": _level_key(level)}))
    unmatched += [f"B's {sb.axis} {value:g}" for value in b_levels]
    alone = f"measured on one side only: {', '.join(unmatched)}" if unmatched else None
    return pair.model_copy(update={"figures": figures, "not_compared": alone})


def _measured(row: ResultRow) -> bool:
    return row.sweep is not None or row.client_latency is not None


def compared_pairs(rows: Sequence[Sourced]) -> list[tuple[Sourced, Sourced]]:
    """The pairs a report compares: a profile in two folders (A the first), and a comparison row beside its TRTMC
    row (A the TRTMC row); only rows that measured something."""
    by_profile: dict[str, list[Sourced]] = {}
    for sourced in rows:
        if _measured(sourced.row):
            by_profile.setdefault(sourced.row.profile, []).append(sourced)
    pairs = []
    for entries in by_profile.values():
        first = entries[0]
        pairs += [(first, other) for other in entries[1:] if other.source != first.source]
    for sourced in rows:
        compared = sourced.row.comparison.compared_profile if sourced.row.comparison else None
        if compared and _measured(sourced.row):
            pairs += [(trtmc, sourced) for trtmc in by_profile.get(compared, [])]
    return pairs


def report_differences(rows: Sequence[Sourced]) -> list[RowDifference]:
    """Every pair the report compares, B against A."""
    return [row_difference(a, b) for a, b in compared_pairs(rows)]
