"""What `qualify` and `compare` print of a run and give it to speak with: the progress line on stderr, one-line
warnings, our own command line as typed (for command.txt), and each row's status with the exit code."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable

from ..common.progress import Progress
from ..common.scrub import known_secrets
from ..common.text_escape import one_line, shown_name
from ..runs.owner import RunConsole, RunOutcome
from ..runs.requests import RunRequest


def run_console(request: RunRequest) -> RunConsole:
    """The run's progress (none with --quiet) and warnings, both on stderr."""
    quiet = request.settings.quiet
    return RunConsole(
        progress=lambda api_key: progress_line(quiet, api_key),
        warn=lambda message: print(one_line(message), file=sys.stderr),  # one line of ours, not Python's warning
    )


def recorded_argv() -> list[str]:
    """Our own command line as command.txt records it (a test's in-process call records plain `qualify`)."""
    return sys.argv[1:] if sys.argv[1:2] in (["qualify"], ["compare"]) else ["qualify"]


def print_outcome(outcome: RunOutcome) -> int:
    """Each row's status in one line, where the report is, and the run's exit code."""
    for row in outcome.rows:
        stage = f" at {row.failed_stage}" if row.failed_stage else ""
        reused = " (reused)" if row.reused else ""
        print(f"{shown_name(row.profile)}: {row.status}{stage}{reused} — {one_line(row.status_reason)}")
    print(one_line(f"report: {outcome.report}"))
    return outcome.exit_code


def progress_line(quiet: bool, api_key: str | None) -> Callable[[str], None]:
    """The run's progress on stderr (common/progress.py): on a terminal a long step's line is rewritten in place;
    without one (or with CI set) plain lines, a long step's every 10 s and at its end; --quiet: none."""
    if quiet:
        return lambda _: None
    terminal = sys.stderr.isatty() and not os.environ.get("CI")
    # main's stderr drops every control character, the one that rewrites a line too: on a terminal progress writes
    # to the process's own stderr, each of its lines made inert (and scrubbed) by Progress itself.
    stream = (sys.__stderr__ or sys.stderr) if terminal else sys.stderr
    width = shutil.get_terminal_size().columns if terminal else 0
    return Progress(stream, terminal=terminal, secrets=known_secrets(api_key), width=width)
