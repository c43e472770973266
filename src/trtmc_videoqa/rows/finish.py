"""Finishing a row, whichever ladder it climbed: its provenance, the status its stages earn (the first stage that
did not pass decides), and writing it: secrets scrubbed, execution.jsonl, command.txt, then result.json last.

A row never claims more than its evidence: a qualified row's reason names each gate it earned.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from ..aiperf_qual.execution_file import write_execution
from ..aiperf_qual.verdicts import with_verdict
from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.pins import tool_versions
from ..common.scrub import known_secrets, scrub_secrets, scrubbed_model
from ..common.shell_quoting import UNSAFE_IN_COMMAND, reproducible_command
from ..machine.provenance import hardware_provenance
from ..results import Mode, Provenance, QualificationStatus, RecordedCommand, ResultRow, StageName, StageResult
from ..results.layout import (
    AIPERF_OUTCOME,
    CAPABILITY_FILE,
    COMMAND_FILE,
    GRADING_FILE,
    IDENTITY_FILE,
    OUTPUT_CHECK_FILE,
    RESULT_FILE,
)

if TYPE_CHECKING:
    from ..plan.job import QualifyJob
    from ..stages.protocol import Measurement, Stop

Qualified = Literal["aiperf-qualified", "endpoint-qualified"]


def hardware() -> dict[str, Any]:
    """What a row says about the machine: GPU, driver, CUDA, TensorRT and TRTMC versions, CPU count; nothing that
    names the machine or its user. Package versions are this interpreter's, which is TRTMC's (Toolchain.python)."""
    return hardware_provenance()


def run_provenance(
    job: QualifyJob,
    *,
    mode: Mode,
    settings: dict[str, Any],
    tokenizer: str,
    endpoint: str | None = None,
    served_by: str | None = None,
    trtmc_commit: str | None = None,
    server_version: str | None = None,
    effective_precision: str | None = None,
    bundle_digest: str | None = None,
) -> Provenance:
    """Where a row's figures come from: tools, workload, hardware, and the run's settings with the ladder's own."""
    return Provenance(
        tool_versions=tool_versions(),
        aiperf=job.aiperf.model_dump(),
        trtmc_commit=trtmc_commit,
        bundle_digest=bundle_digest,
        workload=job.workload.name,
        workload_digest=job.workload.digest,
        endpoint=endpoint,
        mode=mode,
        served_by=served_by,
        server_version=server_version,
        hardware=hardware(),
        effective_precision=effective_precision,
        settings=job.settings.measured() | settings,
        tokenizer=tokenizer,
        inventory_digest=job.inventory_digest,
    )


def measured_fields(row: ResultRow, measurement: Measurement) -> dict[str, Any]:
    """The fields a measurement fills in, whatever the ladder."""
    from ..stages.timing import NOT_REPORTED

    figures = measurement.figures
    plan = measurement.plan
    # Only a server that may omit it (an endpoint: the stage is skipped) "does not report" its task time.
    unreported = any(s.name == "timing" and s.status == "skipped" for s in measurement.stages)
    return dict(
        stages=row.stages + measurement.stages,
        warmup_requests=len(plan.warmup) if plan else 0,
        profiling_requests_planned=len(plan.profiling) if plan else 0,
        profiling_requests_completed=figures.get("completed", 0),
        failed_requests=figures.get("failed", 0),
        requests=measurement.records,
        client_latency=figures.get("client_latency"),
        server_task_time=figures.get("server_task_time"),
        task_time_field=measurement.task_time_field,
        timing_scope=measurement.timing_scope or (NOT_REPORTED if unreported else None),
        requests_per_s=figures.get("requests_per_s"),
        accuracy=measurement.accuracy,
        output_check=measurement.output_check,
        video_transport=measurement.video_transport,
        transport_attempts=measurement.transport_attempts,
    )


QUALIFIED_EVIDENCE = [
    f"{RESULT_FILE}#requests",
    AIPERF_OUTCOME,
    GRADING_FILE,
    OUTPUT_CHECK_FILE,
    IDENTITY_FILE,
]


def status_from_stages(
    stages: list[StageResult], qualified: Qualified
) -> tuple[QualificationStatus, str, StageName | None, list[str]]:
    """(status, reason, failed stage, evidence): the first stage that did not pass decides; a row whose every
    stage passed (or, for identity without a native route, was not applicable) earns `qualified`."""
    for stage in stages:
        if stage.status == "rejected":
            return "unsupported", f"the server rejected a video request: {stage.detail}", None, [CAPABILITY_FILE]
        if stage.status == "failed":
            return "failed", f"{stage.name}: {stage.detail}", stage.name, stage.evidence
        if stage.status == "blocked":
            return "blocked", f"{stage.name}: {stage.detail}", None, stage.evidence
    return qualified, earned_reason(stages), None, QUALIFIED_EVIDENCE


# The gates a qualified row must show an outcome for: a ladder that ended without one of them earns nothing.
GATES_OF_A_QUALIFIED_ROW: tuple[StageName, ...] = ("capability", "aiperf", "output-check", "identity")


def measured_row(
    row: ResultRow,
    measurement: Measurement,
    qualified: Qualified,
    provenance: Provenance,
    qualified_note: str | None = None,
) -> ResultRow:
    """The row with the measurement's figures and the status its stages earn; `qualified_note` goes before the
    reason of a qualified row (the self-test's declared no-answer). A row missing a gate's outcome is never
    qualified, whatever the stages it has say: it fails at the first gate it lacks."""
    fields = measured_fields(row, measurement)
    status, reason, failed, evidence = status_from_stages(fields["stages"], qualified)
    shown = {stage.name for stage in fields["stages"]}
    missing = [gate for gate in GATES_OF_A_QUALIFIED_ROW if gate not in shown]
    if status == qualified and missing:
        status, failed, evidence = "failed", missing[0], []
        reason = f"{missing[0]}: the row ended with no outcome for this gate, so nothing shows it passed"
    if qualified_note and status == qualified:
        reason = f"{qualified_note}; {reason}"
    return row.model_copy(
        update=fields
        | dict(
            status=status,
            status_reason=reason,
            failed_stage=failed,
            status_evidence=evidence,
            provenance=provenance,
        )
    )


def stopped_row(stop: Stop, provenance: Provenance) -> ResultRow:
    """The row a ladder's `Stop` with a status of its own ends with (before any measurement): its status, reason,
    the stage that ended it and that stage's evidence."""
    return stop.at.row.model_copy(
        update=dict(
            status=stop.status,
            status_reason=stop.reason,
            failed_stage=stop.failed,
            stages=stop.at.row.stages + [stop.stage],
            status_evidence=stop.stage.evidence,
            provenance=provenance,
        )
    )


def crashed_row(
    job: QualifyJob, row: ResultRow, stage: StageName, error: Exception, commands: dict[str, RecordedCommand]
) -> ResultRow:
    """`row` ended `failed` at `stage` by an exception of ours raised outside any step (its start, its finishing):
    the exception on the row as a tool error, the traceback in its private folder; written."""
    from ..stages.protocol import tool_error

    facts = tool_error(job.row_dir(row.profile), stage, error)
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
        )
    )
    try:
        return finish_row(job, crashed, commands)
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
        return finish_row(job, bare, {})


def earned_reason(stages: list[StageResult]) -> str:
    """What a qualified row showed, gate by gate, in words (a gate that was not applicable is named as such; grading
    only where the run made it a gate, `--min-both-right`)."""
    by_name = {stage.name: stage for stage in stages}
    parts = ["complete AIPerf run, every request accounted for"]
    for name in ("timing", "grading", "output-check", "identity"):
        stage = by_name.get(name)
        if stage is not None and (name != "grading" or "--min-both-right" in stage.detail):
            parts.append(f"{name}: {stage.detail}")
    return "; ".join(parts)


def finish_row(job: QualifyJob, row: ResultRow, commands: dict[str, RecordedCommand]) -> ResultRow:
    """Scrub the row directory of secrets, then write execution.jsonl (aiperf_qual's evidence of its AIPerf run),
    command.txt and result.json, the row carrying the aiperf_qual verdict its status supports: the row is done."""
    row_dir = job.row_dir(row.profile)
    # The tools we ran (build, the family's tests and their artifacts, the server and its records) may write a
    # token they were given anywhere under the row: never kept. (Bundles live outside the row directory.)
    secrets = known_secrets(job.api_key)
    if secrets and row_dir.is_dir():  # with none to look for, the row's files are not walked at all
        scrub_secrets(sorted(p for p in row_dir.rglob("*") if p.is_file() and not p.is_symlink()), secrets)
    row = scrubbed_model(with_verdict(row.model_copy(update={"commands": commands})), secrets)
    write_execution(row_dir, row)
    write_text_atomic(row_dir / COMMAND_FILE, command_file_text(commands))
    write_model_atomic(row_dir / RESULT_FILE, row)
    return row


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
