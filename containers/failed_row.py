"""The failed row of a checkpoint whose step chain stopped without writing one (a crash, bad input, the wall
limit). Standard library only; the tests validate its output against the package's result schema.

    python3 failed_row.py --profile P --exit-code N --limit S --log private/qualify.log --out result.json
                          [--command C] [--reason TEXT]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

SCHEMA = "trtmc-videoqa.result/v1"
LOG = "private/qualify.log"  # as the row's evidence names it: a raw log, under the row, never published
TAIL_LINES, LINE_CHARS = 20, 300


def reason(code: int, limit: str) -> str:
    if code in (124, 137):
        return f"the step chain ran past its wall limit of {limit} s and was stopped (exit {code}); see {LOG}"
    if code == 2:
        return f"trtmc-videoqa qualify refused its input (exit 2); see {LOG}"
    if code == 0:
        return f"trtmc-videoqa qualify exited 0 without writing this row; see {LOG}"
    return f"trtmc-videoqa qualify stopped with exit {code} before writing this row; see {LOG}"


def row(profile: str, code: int, limit: str, log: Path, command: str | None, why: str | None = None) -> dict:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    tail = [line[:LINE_CHARS] for line in lines[-TAIL_LINES:] if line.strip()]
    evidence = [f"{LOG} (exit {code}), last lines:", *tail] if lines else [f"no log: {why or reason(code, limit)}"]
    return {
        "schema_version": SCHEMA,
        "profile": profile,
        "status": "failed",
        "status_reason": why or reason(code, limit),
        "status_evidence": evidence,
        "commands": {"trtmc-videoqa": command} if command else {},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True)
    parser.add_argument("--exit-code", type=int, required=True)
    parser.add_argument("--limit", default="?")
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--command")
    parser.add_argument("--reason", help="the reason in words, where the exit code does not tell it")
    args = parser.parse_args()
    data = (
        json.dumps(row(args.profile, args.exit_code, args.limit, args.log, args.command, args.reason), indent=2) + "\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=args.out.parent, prefix=".result-")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(data)
    os.chmod(temporary, 0o644)
    os.replace(temporary, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
