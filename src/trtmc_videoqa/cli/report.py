"""`trtmc-videoqa report`: the reports rebuilt from artifact folders alone, or only their public check."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..common.errors import EXIT_OK, BadInput
from ..common.scrub import known_secrets
from ..common.text_escape import one_line
from ..publish.check import check_public, run_sentinels
from ..publish.rewrite import source_tree
from ..report import build_report, frame_strip, write_report
from ..report.difference_view import terminal_lines
from .console import say


def cmd_report(args: argparse.Namespace) -> int:
    if args.check_public:
        return _check_public(args.dirs)

    report = build_report(args.dirs, title=args.title)
    out: Path = args.out or args.dirs[0]
    for path in write_report(report, out, frame_strip(report, args.dirs)):
        print(one_line(f"wrote {path}"))
    print(", ".join(f"{status} {count}" for status, count in report.counts.items()))
    for line in terminal_lines(report.differences):
        print(line)
    return EXIT_OK


def _check_public(directories: list[Path]) -> int:
    """Each directory's public files scanned for this machine's paths, user and host names and known secrets."""

    for directory in directories:
        if not directory.is_dir():
            raise BadInput(f"{directory} is not a directory; pass the --out directory of a qualify run")
        sentinels = run_sentinels(directory, extra_paths=[p for p in [source_tree()] if p], secrets=known_secrets())
        scanned = check_public(directory, sentinels, warn=say)
        print(f"{one_line(directory)}: public check passed ({scanned} text files scanned)")
    return EXIT_OK


def add_arguments(report: argparse.ArgumentParser) -> None:
    """The `report` command's options; its handler."""
    report.description = (
        "Rebuild the reports from the artifacts alone; several directories (one per CI matrix job, "
        "or one checkpoint on two servers) merge into one report with the rows side by side; one profile in two "
        "directories (report A B) is compared figure by figure: B faster, slower or no clear difference, by Welch's t "
        "over per-run medians (Fisher's exact test for both-right), or cannot be judged with one run a side."
    )
    report.add_argument("dirs", type=Path, nargs="+", metavar="DIR", help="artifact directories of qualify runs")
    report.add_argument("--out", type=Path, metavar="DIR", help="where the reports go (default: the first DIR)")
    report.add_argument("--title", help="the report's title")
    report.add_argument(
        "--check-public",
        action="store_true",
        help="only check: scan every public text file (outside private/ folders) for this machine's absolute paths, "
        "user and host names and known secrets; exit 3 naming file:line for each hit (qualify runs it too)",
    )
    report.set_defaults(handler=cmd_report)
