"""A row written into its staging folder: secrets scrubbed, execution.jsonl (from the typed AIPerf evidence),
command.txt, then result.json last; and the row an exception of ours ends, written the same way.

Where a row is built and how it is put in place is rows/staging.py; which row a ladder's end makes, rows/end.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..aiperf_qual.execution_file import write_execution
from ..aiperf_qual.verdicts import with_verdict
from ..climb.protocol import tool_error
from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.scrub import known_secrets, scrub_secrets, scrubbed_model
from ..common.shell_quoting import UNSAFE_IN_COMMAND, reproducible_command
from ..results import RecordedCommand, ResultRow, StageName, StageResult
from ..results.layout import COMMAND_FILE, RESULT_FILE

if TYPE_CHECKING:
    from ..aiperf_qual.execution import ExecutionBatch
    from ..aiperf_qual.execution_file import AiperfEvidence
    from ..plan.job import QualifyJob

# The earlier attempts' execution.jsonl, read before this attempt wrote anything: (batches, superseded ids).
Carried = tuple[list["ExecutionBatch"], set[int]]


def write_row(
    job: QualifyJob,
    row_dir: Path,
    row: ResultRow,
    commands: dict[str, RecordedCommand],
    evidence: AiperfEvidence | Sequence[AiperfEvidence] | None = None,
    carried: Carried | None = None,
) -> ResultRow:
    """Scrub `row_dir` (the row's staging folder) of secrets, then write execution.jsonl (aiperf_qual's evidence of
    its AIPerf runs, from `evidence`: a batch each), command.txt and result.json, the row carrying the aiperf_qual
    verdict its status supports: the row is written, ready to be put in place. `carried`: the execution.jsonl lines it
    follows (read from `row_dir` when not given), so writing the row twice never supersedes its own batch."""
    # The tools we ran (build, the family's tests and their artifacts, the server and its records) may write a
    # token they were given anywhere under the row: never kept. (Bundles live outside the row directory.)
    secrets = known_secrets(job.api_key)
    if secrets and row_dir.is_dir():  # with none to look for, the row's files are not walked at all
        scrub_secrets(sorted(p for p in row_dir.rglob("*") if p.is_file() and not p.is_symlink()), secrets)
    row = scrubbed_model(with_verdict(row.model_copy(update={"commands": commands})), secrets)
    write_execution(row_dir, row, evidence, carried)
    write_text_atomic(row_dir / COMMAND_FILE, command_file_text(commands))
    write_model_atomic(row_dir / RESULT_FILE, row)
    return row


def crashed_row(
    job: QualifyJob,
    row_dir: Path,
    row: ResultRow,
    stage: StageName,
    error: Exception,
    commands: dict[str, RecordedCommand],
    carried: Carried | None = None,
) -> ResultRow:
    """`row` ended `failed` at `stage` by an exception of ours raised outside any step (its start, its finishing):
    the exception on the row as a tool error, the traceback in its private folder; written into `row_dir`."""

    facts = tool_error(row_dir, stage, error)
    detail = f"internal error: {facts.type}: {facts.message}"
    crashed = row.model_copy(
        update=dict(
            status="failed",
            status_reason=f"{stage}: {detail}",
            failed_stage=stage,
            status_evidence=[],
            stages=[s for s in row.stages if s.name != stage]
            + [StageResult(name=stage, status="failed", detail=detail)],
            tool_error=facts,
            interruption=None,
        )
    )
    try:
        return write_row(job, row_dir, crashed, commands, None, carried)
    except Exception:  # the row's own content would not write: the bare row, which says what raised, does
        bare = ResultRow(
            profile=row.profile,
            family=row.family,
            checkpoint=row.checkpoint,
            revision=row.revision,
            verdict=row.verdict,
            in_group=row.in_group,
            reference_self_test=row.reference_self_test,
            comparison=row.comparison,
            status="failed",
            status_reason=crashed.status_reason,
            failed_stage=stage,
            stages=crashed.stages[-1:],
            tool_error=facts,
        )
        return write_row(job, row_dir, bare, {}, None, carried)


# command.txt: a section per command, in order: its marker `# NAME` on a line of its own, the notes we wrote
# (`# ...`), then exactly one command line, which never starts with `#`. No value can start a line (a recorded value
# holds no line break: common/shell_quoting.py's quoting), so no value can forge a marker, and the first line after a
# marker that does not start with `#` is that section's command: docs/public-evidence.md's recipe picks it so.
COMMAND_FILE_HEADER = (
    "# The commands that made this row, a section each: '# NAME', its notes, then one command line. Pick one with\n"
    "# sed -n '/^# NAME$/,/^[^#]/{/^[^#]/p}' command.txt (docs/public-evidence.md)"
)
_SECTION_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")


def command_file_text(commands: dict[str, RecordedCommand]) -> str:
    """command.txt's text: each command's section with its marker, its notes, then its argv as one shell-quoted
    line (common/shell_quoting.py: no value holds a line break or control character there, nor starts the line)."""
    lines = [COMMAND_FILE_HEADER]
    for name, command in commands.items():
        if not _SECTION_NAME.fullmatch(name):
            raise ValueError(f"a command section is named by us, plainly; got {name!r}")
        parts = reproducible_command(command.argv).split("\n")  # its quoting's own note, if any, then the line
        lines.append(f"# {name}")
        lines += [_note_line(note) for note in [*command.notes, *parts[:-1]]]
        lines.append(parts[-1])
    return "\n".join(lines) + "\n"


def _note_line(note: str) -> str:
    """A note of ours before a command: a comment, never a marker, holding no control character."""
    text = "# " + UNSAFE_IN_COMMAND.sub("?", note.lstrip("#").strip())
    return text + " (note)" if _SECTION_NAME.fullmatch(text[2:]) else text
