"""Whether two rows measured on one workload differ beyond their runs' noise: one verdict per shared figure and load
level, with the test that gave it (docs/throughput.md, "Differences that are real").

A report sets these for each pair of rows it can compare: one profile measured in two artifact folders (`report A
B`), or a comparison row beside the TRTMC row it names (`compare`). B is always read against A.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import _Model
from .levels import TINY_WORKLOAD_NOTE, LoadAxis

ComparedFigure = Literal["client_p50_ms", "task_p50_ms", "requests_per_s", "both_right"]
# B against A. Timing and throughput: faster or slower; both-right: more or fewer right. "cannot be judged" when the
# test cannot decide at all with what was measured (one run a side; too few questions for any outcome to count).
DifferenceVerdict = Literal["faster", "slower", "more right", "fewer right", "no clear difference", "cannot be judged"]


class ComparedRow(_Model):
    """One side of a pair: which row, from which artifact folder."""

    profile: str
    source: str = Field(description="the artifact directory the row was read from")
    endpoint: str | None = Field(default=None, description="the server it measured (provenance)")
    status: str


class FigureDifference(_Model):
    """One figure at one load level, B against A."""

    figure: ComparedFigure
    axis: LoadAxis | None = Field(default=None, description="None: a row written before load levels were recorded")
    level: float | None = Field(default=None, description="the concurrency or request rate both rows were measured at")
    a_values: list[float] = Field(
        description="A's values the test used: one per run (timing, throughput), or [right, questions] (both-right)"
    )
    b_values: list[float] = Field(description="B's, as a_values")
    a_estimate: float | None = Field(default=None, description="the runs' mean, or the share of questions right")
    b_estimate: float | None = None
    difference: float | None = Field(default=None, description="B - A, where it can be judged")
    low: float | None = Field(default=None, description="the difference's interval (Welch's t), B - A")
    high: float | None = None
    p_value: float | None = Field(default=None, description="Fisher's exact test, two-sided (both-right)")
    confidence: float
    verdict: DifferenceVerdict
    test: str = Field(description="the test that gave the verdict, in words")
    why: str = Field(default="", description="why it cannot be judged, or what the verdict rests on")


class RowDifference(_Model):
    """Two rows of one workload, figure by figure at each level both were measured at."""

    a: ComparedRow
    b: ComparedRow
    workload: str | None = None
    figures: list[FigureDifference] = Field(default_factory=list)
    not_compared: str | None = Field(
        default=None,
        description="what was not compared, and why: levels only one row was measured at, or the whole pair (other "
        "workloads, a row without load levels)",
    )
    note: str = TINY_WORKLOAD_NOTE
