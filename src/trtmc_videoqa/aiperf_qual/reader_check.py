"""`doctor --aiperf-qual`: load our execution.jsonl files with a TRTMC checkout's own aiperf_qual reader.

The reader runs in a subprocess that imports it from the checkout (`apps/aiperf_qual` on PYTHONPATH); nothing of
it is copied here. `accuracy_recovery.batches(out)` is the code that reads the file back (it drops superseded
attempts); `aligned_batches(batches, out)`, where the checkout has it, also re-reads each record's AIPerf raw record
and re-computes its request_sha. What the reader says is reported as it says it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from ..results.layout import CHECKPOINTS_DIR
from .execution import EXECUTION_FILE

READER_ROOT = Path("apps/aiperf_qual")
READER_FILE = READER_ROOT / "trtmc_aiperf_qual" / "accuracy_recovery.py"
READER = "trtmc_aiperf_qual.accuracy_recovery"

# Ours: runs in the checkout's environment, prints one JSON line. argv[1]: a row folder (aiperf_qual's `out`).
_PROBE = """
import json, sys
from pathlib import Path
out, said = Path(sys.argv[1]), {}
try:
    from trtmc_aiperf_qual import accuracy_recovery as reader
    batches = reader.batches(out)
    said.update(batches=[b["batch_id"] for b in batches], records=sum(len(b["records"]) for b in batches))
except Exception as error:
    said["error"] = f"{type(error).__name__}: {error}"
else:
    if hasattr(reader, "aligned_batches"):
        try:
            aligned = reader.aligned_batches(batches, out)
            said["aligned"] = sum(len(b["records"]) for b in aligned)
        except Exception as error:
            said["aligned_error"] = f"{type(error).__name__}: {error}"
print(json.dumps(said))
"""


CANNOT_RECHECK = ("AttributeError", "ImportError", "ModuleNotFoundError")


class ReaderVerdict(BaseModel):
    row: str  # the row folder, relative to the artifacts
    level: Literal["ok", "warn", "fail"]
    detail: str


def reader_problem(checkout: Path) -> str | None:
    if not (checkout / READER_FILE).is_file():
        return (
            f"{checkout} has no {READER_FILE.as_posix()}: give a TRTMC checkout of the newer layout "
            "(apps/aiperf_qual), e.g. on the GPU runner"
        )
    return None


def row_folders(artifacts: Path) -> list[Path]:
    return sorted(path.parent for path in (artifacts / CHECKPOINTS_DIR).glob(f"*/{EXECUTION_FILE}") if path.is_file())


def probe_argv(python: str, row_dir: Path) -> list[str]:
    return [python, "-c", _PROBE, str(row_dir)]


def verdict_of(row: str, said: dict[str, object]) -> ReaderVerdict:
    """What the reader said, in one line: loaded (and re-checked), or the error it raised."""
    if "error" in said:
        return ReaderVerdict(row=row, level="fail", detail=f"{READER}.batches() raised {said['error']}")
    loaded = f"batches() read active batch(es) {said.get('batches')} with {said.get('records')} record(s)"
    if "aligned" in said:
        return ReaderVerdict(
            row=row, level="ok", detail=f"{loaded}; aligned_batches() re-checked {said['aligned']} request_sha(s)"
        )
    if "aligned_error" in said:
        error = str(said["aligned_error"])
        # A revision or environment that cannot re-check (no such method, a module it lacks) is a warning; a
        # re-check that ran and refused a record is a failure.
        level: Literal["warn", "fail"] = "warn" if error.startswith(CANNOT_RECHECK) else "fail"
        return ReaderVerdict(row=row, level=level, detail=f"{loaded}; aligned_batches() raised {error}")
    return ReaderVerdict(row=row, level="ok", detail=f"{loaded}; this revision has no aligned_batches()")


def check_with_reader(checkout: Path, artifacts: Path, python: str, timeout_s: float = 120) -> list[ReaderVerdict]:
    """One verdict per row folder holding an execution.jsonl."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout / READER_ROOT), env.get("PYTHONPATH")) if p)
    verdicts = []
    for row_dir in row_folders(artifacts):
        name = row_dir.relative_to(artifacts).as_posix()
        try:
            done = subprocess.run(
                probe_argv(python, row_dir), capture_output=True, text=True, env=env, timeout=timeout_s, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            verdicts.append(ReaderVerdict(row=name, level="fail", detail=f"the reader did not run: {error}"))
            continue
        said = _last_json(done.stdout)
        if said is None:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            verdicts.append(ReaderVerdict(row=name, level="fail", detail=f"the reader said nothing readable: {tail}"))
            continue
        verdicts.append(verdict_of(name, said))
    return verdicts


def _last_json(stdout: str) -> dict[str, object] | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, dict) else None
    return None
