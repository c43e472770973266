"""The one error vocabulary: what a user can fix, and the exit codes the command line gives.

Every room raises its own subclass of `UserError` for input the user can fix (a clip, a checkout, a workload, an
output directory, an option); the message names the input and the fix. `cli.main` turns any of them into one
line on stderr and exit 2, in one place; a `CheckNotHeld` (a check the command was asked to make found something)
into one line and exit 3. Everything else is a tool error (exit 1).

Every exit code is defined here, once, and docs/commands.md has them as one table. A verdict never shares a code
with bad input or a tool error: 3 and 4 say what a run or a check found; 1 and 2 that it could not say.
"""

from __future__ import annotations

from typing import Final

EXIT_OK: Final = 0  # every row the run was asked about earned its qualified status; every check held
EXIT_TOOL_ERROR: Final = 1  # an exception of ours: in a row (its tool_error) or outside any
EXIT_BAD_INPUT: Final = 2  # input the user can fix, refused in one message
EXIT_FAILED: Final = 3  # a verdict not met: a row failed (a gate not held), or a check the command makes found a hit
EXIT_NOT_QUALIFIED: Final = 4  # nothing failed, yet a row asked about is unsupported or blocked: nothing qualifiable
SIGNAL_EXIT_BASE: Final = 128  # a stop signal's exit: 128 + its number, as a shell reports it
EXIT_INTERRUPTED: Final = SIGNAL_EXIT_BASE + 2  # SIGINT (Ctrl-C): 130; SIGTERM 143, SIGHUP 129


class UserError(Exception):
    """Input the user can fix; the message names the input and the fix."""


class BadInput(UserError):
    """A command-line option or combination of options that cannot be used."""


class CheckNotHeld(Exception):
    """A check the command was asked to make did not hold (a public file names this machine): a verdict, exit 3,
    with one message naming what was found; never bad input, never a tool error."""
