"""Steady-state figures from per-request records: pure functions, no I/O."""

from __future__ import annotations

import math
from statistics import fmean

from ..results import LatencyStats

PERCENTILES = {"p50_ms": 0.50, "p90_ms": 0.90, "p99_ms": 0.99}


def min_samples(quantile: float) -> int:
    """Samples needed before a percentile means something: at least one sample above it (p90: 10, p99: 100)."""
    return math.ceil(1 / (1 - quantile) - 1e-9)


def percentile(sorted_values: list[float], quantile: float) -> float:
    """Linear interpolation between closest ranks."""
    position = (len(sorted_values) - 1) * quantile
    low, high = math.floor(position), math.ceil(position)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def latency_stats(values: list[float]) -> LatencyStats:
    ordered = sorted(values)
    if not ordered:
        return LatencyStats(count=0)
    figures = {
        name: round(percentile(ordered, q), 3) for name, q in PERCENTILES.items() if len(ordered) >= min_samples(q)
    }
    return LatencyStats(
        count=len(ordered),
        mean_ms=round(fmean(ordered), 3),
        min_ms=round(ordered[0], 3),
        max_ms=round(ordered[-1], 3),
        **figures,
    )


def requests_per_second(intervals_ns: list[tuple[int, int]]) -> float | None:
    """Completed requests over the span from the first start to the last end (the profiling window)."""
    if not intervals_ns:
        return None
    span = max(end for _, end in intervals_ns) - min(start for start, _ in intervals_ns)
    return round(len(intervals_ns) / (span / 1e9), 3) if span > 0 else None
