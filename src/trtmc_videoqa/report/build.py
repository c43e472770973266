"""Collect result rows from one or more artifact directories and write every report format."""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from .. import __version__
from ..aiperf_qual.verdicts import with_verdict
from ..common.atomic_write import open_for_appending, write_text_atomic
from ..common.errors import UserError
from ..common.safe_names import safe_name
from ..common.safe_read import MAX_RESULT_BYTES, MAX_STRIP_BYTES, read_file_inside
from ..common.scrub import with_strings
from ..common.text_escape import json_inert
from ..results import InterruptedAttempt, Report, ResultRow, UnreadableRow
from ..results.layout import (
    AIPERF_OUTCOME,
    CHECKPOINTS_DIR,
    FRAME_STRIP,
    INTERRUPTED_ATTEMPT_GLOB,
    INVENTORY_FILE,
    JUNIT_FILE,
    REPORT_HTML,
    REPORT_JSON,
    REPORT_MD,
    REQUESTS_FILE,
    RESULT_FILE,
    workload_dir,
)
from .differences import Sourced, report_differences
from .group import aiperf_qual_group, group_line
from .html import render_html
from .junit import render_junit
from .markdown import render_markdown, render_step_summary

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


class ReportInputError(UserError):
    """An artifact directory without results, or a result file that does not parse."""


# A row that claims one of these was measured: its folder must hold what the measurement left.
MEASURED = ("aiperf-qualified", "endpoint-qualified")
EVIDENCE = (AIPERF_OUTCOME, REQUESTS_FILE)


def load_rows(directory: Path) -> tuple[list[ResultRow], list[UnreadableRow]]:
    """The rows of one artifact directory, each checked against its own folder, and the result files that could
    not be read (named with the parse error; one foreign or damaged file never hides the others)."""
    results = sorted((directory / CHECKPOINTS_DIR).glob(f"*/{RESULT_FILE}"))
    if not results:
        raise ReportInputError(
            f"{directory} holds no checkpoints/*/result.json; pass the --out directory of a `trtmc-videoqa qualify` run"
        )
    rows, unreadable = [], []
    for path in results:
        try:
            row = ResultRow.model_validate_json(read_file_inside(directory, path, MAX_RESULT_BYTES))
        except (ValueError, OSError, UserError) as error:
            first = _first_problem(error)
            unreadable.append(
                UnreadableRow(path=path.relative_to(directory).as_posix(), source=str(directory), error=first)
            )
            continue
        rows.append(with_verdict(_verified(row, path.parent)))
    return rows, unreadable


def _first_problem(error: Exception) -> str:
    """One line for why a result file could not be read: a schema error names its field (a number that is not finite
    is one: `requests.3.client_latency_ms: Input should be a finite number`)."""
    if isinstance(error, ValidationError) and error.errors():
        first = error.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "the file"
        return f"{where}: {first['msg']}"
    return (str(error).splitlines() or [type(error).__name__])[0]


def _verified(row: ResultRow, row_dir: Path) -> ResultRow:
    """The row as it claims itself, unless it claims a measured status whose evidence its folder lacks: then it
    is `unverified` (a hand-edited or half-copied row is never reported qualified)."""
    if row.status not in MEASURED:
        return row
    missing = [name for name in EVIDENCE if not (row_dir / name).is_file()]
    if not row.requests:
        missing.append("requests in result.json")
    if not missing:
        return row
    return row.model_copy(
        update=dict(
            status="unverified",
            status_reason=(
                f"claims {row.status} but its folder shows no evidence for it (missing: {', '.join(missing)}); "
                "re-run the qualification for this checkpoint"
            ),
        )
    )


def load_interrupted_attempts(directory: Path) -> tuple[list[InterruptedAttempt], list[UnreadableRow]]:
    """The records of attempts a stop signal ended over an earlier row (checkpoints/.interrupted.<row>.json), each
    beside the row it left whole; one that cannot be read is named, as a result file would be."""
    attempts, unreadable = [], []
    for path in sorted((directory / CHECKPOINTS_DIR).glob(INTERRUPTED_ATTEMPT_GLOB)):
        try:
            attempts.append(InterruptedAttempt.model_validate_json(read_file_inside(directory, path, MAX_RESULT_BYTES)))
        except (ValueError, OSError, UserError) as error:
            where = path.relative_to(directory).as_posix()
            unreadable.append(UnreadableRow(path=where, source=str(directory), error=_first_problem(error)))
    return attempts, unreadable


def build_report(directories: list[Path], title: str | None = None) -> Report:
    rows: list[ResultRow] = []
    unreadable: list[UnreadableRow] = []
    attempts: list[InterruptedAttempt] = []
    sourced: list[Sourced] = []  # each row with its folder, in the order given: A before B
    for directory in directories:
        found, damaged = load_rows(directory)
        rows.extend(found)
        sourced += [Sourced(str(directory), row) for row in found]
        unreadable.extend(damaged)
        kept, damaged = load_interrupted_attempts(directory)
        attempts.extend(kept)
        unreadable.extend(damaged)
    # Rows of several runs stand side by side: one profile on two servers stays two rows.
    rows.sort(key=lambda row: (row.profile, row.provenance.endpoint if row.provenance else ""))
    self_test = bool(rows) and all(row.reference_self_test for row in rows)
    default = (
        "trtmc-videoqa reference self-test (test double, not a TRTMC model)"
        if self_test
        else "trtmc-videoqa qualification"
    )
    return Report(
        title=title or default,
        generated_by=f"trtmc-videoqa {__version__}",
        sources=[str(d) for d in directories],
        reference_self_test=self_test,
        group=group_line(rows, _inventory_group_line(directories)),
        aiperf_qual=aiperf_qual_group(rows),
        rows=rows,
        counts=_by_status(rows),
        models=_by_status([row for row in rows if row.normal_profile is True]),
        variants=_by_status([row for row in rows if row.normal_profile is False]),
        unreadable=unreadable,
        interrupted_attempts=attempts,
        differences=report_differences(sourced),
    )


def _inventory_group_line(directories: list[Path]) -> str | None:
    """The group line of the run's inventory.json (qualify writes it beside the rows), when exactly one run has one;
    an inventory that cannot be read adds nothing (the rows stand on their own)."""
    lines = set()
    if not any((directory / INVENTORY_FILE).exists() for directory in directories):
        return None  # an endpoint run's: the inventory's schemas stay unloaded
    from ..results.inventory import MAX_INVENTORY_BYTES, Inventory

    for directory in directories:
        path = directory / INVENTORY_FILE
        if not path.exists():
            continue
        try:
            lines.add(Inventory.model_validate_json(read_file_inside(directory, path, MAX_INVENTORY_BYTES)).group_line)
        except (OSError, ValueError, UserError):
            continue
    return lines.pop() if len(lines) == 1 else None


def _by_status(rows: list[ResultRow]) -> dict[str, int]:
    return dict(sorted(Counter(row.status for row in rows).items()))


def frame_strip(report: Report, directories: list[Path]) -> Path | None:
    """The strip the report shows: that of the first row's workload (rows in report order), from the first
    directory that has it, so `qualify` and a later `report` over the same artifacts show the same frames. Only a
    workload named as one path component names one, and only a regular file inside its directory (not a link, no
    folder on the way leading out) of at most MAX_STRIP_BYTES is one: the report embeds it whole. Returned
    resolved, for `render_html` to read without following a link."""
    workloads = [row.provenance.workload for row in report.rows if row.provenance is not None]
    for workload in dict.fromkeys(name for name in workloads if safe_name(name)):
        for directory in directories:
            strip = workload_dir(directory, workload) / FRAME_STRIP
            if _strip_inside(directory, strip):
                return strip.resolve()
    return None


def _strip_inside(directory: Path, strip: Path) -> bool:
    try:
        info = strip.lstat()
    except OSError:
        return False
    inside = strip.resolve().is_relative_to(directory.resolve())
    return inside and stat.S_ISREG(info.st_mode) and info.st_size <= MAX_STRIP_BYTES


def write_report(
    report: Report, out: Path, frames_png: Path | None = None, public: Callable[[str], str] | None = None
) -> list[Path]:
    """Every format of `report` under `out`; with `public` (the run's public rewrite), each value is made public
    first, so what a format escapes (`&amp;`, `\\[`) never splits a path the rewrite would have replaced."""
    if public is not None:
        report = made_public(report, public)
    written = [
        # bidirectional and zero-width characters as \u escapes: the same data, shown escaped
        write_text_atomic(out / REPORT_JSON, json_inert(report.model_dump_json(indent=2)) + "\n"),
        write_text_atomic(out / REPORT_MD, render_markdown(report)),
        write_text_atomic(out / REPORT_HTML, render_html(report, frames_png)),
        write_text_atomic(out / JUNIT_FILE, render_junit(report)),
    ]
    summary = os.environ.get(STEP_SUMMARY_ENV)
    if summary:
        with open_for_appending(Path(summary)) as stream:
            stream.write(render_step_summary(report))
    return written


def made_public(report: Report, public: Callable[[str], str]) -> Report:
    """`report` with `public` applied to each of its string values, and how many it changed counted on it."""
    changed = 0

    def counted(text: str) -> str:
        nonlocal changed
        new = public(text)
        changed += new != text
        return new

    made = with_strings(report, counted)  # walks every string before `changed` is read below
    return made.model_copy(update={"values_made_public": report.values_made_public + changed})
