"""The intervals repeated runs are judged by, against values worked out by hand or published."""

from __future__ import annotations

import math

import pytest

from trtmc_videoqa.common.intervals import binomial_interval, mean_interval, run_difference


def test_the_t_interval_of_a_mean_matches_the_textbook() -> None:
    interval = mean_interval([10.0, 12.0, 14.0])  # mean 12, sd 2, n 3: t(0.975, 2) = 4.302653
    assert interval is not None and interval.n == 3
    assert math.isclose(interval.center, 12.0)
    assert math.isclose(interval.high - 12.0, 4.302653 * 2 / math.sqrt(3), rel_tol=1e-6)
    assert mean_interval([5.0]) is None and mean_interval([5.0, float("nan")]) is None
    with pytest.raises(ValueError, match="between 0 and 1"):
        mean_interval([1.0, 2.0], confidence=1.0)


def test_clopper_pearson_matches_its_published_values() -> None:
    # 0 of 10: [0, 1 - 0.025**(1/10)]; 10 of 10 mirrors it; 5 of 10: [0.187086, 0.812914]
    none = binomial_interval(0, 10)
    assert none.low == 0.0 and math.isclose(none.high, 1 - 0.025 ** (1 / 10), rel_tol=1e-9)
    every = binomial_interval(10, 10)
    assert every.high == 1.0 and math.isclose(every.low, 0.025 ** (1 / 10), rel_tol=1e-9)
    half = binomial_interval(5, 10)
    assert math.isclose(half.low, 0.187086, abs_tol=1e-6) and math.isclose(half.high, 0.812914, abs_tol=1e-6)
    four = binomial_interval(4, 4)  # a workload of four questions, all right: still wide
    assert four.low < 0.5 and four.high == 1.0
    with pytest.raises(ValueError):
        binomial_interval(3, 2)


def test_welch_says_a_difference_only_beyond_its_interval() -> None:
    slow, fast = [100.0, 102.0, 98.0, 101.0, 99.0], [80.0, 81.0, 79.0, 82.0, 78.0]
    assert run_difference(slow, fast).judgement == "lower"
    assert run_difference(fast, slow).judgement == "higher"
    noisy = run_difference([100.0, 60.0, 140.0], [95.0, 130.0, 70.0])
    assert noisy.judgement == "no clear difference" and noisy.interval is not None
    assert noisy.interval.low < 0 < noisy.interval.high
    one = run_difference([100.0], fast)
    assert one.judgement == "cannot be judged" and one.interval is None and one.estimate is None
    exact = run_difference([5.0, 5.0], [4.0, 4.0])
    assert exact.judgement == "lower" and exact.interval is not None and exact.interval.low == -1.0
    # Welch's df for these (textbook example): n 3 and 3, variances 4 and 16 -> df = 2.941
    diff = run_difference([10.0, 12.0, 14.0], [16.0, 20.0, 24.0])
    assert diff.interval is not None and math.isclose(diff.estimate or 0, 8.0)
