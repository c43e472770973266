"""The row's sweep (results/levels.py) from its AIPerf runs (climb/levels.py): one entry per level, each run's own
figures, and over repeated runs a confidence interval for client p50, task p50 and throughput (Student t over the
runs' values) and for both-right (Clopper-Pearson over the questions); the goodput level and the best level.

Pure arithmetic over what the stages measured: no I/O. The intervals are honest and wide: the workloads are tiny,
and every interval says so (TINY_WORKLOAD_NOTE).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..common.intervals import Interval, binomial_interval, mean_interval
from ..plan.settings import goodput_ms
from ..results import FigureInterval, LatencyStats, LoadLevel, RequestRow, RunFigures, Sweep
from .levels import PASSING, LevelRun
from .stats import latency_stats

if TYPE_CHECKING:
    from ..plan.settings import RunSettings


def sweep_of(runs: Sequence[LevelRun], settings: RunSettings) -> Sweep | None:
    """The sweep over every AIPerf run the row made, levels in the order given; None where it made none."""
    if not runs:
        return None
    objective = goodput_ms(settings.goodput) if settings.goodput else None
    grouped: dict[tuple[int | None, float | None], list[LevelRun]] = {}
    for run in runs:
        grouped.setdefault((run.load.concurrency, run.load.request_rate), []).append(run)
    levels = [_level(group, settings.confidence_level, objective) for group in grouped.values()]
    passing = [level for level in levels if level.passed and level.requests_per_s is not None]
    best = max(passing, key=lambda level: level.requests_per_s or 0.0, default=None)
    met = [_value(level) for level in levels if level.goodput_met]
    return Sweep(
        axis="request_rate" if settings.request_rate else "concurrency",
        runs_per_level=settings.num_profile_runs,
        confidence=settings.confidence_level,
        levels=levels,
        best_level=_value(best) if best is not None else None,
        goodput_objective=settings.goodput,
        goodput_best_level=max(met) if met else None,
    )


def _value(level: LoadLevel) -> float:
    return float(level.request_rate if level.request_rate is not None else level.concurrency or 0)


def run_figures(run: LevelRun, objective_ms: float | None) -> RunFigures:
    """One run's figures, from its stages' own verdicts on it."""
    figures, grade = run.figures, run.grade
    bad = next(((name, s) for name, s in run.stages.items() if s.status not in PASSING), None)
    completed = _completed(run.records)
    within = None
    if objective_ms is not None:
        within = sum(1 for r in completed if (r.client_latency_ms or 0.0) <= objective_ms)
    return RunFigures(
        run=run.load.run,
        label=run.load.label,
        folder=run.load.folder,
        requests=run.load.requests_file,
        requests_per_s=figures.get("requests_per_s"),
        clips_per_s=figures.get("clips_per_s"),
        output_tokens_per_s=figures.get("output_tokens_per_s"),
        client_latency=figures.get("client_latency"),
        server_task_time=figures.get("server_task_time"),
        completed=len(completed),
        errors=sum(1 for r in run.records if r.phase == "profiling" and r.error is not None),
        questions=len(grade.questions) if grade else None,
        questions_both_right=grade.questions_passed if grade else None,
        pairs=sum(q.repeats for q in grade.questions) if grade else None,
        pairs_both_right=sum(q.both_right for q in grade.questions) if grade else None,
        within_objective=within,
        passed=bad is None,
        failed_at=bad[0] if bad else None,
        detail=bad[1].detail if bad else "",
    )


def _level(runs: list[LevelRun], confidence: float, objective_ms: float | None) -> LoadLevel:
    figures = [run_figures(run, objective_ms) for run in runs]
    completed = [r for run in runs for r in _completed(run.records)]
    grades = [run.grade for run in runs if run.grade is not None]
    questions = len(grades[0].questions) if grades else None
    right = None
    if grades:  # a question counts right only when it is right both ways in every repeat of every run
        right = sum(1 for i in range(len(grades[0].questions)) if all(g.questions[i].passed for g in grades))
    pairs, pairs_right = sum(f.pairs or 0 for f in figures), sum(f.pairs_both_right or 0 for f in figures)
    bad = next((f for f in figures if not f.passed), None)
    planned = sum(len(run.plan.profiling) for run in runs)
    return LoadLevel(
        concurrency=runs[0].load.concurrency,
        request_rate=runs[0].load.request_rate,
        runs=figures,
        requests_per_s=_mean([f.requests_per_s for f in figures]),
        clips_per_s=_mean([f.clips_per_s for f in figures]),
        output_tokens_per_s=_mean([f.output_tokens_per_s for f in figures]),
        client_latency=latency_stats([r.client_latency_ms for r in completed if r.client_latency_ms is not None]),
        server_task_time=latency_stats([r.server_task_ms for r in completed if r.server_task_ms is not None]),
        ttft=_streamed([r.ttft_ms for r in completed]),
        itl=_streamed([r.itl_ms for r in completed]),
        completed=len(completed),
        errors=sum(f.errors for f in figures),
        intervals=_intervals(figures, confidence) if len(runs) > 1 else {},
        questions=questions,
        questions_both_right=right,
        both_right_interval=_shown(binomial_interval(right, questions, confidence))
        if len(runs) > 1 and questions and right is not None
        else None,
        repeat_pairs=f"{pairs_right}/{pairs}" if pairs else None,
        goodput_met=None if objective_ms is None else sum(f.within_objective or 0 for f in figures) == planned,
        passed=bad is None,
        failed_at=bad.failed_at if bad else None,
        detail=f"{bad.label}: {bad.detail}" if bad else "",
    )


def _intervals(figures: list[RunFigures], confidence: float) -> dict[str, FigureInterval]:
    """Over the runs' own values: client p50, task p50 and requests per second, where two runs have one."""
    values = {
        "client_p50_ms": [_p50(f.client_latency) for f in figures],
        "task_p50_ms": [_p50(f.server_task_time) for f in figures],
        "requests_per_s": [f.requests_per_s for f in figures],
    }
    found = {name: mean_interval([v for v in vs if v is not None], confidence) for name, vs in values.items()}
    return {name: _shown(interval) for name, interval in found.items() if interval is not None}


def _shown(interval: Interval) -> FigureInterval:
    return FigureInterval(
        mean=round(interval.center, 4),
        low=round(interval.low, 4),
        high=round(interval.high, 4),
        n=interval.n,
        confidence=interval.confidence,
        method=interval.method,
    )


def _streamed(values: list[float | None]) -> LatencyStats | None:
    """Figures over the values a streamed answer gave; None where no request streamed (an unstreamed level)."""
    present = [v for v in values if v is not None]
    return latency_stats(present) if present else None


def _p50(stats: LatencyStats | None) -> float | None:
    return stats.p50_ms if stats is not None else None


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 3) if present else None


def _completed(records: list[RequestRow]) -> list[RequestRow]:
    return [r for r in records if r.phase == "profiling" and r.error is None]
