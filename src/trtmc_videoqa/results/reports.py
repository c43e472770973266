"""The report over result rows: the group line and verdict, the rows, what could not be read, and the attempts a
stop signal ended over an earlier row."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from .base import _Model
from .differences import RowDifference
from .layout import schema_file
from .rows import AiperfQualVerdict, Interruption, ResultRow

REPORT_SCHEMA: Final = "trtmc-videoqa.report/v1"


class InterruptedAttempt(_Model):
    """An attempt a stop signal ended over an earlier row, which it left whole: the earlier row stays the row, and
    this record (checkpoints/.interrupted.<row>.json) names the attempt in the report."""

    schema_version: Literal["trtmc-videoqa.interrupted-attempt/v1"] = "trtmc-videoqa.interrupted-attempt/v1"
    profile: str
    interruption: Interruption
    status_reason: str = Field(description="what the attempt had reached, in words")
    profiling_requests_planned: int = 0
    profiling_requests_completed: int = 0
    kept: str | None = Field(
        default=None, description="where the attempt's own folder was kept, relative to --out (private, raw)"
    )


# The group's status, one line at the top of every report; a run without TRTMC rows says what it is instead.
GroupStatus = Literal["blocked", "failed", "qualified", "reference-self-test", "endpoint", "comparison"]


class GroupLine(_Model):
    status: GroupStatus
    line: str


class GroupVerdict(_Model):
    """The group's verdict in aiperf_qual's words: the worst of the judged rows, by aiperf_qual's severity order."""

    verdict: AiperfQualVerdict | None = Field(description="None: no row to judge")
    scope: str = Field(description="which rows were judged")
    rows: dict[str, list[str]] = Field(default_factory=dict, description="every row's profile by verdict, worst first")


class UnreadableRow(_Model):
    """A checkpoints/*/result.json a report could not read: named, with why, while the rest is reported."""

    path: str = Field(description="relative to the artifact directory it was found in")
    source: str = Field(description="the artifact directory")
    error: str


class Report(_Model):
    schema_version: Literal["trtmc-videoqa.report/v1"] = REPORT_SCHEMA
    title: str
    generated_by: str
    sources: list[str] = Field(description="artifact directories the report was built from")
    reference_self_test: bool
    group: GroupLine
    aiperf_qual: GroupVerdict | None = Field(default=None, description="the group in TRTMC aiperf_qual's verdicts")
    rows: list[ResultRow]
    counts: dict[str, int] = Field(description="every row by status")
    models: dict[str, int] = Field(
        default_factory=dict, description="normal profiles (one per checkpoint@revision) by status"
    )
    variants: dict[str, int] = Field(default_factory=dict, description="variant rows by status, never models")
    unreadable: list[UnreadableRow] = Field(default_factory=list, description="result files that could not be read")
    interrupted_attempts: list[InterruptedAttempt] = Field(
        default_factory=list, description="attempts a stop signal ended over an earlier row, which stands"
    )
    differences: list[RowDifference] = Field(
        default_factory=list,
        description="rows compared, B against A: one profile in two artifact folders, or a comparison row beside the "
        "TRTMC row it names; per figure and level, whether they differ beyond their runs' noise (docs/throughput.md)",
    )
    values_made_public: int = Field(
        default=0,
        description="values that named this machine (a path, a host) replaced by their placeholder before the report "
        "was rendered, so no renderer's escaping can hide one from the public check",
    )


def json_schemas() -> dict[str, dict[str, Any]]:
    """The committed JSON Schemas, by file name (tests check the committed copies are current)."""
    from .inventory import Inventory  # the audit's schemas, loaded only where they are written

    return {
        schema_file("inventory"): Inventory.model_json_schema(),
        schema_file("result"): ResultRow.model_json_schema(),
        schema_file("report"): Report.model_json_schema(),
    }
