"""Intervals over repeated measurements, and whether two sets of runs differ beyond them: pure arithmetic over the
figures (scipy's distributions for the quantiles, loaded on first use), nothing of the domain.

- `mean_interval`: Student's t interval for the mean of a figure measured once per run (2 runs at least).
- `binomial_interval`: Clopper-Pearson's exact interval for a proportion (questions right of those asked).
- `run_difference`: Welch's t interval for the difference of two means with unequal variances, the test TRTMC's
  aiperf_qual judges a speed difference with; the verdict is `lower` or `higher` only when the interval excludes 0,
  `no clear difference` when it holds 0, and `cannot be judged` with fewer than 2 runs on either side.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

DEFAULT_CONFIDENCE = 0.95
Judgement = Literal["lower", "higher", "no clear difference", "cannot be judged"]


@dataclass(frozen=True)
class Interval:
    center: float
    low: float
    high: float
    n: int
    confidence: float
    method: str


@dataclass(frozen=True)
class Difference:
    """`b - a` over their runs: the estimate, its interval (None when it cannot be judged), and the judgement."""

    estimate: float | None
    interval: Interval | None
    judgement: Judgement
    method: str


def _checked(confidence: float) -> float:
    if not 0.0 < confidence < 1.0 or math.isnan(confidence):
        raise ValueError(f"a confidence level is between 0 and 1, exclusive; got {confidence}")
    return confidence


def _t_quantile(confidence: float, df: float) -> float:
    from scipy.stats import t  # about 0.2 s to import: only a run with repeated measurements pays it

    return float(t.ppf(0.5 + confidence / 2, df))


def mean_interval(values: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> Interval | None:
    """The t interval for the mean of `values` (finite ones); None with fewer than two."""
    finite = [float(v) for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return None
    mean = statistics.fmean(finite)
    half = _t_quantile(_checked(confidence), len(finite) - 1) * statistics.stdev(finite) / math.sqrt(len(finite))
    return Interval(mean, mean - half, mean + half, len(finite), confidence, "Student t over run values")


def binomial_interval(successes: int, trials: int, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """Clopper-Pearson: the exact two-sided interval for `successes` of `trials`, from the beta distribution."""
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0; got {successes} of {trials}")
    from scipy.stats import beta

    alpha = 1.0 - _checked(confidence)
    low = 0.0 if successes == 0 else float(beta.ppf(alpha / 2, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    return Interval(successes / trials, low, high, trials, confidence, "Clopper-Pearson exact")


def run_difference(a: Sequence[float], b: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> Difference:
    """Whether the runs of `b` have a lower or higher mean than those of `a`, beyond Welch's t interval for the
    difference of means (b - a); each side needs two runs at least, else it cannot be judged."""
    method = "Welch t interval over run values"
    xs, ys = [float(v) for v in a if math.isfinite(v)], [float(v) for v in b if math.isfinite(v)]
    if len(xs) < 2 or len(ys) < 2:
        return Difference(None, None, "cannot be judged", method)
    estimate = statistics.fmean(ys) - statistics.fmean(xs)
    va, vb = statistics.variance(xs) / len(xs), statistics.variance(ys) / len(ys)
    if va + vb == 0.0:  # every run alike on both sides: the difference is exact
        interval = Interval(estimate, estimate, estimate, len(xs) + len(ys), _checked(confidence), method)
    else:
        df = (va + vb) ** 2 / (va**2 / (len(xs) - 1) + vb**2 / (len(ys) - 1))  # Welch-Satterthwaite
        half = _t_quantile(_checked(confidence), df) * math.sqrt(va + vb)
        interval = Interval(estimate, estimate - half, estimate + half, len(xs) + len(ys), confidence, method)
    if interval.low > 0:
        judgement: Judgement = "higher"
    elif interval.high < 0:
        judgement = "lower"
    else:
        judgement = "no clear difference"
    return Difference(estimate, interval, judgement, method)
