"""The self-test's plan, as data (self_test_plan.json): which server it runs, whether its native route is checked,
its workloads, and the one no-answer each row may give.

The reference endpoint (a test double) really answers the synthetic clips; on a real clip it cannot tell, and says
so. That expectation belongs to this plan, never to the workload: the same "cannot tell" from any other server, or
on any other run, fails the output check.
"""

from __future__ import annotations

import functools
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, field_validator

PLAN_FILE = "self_test_plan.json"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DeclaredNoAnswer(_Model):
    """An answer that gives no option yet passes the output check, on this row only, and why."""

    phrase: str = Field(min_length=1, description="found in the answer after whitespace and case normalisation")
    why: str


class SelfTestRow(_Model):
    workload: str = Field(description="a built-in workload name")
    declared_no_answer: DeclaredNoAnswer | None


class SelfTestPlan(_Model):
    server: str = Field(description="what serves the self-test, in words (recorded as the row's server identity)")
    native_route: bool = Field(description="whether native/HTTP identity is checked against the server's own route")
    rows: list[SelfTestRow] = Field(min_length=1)

    @field_validator("rows")
    @classmethod
    def _one_row_per_workload(cls, rows: list[SelfTestRow]) -> list[SelfTestRow]:
        names = [row.workload for row in rows]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"workloads listed more than once: {twice}")
        return rows

    def workloads(self) -> list[str]:
        return [row.workload for row in self.rows]

    def declared_for(self, workload: str) -> DeclaredNoAnswer | None:
        """The no-answer the plan declares for this workload's row; None for a row without one, or no such row."""
        return next((row.declared_no_answer for row in self.rows if row.workload == workload), None)


def plan_text() -> str:
    """The packaged plan file, as text."""
    return resources.files(__package__ or "trtmc_videoqa.plan").joinpath(PLAN_FILE).read_text(encoding="utf-8")


@functools.cache
def load_self_test_plan() -> SelfTestPlan:
    """The packaged self-test plan, checked (an unknown key or a missing one is a ValidationError)."""
    return SelfTestPlan.model_validate_json(plan_text())
