"""Steady-state figures from per-request records: pure functions, no I/O.

No value crashes them (issue 26): a value that is not a finite number (NaN, infinity) is left out, since it has no
place in an order; sums and interpolations are computed so that no intermediate overflows, so 1e308 and -1e308
are figures like any other. The join (climb/join.py) already keeps a server's invalid task times out of the
figures; this is the floor under it.
"""

from __future__ import annotations

import math

from ..results import LatencyStats

PERCENTILES = {"p50_ms": 0.50, "p90_ms": 0.90, "p99_ms": 0.99}


def min_samples(quantile: float) -> int:
    """Samples needed before a percentile means something: at least one sample above it (p90: 10, p99: 100)."""
    return math.ceil(1 / (1 - quantile) - 1e-9)


def percentile(sorted_values: list[float], quantile: float) -> float:
    """Linear interpolation between closest ranks; between two values far apart (-1e308 and 1e308) as a weighted
    mean of the two, which stays between them where their difference would overflow."""
    position = (len(sorted_values) - 1) * quantile
    low, high = math.floor(position), math.ceil(position)
    below, above = sorted_values[low], sorted_values[high]
    share = position - low
    value = below + (above - below) * share
    return value if math.isfinite(value) else below * (1 - share) + above * share


def mean(values: list[float]) -> float:
    """The mean of finite values, without an intermediate overflow: where the sum leaves a float's range, each value
    is halved and divided before the sum (halving and doubling are exact), the result kept between the extremes."""
    try:
        return math.fsum(values) / len(values)  # as statistics.fmean
    except OverflowError:
        scaled = math.fsum(value / (2 * len(values)) for value in values) * 2
        return min(max(scaled, min(values)), max(values))


def finite(values: list[float]) -> list[float]:
    """The values that are finite numbers (an int past a float's range, NaN and infinity are left out)."""
    kept = []
    for value in values:
        try:
            number = float(value)
        except (OverflowError, TypeError, ValueError):
            continue
        if math.isfinite(number):
            kept.append(number)
    return kept


def latency_stats(values: list[float]) -> LatencyStats:
    ordered = sorted(finite(values))
    if not ordered:
        return LatencyStats(count=0)
    figures = {
        name: round(percentile(ordered, q), 3) for name, q in PERCENTILES.items() if len(ordered) >= min_samples(q)
    }
    return LatencyStats(
        count=len(ordered),
        mean_ms=round(mean(ordered), 3),
        min_ms=round(ordered[0], 3),
        max_ms=round(ordered[-1], 3),
        **figures,
    )


def requests_per_second(intervals_ns: list[tuple[int, int]]) -> float | None:
    """Completed requests over the span from the first start to the last end (the profiling window)."""
    if not intervals_ns:
        return None
    span = max(end for _, end in intervals_ns) - min(start for start, _ in intervals_ns)
    if span <= 0:
        return None
    try:
        rate = len(intervals_ns) / (span / 1e9)
    except OverflowError:  # a span past a float's range: timestamps no clock gives
        return None
    return round(rate, 3)
