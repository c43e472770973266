"""The `doctor` command: this machine's checks, or with --aiperf-qual what a TRTMC checkout's own aiperf_qual reader
makes of a run's execution.jsonl files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..aiperf_qual.reader_check import check_with_reader, reader_problem, row_folders
from ..common.errors import EXIT_FAILED, EXIT_OK, BadInput
from ..common.text_escape import one_line, shown_name
from ..machine.doctor import run_checks


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.aiperf_qual:
        return _aiperf_qual(args)

    checks = run_checks()
    if args.json:
        print(json.dumps([c.model_dump() for c in checks], indent=2))
        return _exit([c.level for c in checks])
    for check in checks:
        _print(check.level, check.name if check.needed_for == "qualify" else f"{check.name} (compare)", check.detail)
        if check.fix and check.level != "ok":
            print(f"      {'':<14} fix: {one_line(check.fix)}")
    return _exit([c.level for c in checks])


def _aiperf_qual(args: argparse.Namespace) -> int:

    if args.trtmc is None:
        raise BadInput("--aiperf-qual needs --trtmc PATH: a TRTMC checkout holding apps/aiperf_qual")
    problem = reader_problem(args.trtmc)
    if problem is not None:
        raise BadInput(problem)
    if not row_folders(args.artifacts):
        raise BadInput(
            f"{args.artifacts} holds no checkpoints/*/execution.jsonl: pass the --out directory of a qualify run "
            "(--artifacts DIR)"
        )
    verdicts = check_with_reader(args.trtmc, args.artifacts, args.python)
    if args.json:
        print(json.dumps([v.model_dump() for v in verdicts], indent=2))
    else:
        for verdict in verdicts:
            _print(verdict.level, verdict.row, verdict.detail)
    return _exit([v.level for v in verdicts])


def _print(level: str, name: str, detail: str) -> None:
    print(f"{level.upper():<4}  {shown_name(name):<14} {one_line(detail)}")


def _exit(levels: list[str]) -> int:
    """A check that failed is doctor's verdict (3), never a tool error of ours (1) nor bad input (2)."""
    return EXIT_FAILED if "fail" in levels else EXIT_OK


def add_arguments(doctor: argparse.ArgumentParser) -> None:
    """The `doctor` command's options; its handler."""
    doctor.description = (
        "Check the environment and say what is missing and how to fix it. Exits 3 when a required "
        "part is missing; Docker, GPU and TRTMC are only warned about. With --aiperf-qual, instead: load each "
        "checkpoints/*/execution.jsonl of a run with the TRTMC checkout's own aiperf_qual reader, imported from the "
        "checkout in a subprocess, and report what it says (exit 3 when it fails on one)."
    )
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.add_argument(
        "--aiperf-qual", action="store_true", help="check our execution.jsonl files with aiperf_qual's own reader"
    )
    doctor.add_argument("--trtmc", type=Path, metavar="PATH", help="with --aiperf-qual: the TRTMC checkout")
    doctor.add_argument(
        "--artifacts",
        type=Path,
        default=Path("artifacts"),
        metavar="DIR",
        help="with --aiperf-qual: a qualify run's --out directory (default: artifacts)",
    )
    doctor.add_argument(
        "--python",
        default=sys.executable,
        metavar="PATH",
        help="with --aiperf-qual: the interpreter that imports the reader (TRTMC's; default: this one)",
    )
    doctor.set_defaults(handler=cmd_doctor)
