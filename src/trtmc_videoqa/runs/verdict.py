"""The run's verdict as its exit code: a pure function over the rows the run made (reused ones count as measured
ones), the table of docs/commands.md.

The rows a run was asked about: every row of the self-test, of an endpoint and of a comparison; of a TRTMC run, the
rows named with --profile, else the group's capable normal profiles (the rows the group line is read from: an
unsupported row or a variant left `planned` was not asked about, and a row outside the group never is). Then, first
match wins:

- a row recorded `interrupted`: the stop signal's code (128 + its number), whatever the others say;
- a row that ended in a tool error: 1, whatever `--exit-zero` says;
- with `--exit-zero` (a report-only job): 0;
- a row asked about `failed` (a gate not held) or `unverified`: 3;
- none asked about, or one not qualified (unsupported, blocked, planned): 4, nothing failed but not all qualified;
- else 0: every row asked about earned `aiperf-qualified` or `endpoint-qualified`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ..common.errors import EXIT_FAILED, EXIT_NOT_QUALIFIED, EXIT_OK, EXIT_TOOL_ERROR
from ..common.stop_signals import interrupted_exit_code
from ..report.group import is_capable, is_trtmc_row
from ..results import ResultRow

QUALIFIED: Final = frozenset({"aiperf-qualified", "endpoint-qualified"})
FAILING: Final = frozenset({"failed", "unverified"})
INTERRUPTED: Final = "interrupted"  # a row a stop signal ended, recorded with what was measured


def asked_rows(rows: Sequence[ResultRow], *, named: bool) -> list[ResultRow]:
    """The rows the run was asked about (`named`: a TRTMC run given --profile, whose rows are the named ones)."""
    asked = []
    for row in rows:
        if is_trtmc_row(row) and row.comparison is None:
            if row.in_group and (named or is_capable(row)):
                asked.append(row)
        else:
            asked.append(row)
    return asked


def run_exit_code(rows: Sequence[ResultRow], *, named: bool = False, exit_zero: bool = False) -> int:
    """The run's exit code from its rows (see the module's docstring for the rule)."""
    if any(str(row.status) == INTERRUPTED for row in rows):
        return interrupted_exit_code()
    if any(row.tool_error is not None for row in rows):
        return EXIT_TOOL_ERROR
    if exit_zero:
        return EXIT_OK
    asked = asked_rows(rows, named=named)
    if any(row.status in FAILING for row in asked):
        return EXIT_FAILED
    if not asked or any(row.status not in QUALIFIED for row in asked):
        return EXIT_NOT_QUALIFIED
    return EXIT_OK


# What each code of a run says, as the terminal's last line puts it.
MEANING: Final = {
    EXIT_OK: "every row asked about is qualified",
    EXIT_TOOL_ERROR: "a row ended in a tool error",
    EXIT_FAILED: "a row asked about failed",
    EXIT_NOT_QUALIFIED: "nothing failed, but not every row asked about is qualified (unsupported or blocked)",
}
