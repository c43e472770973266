"""The one error vocabulary: what a user can fix, and the exit codes the command line gives.

Every room raises its own subclass of `UserError` for input the user can fix (a clip, a checkout, a workload, an
output directory, an option); the message names the input and the fix. `cli.main` turns any of them into one
line on stderr and exit 2, in one place. Everything else is a tool error (exit 1).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # SIGINT: 128 + 2, as a shell reports it


class UserError(Exception):
    """Input the user can fix; the message names the input and the fix."""


class BadInput(UserError):
    """A command-line option or combination of options that cannot be used."""
