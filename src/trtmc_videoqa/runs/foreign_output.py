"""An `--out` of the user's own files is refused before anything is written: a run writes its artifacts there and
its publish step rewrites the public ones.

A folder counts as an earlier run's only by a marker that is the tool's own, read as untrusted input: the output
lock as the lock writes it, a `report.json` or a `checkpoints/*/result.json` that parses as the tool's schema, a
`workload/*/prepared.digest.json` that parses as a stamp. Each is read without following a link, under a cap,
with bounded nesting (pydantic's JSON parser; the stamp's reader): a file of the user's that happens to bear one
of those names is not a marker, and its folder is refused like any other."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from pydantic import ValidationError

from ..common.atomic_write import check_target
from ..common.errors import UserError
from ..common.output_lock import LOCK_NAME
from ..common.safe_read import MAX_RESULT_BYTES, UnreadableInput, read_file_inside
from ..results import Report, ResultRow
from ..results.layout import CHECKPOINTS_DIR, OUTPUT_TOP_NAMES, PREPARED_STAMP, REPORT_JSON, RESULT_FILE, WORKLOAD_DIR
from ..workloads.artifacts import read_stamp

MARKERS_READ = 64  # rows and stamps read at most, looking for one of the tool's: enough for any real run's folder
_LOCK_TEXT = re.compile(r"\d{1,10}\n(group \d{1,10} \d{1,20} \S{1,200}\n){0,1000}")


class ForeignOutput(UserError):
    """--out names a folder of someone's own files: a run writes there, and its publish step rewrites."""


def refuse_foreign_output(out: Path) -> None:
    """Refuse a non-empty `out` that holds none of a run's markers and something beside the names the tool writes
    at the top of an output folder (OUTPUT_TOP_NAMES)."""
    try:
        names = sorted(entry.name for entry in out.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return  # a new folder, or a file the lock refuses by name
    check_target(out / LOCK_NAME)  # a link, FIFO or device planted as the lock: refused by name, whatever is beside it
    # The lock's own name is the tool's too: whatever stands there, the lock itself refuses it by name.
    foreign = [name for name in names if name not in OUTPUT_TOP_NAMES and name != LOCK_NAME]
    if not foreign or is_earlier_run(out):
        return
    shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
    raise ForeignOutput(
        f"--out {out} is a folder of other files ({shown}), not the output of an earlier run: a run writes "
        "its artifacts there and rewrites the public ones; give an empty or new folder with --out"
    )


def is_earlier_run(out: Path) -> bool:
    """Whether `out` holds one marker of the tool's own, each checked as the tool writes it."""
    if _is_lock(out / LOCK_NAME) or _parses(out, out / REPORT_JSON, Report):
        return True
    rows = itertools.islice((out / CHECKPOINTS_DIR).glob(f"*/{RESULT_FILE}"), MARKERS_READ)
    if any(_parses(out, path, ResultRow) for path in rows):
        return True
    stamps = itertools.islice((out / WORKLOAD_DIR).glob(f"*/{PREPARED_STAMP}"), MARKERS_READ)
    return any(read_stamp(path.parent) is not None for path in stamps)


def _is_lock(path: Path) -> bool:
    try:
        text = read_file_inside(path.parent, path, 1 << 16).decode("ascii")
    except (UnreadableInput, UnicodeDecodeError):
        return False
    return _LOCK_TEXT.fullmatch(text) is not None


def _parses(out: Path, path: Path, schema: type[Report] | type[ResultRow]) -> bool:
    try:
        schema.model_validate_json(read_file_inside(out, path, MAX_RESULT_BYTES))
    except (UnreadableInput, ValidationError, ValueError):
        return False
    return True
