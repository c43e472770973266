"""Each row is built in a staging folder of its own and put in place whole, at once, when it is finished: a reader
of checkpoints/<row>/ sees the earlier row or the new one, never a mixture, never half of one.

    <out>/private/rows/staging/<row>/   the row being built (the stages' evidence, then its files, result.json last)
    <out>/private/rows/earlier/<row>/   the row it replaces, only between the two renames of `place`
    <out>/private/rows/interrupted/<row>/   an attempt a stop signal ended over an earlier row, kept whole (raw)
    <out>/checkpoints/.interrupted.<row>.json   that attempt's record, which the report names (InterruptedAttempt)

All of them under --out, so on the filesystem of checkpoints/: each move is one rename. `place` renames the earlier
row aside, the new one in, then removes the earlier one; a crash between the two renames leaves the earlier row
aside and no row in place, which `recover_rows` (the next run, under the output lock) puts back; a crash after
them leaves both, and the one aside is removed. A staging folder a crashed run left is never put in place.

An attempt interrupted over an earlier row leaves that row as it was, byte for byte: the attempt is kept aside and
named, never mixed in. With no earlier row, the interrupted row is put in place like any other.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..common.atomic_write import copy_file_atomic, write_model_atomic
from ..common.safe_names import row_dir_name
from ..results import InterruptedAttempt, ResultRow
from ..results.layout import (
    AIPERF_EXPORT,
    CHECKPOINTS_DIR,
    EXECUTION_FILE,
    RESULT_FILE,
    ROWS_EARLIER,
    ROWS_INTERRUPTED,
    ROWS_STAGING,
    interrupted_attempt_file,
)

# What a new attempt carries over from the earlier row: aiperf_qual's file and the AIPerf export its last batch
# names, which the attempt sets aside (aiperf/export.previous) and supersedes (aiperf_qual/execution_file.py).
CARRIED = (EXECUTION_FILE, AIPERF_EXPORT)


@dataclass(frozen=True)
class Staging:
    """The places of one row of an output folder, worked out once (plain values: the row's end reads them often)."""

    out: Path
    name: str  # the row's folder name (common/safe_names.py row_dir_name)
    building: Path  # the row being built
    final: Path  # checkpoints/<row>/
    earlier: Path  # the row it replaces, between the two renames of `place`
    kept: Path  # an interrupted attempt kept aside
    record: Path  # that attempt's record beside the row

    @classmethod
    def of(cls, out: Path, profile: str) -> Staging:
        name = row_dir_name(profile)
        return cls(
            out,
            name,
            building=out / ROWS_STAGING / name,
            final=out / CHECKPOINTS_DIR / name,
            earlier=out / ROWS_EARLIER / name,
            kept=out / ROWS_INTERRUPTED / name,
            record=out / CHECKPOINTS_DIR / interrupted_attempt_file(name),
        )

    @classmethod
    def begun(cls, out: Path, profile: str) -> Staging:
        """The row's places, its staging folder begun afresh (`begin`)."""
        staging = cls.of(out, profile)
        begin(staging)
        return staging

    def has_earlier_row(self) -> bool:
        return (self.final / RESULT_FILE).is_file()


def begin(staging: Staging) -> Path:
    """A fresh staging folder for the row (whatever a crashed run left there removed), holding what the attempt
    carries over from the earlier row; its path."""
    _remove(staging.building)
    staging.building.mkdir(parents=True)
    if staging.final.is_dir() and not staging.final.is_symlink():
        for relative in CARRIED:
            source, copy = staging.final / relative, staging.building / relative
            if source.is_symlink():
                continue  # never followed: a link planted in a row is not evidence of ours
            files = sorted(source.rglob("*")) if source.is_dir() else [source]
            for file in files:  # regular files only, each through the safe writer; a link inside is left behind
                if file.is_file() and not file.is_symlink():
                    copy_file_atomic(file, copy / file.relative_to(source) if file != source else copy)
    return staging.building


def place(staging: Staging) -> Path:
    """The built row put in place as checkpoints/<row>/, replacing the earlier one (see the module's docstring for
    a crash in between); a record of an attempt interrupted over the earlier row goes with it."""
    staging.final.parent.mkdir(parents=True, exist_ok=True)
    _remove(staging.earlier)  # a leftover of an earlier placement, already recovered
    if os.path.lexists(staging.final):
        staging.earlier.parent.mkdir(parents=True, exist_ok=True)
        os.rename(staging.final, staging.earlier)
    try:
        os.rename(staging.building, staging.final)
    except OSError:  # the new row could not go in: the earlier one goes back at once
        if os.path.lexists(staging.earlier) and not os.path.lexists(staging.final):
            os.rename(staging.earlier, staging.final)
        raise
    _remove(staging.earlier)
    staging.record.unlink(missing_ok=True)
    _prune(staging.out)
    return staging.final


def keep_interrupted(staging: Staging, row: ResultRow) -> InterruptedAttempt:
    """An attempt a stop signal ended over an earlier row: the earlier row stays in place untouched; the attempt's
    folder is kept aside whole (private: raw), and its record written beside the earlier row for the report."""
    if row.interruption is None:  # the caller keeps only interrupted rows aside
        raise ValueError("only an interrupted row is kept aside")
    _remove(staging.kept)
    staging.kept.parent.mkdir(parents=True, exist_ok=True)
    os.rename(staging.building, staging.kept)
    attempt = InterruptedAttempt(
        profile=row.profile,
        interruption=row.interruption,
        status_reason=row.status_reason,
        profiling_requests_planned=row.profiling_requests_planned,
        profiling_requests_completed=row.profiling_requests_completed,
        kept=staging.kept.relative_to(staging.out).as_posix(),
    )
    write_model_atomic(staging.record, attempt)
    _prune(staging.out)
    return attempt


def settle(staging: Staging, row: ResultRow) -> None:
    """The written row put where it belongs: in place, unless it is an interrupted attempt over an earlier row,
    which is kept aside and named instead."""
    if row.status == "interrupted" and staging.has_earlier_row():
        keep_interrupted(staging, row)
    else:
        place(staging)


def discard(staging: Staging) -> None:
    """A staging folder that will not be put in place (the row could not even be written): removed."""
    _remove(staging.building)


def recover_rows(out: Path) -> None:
    """After a run that died between the two renames of `place`: an earlier row with nothing in its place goes
    back; one whose new row is in place is removed. Staging folders a dead run left are removed."""
    earlier = out / ROWS_EARLIER
    if earlier.is_dir():
        for aside in sorted(earlier.iterdir()):
            final = out / CHECKPOINTS_DIR / aside.name
            if os.path.lexists(final):
                _remove(aside)
            else:
                final.parent.mkdir(parents=True, exist_ok=True)
                os.rename(aside, final)
    _remove(out / ROWS_STAGING)
    _prune(out)


def _prune(out: Path) -> None:
    """The working folders left empty removed, so a finished run's private/ holds only what it keeps."""
    for folder in (out / ROWS_STAGING, out / ROWS_EARLIER, (out / ROWS_STAGING).parent):
        with contextlib.suppress(OSError):  # not empty, or not there: left as it is
            folder.rmdir()


def _remove(path: Path) -> None:
    """A folder of ours removed (links inside as links, never what they point to); a link or file unlinked."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
