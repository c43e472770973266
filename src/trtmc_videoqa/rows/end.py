"""The one entry point that finishes a row, whichever ladder it climbed (or none): the row its end earns, written in
its staging folder and put in place (rows/staging.py), with the one crash net around it.

    climb_and_finish(row, steps, start, earning)   a ladder climbed from its planned climb, then finish_from
    finish_from(row, end, earning)    a row finished from where its ladder ended (a Climb or a Stop)
    finish_unclimbed(job, row, commands, error)   a row that climbs nothing (unsupported, held, or its start crashed)

What a row can earn is given as values (`Earning`), never a call back into its ladder. Whatever raises while a row
is finished is that row's `failed` at the last stage it reached, written whole in a fresh attempt at its files;
only when even that cannot be written does the exception leave, the earlier row (if any) untouched. A stop signal
(Ctrl-C, SIGTERM, SIGHUP) during the ladder or while the row is finished makes the row `interrupted` with what it
measured; it is written and put where it belongs under ignored signals, then the run stops (KeyboardInterrupt
again, so the exit code stays the signal's).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from ..aiperf_qual.execution_file import read_execution
from ..climb.protocol import Climb, RowJob, Step, Stop, climb_ladder, measured_end, reached, signal_name
from ..common.stop_signals import stop_signals_ignored
from ..results import RecordedCommand, ResultRow
from ..results.layout import EXECUTION_FILE
from .finish import Carried, crashed_row, write_row
from .provenance import LadderFacts, ended_provenance
from .staging import Staging, settle
from .status import Qualified, interrupted_while_finishing, measured_row, stopped_row

if TYPE_CHECKING:
    from ..aiperf_qual.execution_file import AiperfEvidence
    from ..plan.job import QualifyJob
    from ..plan.self_test import DeclaredNoAnswer


Row = TypeVar("Row", bound=RowJob)


@dataclass(frozen=True)
class Earning:
    """What a ladder's row can earn: its top status, what its ladder adds to its provenance, and the one no-answer
    its run's plan declares (the self-test's test double on a real clip), said before a qualified row's reason."""

    qualified: Qualified
    facts: LadderFacts
    declared_no_answer: DeclaredNoAnswer | None = None


def climb_and_finish(row: Row, steps: tuple[Step[Row], ...], start: Climb, earning: Earning) -> ResultRow:
    """The row's ladder climbed in its staging folder from its planned climb `start` (whatever a step raises is
    its `failed` at that step: climb/protocol.py), what its stages started closed, and the row finished from where
    it ended."""
    staging = Staging.begun(row.job.out, row.profile)
    end = climb_ladder(steps, row, start)
    return finish_from(row, end, earning, staging=staging, before=row.resources.close)


def finish_from(
    row: RowJob,
    end: Climb | Stop,
    earning: Earning,
    *,
    staging: Staging | None = None,
    before: Callable[[], None] = lambda: None,
) -> ResultRow:
    """The row `end` earns (a Climb or a Stop of `row`'s ladder), written in the row's staging folder (`staging`,
    begun where the ladder climbed; else begun here) and put in place; `before` runs first, inside the crash net
    (closing what the row's stages started). A row a stop signal ended is finished under ignored signals, then the
    run stops (KeyboardInterrupt)."""
    staging = staging or Staging.begun(row.job.out, row.profile)
    carried = read_execution(staging.building / EXECUTION_FILE)  # before this attempt writes its own
    stopped = any(stage.status == "interrupted" for stage in reached(end)[0].stages)
    try:
        with stop_signals_ignored() if stopped else nullcontext():
            finished = _finished(row, end, earning, staging, carried, before=before, cut=False)
    except KeyboardInterrupt:  # a stop signal while the row was written: written again, interrupted
        if staging.building.is_dir():  # not yet in place (once it is, the row stands as written)
            with stop_signals_ignored():
                _finished(row, end, earning, staging, carried, before=before, cut=True)  # `before`: what is left
        raise
    if stopped:
        raise KeyboardInterrupt  # the row is written and in its place; the run stops here
    return finished


def _finished(
    row: RowJob,
    end: Climb | Stop,
    earning: Earning,
    staging: Staging,
    carried: Carried,
    *,
    before: Callable[[], None],
    cut: bool,
) -> ResultRow:
    """The row written and settled; whatever raises on the way is the row's `failed` at the last stage it reached
    (the one crash net)."""
    try:
        before()
        made, commands, evidence = earned(row.job, end, earning)
        if cut:
            made = interrupted_while_finishing(made, signal_name())
        written = write_row(row.job, staging.building, made, relocated(commands, staging), evidence, carried)
    except Exception as error:
        at, stage = reached(end)
        commands = relocated(_commands_of(end), staging)
        written = crashed_row(row.job, staging.building, at, stage, error, commands, carried)
    with stop_signals_ignored():  # never cut between the renames: a signal now waits for the row to be in place
        settle(staging, written)
    return written


def earned(
    job: QualifyJob, end: Climb | Stop, earning: Earning
) -> tuple[ResultRow, dict[str, RecordedCommand], list[AiperfEvidence] | AiperfEvidence | None]:
    """The row a ladder's end earns (not yet written), the commands that made it and its AIPerf runs' evidence."""
    if isinstance(end, Stop) and end.status is not None:  # ended before it measured
        return stopped_row(end, ended_provenance(job, earning.facts, end.at, None)), end.at.commands, None
    climb, measurement = measured_end(end)
    provenance = ended_provenance(job, earning.facts, climb, measurement)
    declared = earning.declared_no_answer
    row = measured_row(climb.row, measurement, earning.qualified, provenance, declared_no_answer=declared)
    evidence = [run.evidence for run in measurement.levels] or measurement.aiperf
    return row, climb.commands | measurement.commands, evidence


def finish_unclimbed(
    job: QualifyJob, row: ResultRow, commands: dict[str, RecordedCommand], error: Exception | None = None
) -> ResultRow:
    """A row that climbs no ladder (unsupported, held back, or `failed` at plan by `error` while it started),
    written in its staging folder and put in place."""
    staging = Staging.begun(job.out, row.profile)
    carried = read_execution(staging.building / EXECUTION_FILE)
    try:
        if error is not None:
            raise error
        written = write_row(job, staging.building, row, commands, None, carried)
    except Exception as crash:
        written = crashed_row(job, staging.building, row, "plan", crash, commands, carried)
    with stop_signals_ignored():
        settle(staging, written)
    return written


def _commands_of(end: Climb | Stop) -> dict[str, RecordedCommand]:
    climb = end.at if isinstance(end, Stop) else end
    return climb.commands | (climb.measurement.commands if climb.measurement else {})


def relocated(commands: dict[str, RecordedCommand], staging: Staging) -> dict[str, RecordedCommand]:
    """The commands as they name the row once it is in place: a path into the staging folder (AIPerf's input file
    and export, the family's artifacts) names the same file under checkpoints/<row>/."""
    pairs = [
        (str(staging.building.resolve()), str(staging.final.resolve())),
        (str(staging.building), str(staging.final)),
    ]

    def moved(text: str) -> str:
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    return {
        name: command.model_copy(
            update={"argv": [moved(part) for part in command.argv], "notes": [moved(n) for n in command.notes]}
        )
        for name, command in commands.items()
    }
