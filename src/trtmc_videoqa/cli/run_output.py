"""What `qualify` and `compare` print of a run and give it to speak with: the progress line on stderr, one-line
warnings, our own command line as typed (for command.txt), and the run's verdict with its exit code."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable

from ..common.errors import EXIT_OK
from ..common.progress import Progress, silent
from ..common.scrub import known_secrets
from ..common.text_escape import one_line, shown_name
from ..report.difference_view import terminal_lines
from ..runs.owner import RunConsole, RunOutcome
from ..runs.requests import RunRequest
from ..runs.verdict import MEANING
from .run_table import verdict_lines


def run_console(request: RunRequest, api_key: str | None) -> RunConsole:
    """The run's progress (none with --quiet; the API key scrubbed from it) and warnings, both on stderr."""
    return RunConsole(
        progress=progress_line(request.settings.quiet, api_key),
        warn=lambda message: print(one_line(message), file=sys.stderr),  # one line of ours, not Python's warning
    )


def recorded_argv() -> list[str]:
    """Our own command line as command.txt records it (a test's in-process call records plain `qualify`)."""
    return sys.argv[1:] if sys.argv[1:2] in (["qualify"], ["compare"]) else ["qualify"]


def print_outcome(outcome: RunOutcome) -> int:
    """The run's verdict (cli/run_table.py: the group or run line, the rows' table, a line per row not qualified),
    where the report is, what a non-zero exit code says, and the run's exit code."""

    for line in [*verdict_lines(outcome.rows), *_difference_lines(outcome)]:
        print(line)
    print(one_line(f"report: {outcome.report}"))
    if outcome.exit_code != EXIT_OK:
        print(f"exit {outcome.exit_code}: {MEANING.get(outcome.exit_code, 'see docs/commands.md, exit codes')}")
    return outcome.exit_code


def _difference_lines(outcome: RunOutcome) -> list[str]:
    """The report's rows compared (a comparison row beside its TRTMC row in --out), and a comparison row whose TRTMC
    row is not there, with the command that judges them."""
    compared = {pair.b.profile for pair in outcome.differences}
    alone = [row for row in outcome.rows if row.comparison and row.comparison.compared_profile]
    lines = [
        f"{shown_name(row.profile)}: no row {shown_name(row.comparison.compared_profile)} in --out to compare with; "
        "`trtmc-videoqa report TRTMC_DIR COMPARE_DIR` judges their difference"
        for row in alone
        if row.profile not in compared and row.comparison and row.comparison.compared_profile
    ]
    return [*terminal_lines(list(outcome.differences)), *(one_line(line) for line in lines)]


def progress_line(quiet: bool, api_key: str | None) -> Callable[[str], None]:
    """The run's progress on stderr (common/progress.py): on a terminal a long step's line is rewritten in place;
    without one (or with CI set) plain lines, a long step's every 10 s and at its end; --quiet: none."""
    if quiet:
        return silent
    terminal = sys.stderr.isatty() and not os.environ.get("CI")
    # main's stderr drops every control character, the one that rewrites a line too: on a terminal progress writes
    # to the process's own stderr, each of its lines made inert (and scrubbed) by Progress itself.
    stream = (sys.__stderr__ or sys.stderr) if terminal else sys.stderr
    width = shutil.get_terminal_size().columns if terminal else 0
    return Progress(stream, terminal=terminal, secrets=known_secrets(api_key), width=width)
