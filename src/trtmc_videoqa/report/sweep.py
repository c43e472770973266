"""What report.md and report.html both say about a row's sweep, as plain text cells: a line per load level (its
throughput, its client and task latency, its errors and answers) with each interval beside the figure it qualifies
and the size of the workload beside every interval. Each format escapes and marks the cells up its own way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ..results import FigureInterval, LatencyStats, LoadLevel, ResultRow, Sweep
from .curve import level_label
from .details import ms, pct

INTERVALS_NOTE: Final = (
    "An interval (CI) is Student t over each run's own value of the figure (its p50, its requests per second); the "
    "figure beside it is over every run's requests together. Both right: Clopper-Pearson over the questions; repeat "
    "pairs are a count, since repeats of one question are not independent."
)


@dataclass(frozen=True)
class SweepTable:
    """The header and a line of cells per level, every cell plain text; the notes said beneath it."""

    header: tuple[str, ...]
    lines: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...]


def shows_sweep(row: ResultRow) -> bool:
    """A row measured at two levels or more, or with repeated runs: the one-level single-run row's figures are
    already its own."""
    sweep = row.sweep
    return sweep is not None and bool(sweep.levels) and (len(sweep.levels) > 1 or sweep.runs_per_level > 1)


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _tiny(level: LoadLevel) -> str:
    return f"{level.questions} questions: a tiny workload" if level.questions else "a tiny workload"


def with_interval(
    shown: str, interval: FigureInterval | None, level: LoadLevel, form: Callable[[float], str] = ms
) -> str:
    """'61.2 (95% CI 58.0–64.4, 3 runs; 3 questions: a tiny workload)'; the figure alone without an interval. An
    interval over the questions (both right) names no runs: the questions are its count."""
    if interval is None:
        return shown
    runs = "" if interval.method.startswith("Clopper") else f"{interval.n} runs; "
    bounds = f"{form(interval.low)}–{form(interval.high)}"
    return f"{shown} ({interval.confidence * 100:g}% CI {bounds}, {runs}{_tiny(level)})"


def _p(stats: LatencyStats | None, name: str) -> float | None:
    return getattr(stats, f"{name}_ms") if stats is not None else None


def _both_right(level: LoadLevel) -> str:
    if level.questions is None or level.questions_both_right is None:
        return "–"
    shown = with_interval(f"{level.questions_both_right}/{level.questions}", level.both_right_interval, level, pct)
    return shown + (f"; pairs {level.repeat_pairs}" if level.repeat_pairs else "")


def _outcome(level: LoadLevel) -> str:
    return "passed" if level.passed else f"failed at {level.failed_at or 'a stage'}"


def _goodput(level: LoadLevel) -> str:
    within = sum(run.within_objective or 0 for run in level.runs)
    met = "met" if level.goodput_met else "not met"
    return f"{met} ({within} of {level.completed + level.errors} within)"


def _streamed(sweep: Sweep) -> bool:
    return any(level.ttft is not None and level.ttft.count for level in sweep.levels)


def _cells(level: LoadLevel, streamed: bool, goodput: bool) -> tuple[str, ...]:
    c, t, i = level.client_latency, level.server_task_time, level.intervals
    cells = [
        level_label(level),
        with_interval(_number(level.requests_per_s), i.get("requests_per_s"), level, _number),
        _number(level.clips_per_s),
        _number(level.output_tokens_per_s),
        with_interval(ms(_p(c, "p50")), i.get("client_p50_ms"), level),
        ms(_p(c, "p90")),
        ms(_p(c, "p99")),
        with_interval(ms(_p(t, "p50")), i.get("task_p50_ms"), level),
    ]
    if streamed:
        cells += [ms(_p(level.ttft, "p50")), ms(_p(level.itl, "p50"))]
    cells += [str(level.errors), _both_right(level)]
    if goodput:
        cells.append(_goodput(level))
    return (*cells, _outcome(level))


def sweep_table(row: ResultRow) -> SweepTable | None:
    """The row's levels as a table, with the notes said beneath it; None for a row with no sweep to show."""
    sweep = row.sweep
    if sweep is None or not shows_sweep(row):
        return None
    streamed, goodput = _streamed(sweep), sweep.goodput_objective is not None
    header = ["level", "req/s", "clips/s", "output tok/s", "client p50 ms", "p90", "p99", "task p50 ms"]
    if streamed:
        header += ["TTFT p50 ms", "ITL p50 ms"]
    header += ["errors", "both right"]
    if goodput:
        header.append(f"goodput {sweep.goodput_objective}")
    header.append("outcome")
    axis = "concurrency (cN: N in flight)" if sweep.axis == "concurrency" else "request rate (N/s: N sent a second)"
    notes = [f"Levels by {axis}, {sweep.runs_per_level} run(s) each, in the order measured."]
    if sweep.best_level is not None:
        best = next(level for level in sweep.levels if _value(level) == sweep.best_level)
        notes.append(f"Best level (the passing one with the most requests per second): {level_label(best)}.")
    if goodput:
        met = sweep.goodput_best_level
        notes.append(f"Goodput {sweep.goodput_objective}: highest level met: {'none' if met is None else f'{met:g}'}.")
    if sweep.runs_per_level > 1:
        notes.append(INTERVALS_NOTE)
    notes.append(f"Note: {sweep.note}.")
    lines = tuple(_cells(level, streamed, goodput) for level in sweep.levels)
    return SweepTable(tuple(header), lines, tuple(notes))


def _value(level: LoadLevel) -> float:
    return float(level.request_rate if level.request_rate is not None else level.concurrency or 0)
