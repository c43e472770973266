"""Qualification: result rows, their stages and gates, and the report over them."""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath
from typing import Any, Final, Literal

from pydantic import Field, field_validator

from .base import _Model
from .clips import ClipManifest, NoSampling, SamplingFacts
from .levels import LatencyStats, Sweep
from .served import ServedModel
from .transports import VideoTransport
from .variants import VariantKind

RESULT_SCHEMA: Final = "trtmc-videoqa.result/v1"

# The ladder (docs/architecture.md). With --endpoint (a server we did not build) it is planned -> endpoint-qualified.
QualificationStatus = Literal[
    "unsupported",
    "planned",
    "implemented",
    "family-validated",
    "aiperf-qualified",
    "endpoint-qualified",
    "blocked",
    "failed",
    "interrupted",  # a stop signal (Ctrl-C, SIGTERM, SIGHUP) ended the row: what it measured is kept and counted
    "unverified",  # set by a report only: the row claims a measured status its own folder shows no evidence for
]
# TRTMC aiperf_qual's verdicts and its summary's categories: another tool's vocabulary, kept in its own field.
# Listed worst first, in the order aiperf_qual's summary ranks them (its campaign.py CATEGORIES).
AiperfQualVerdict = Literal[
    "error",
    "config-error",
    "build-failed",
    "not-run",
    "acc-issue",
    "not-covered",
    "acc-inconclusive",
    "not-comparable",
    "perf-issue",
    "perf-inconclusive",
    "pass",
    "excluded",
]
StageName = Literal[
    "plan", "build", "correctness", "serve", "capability", "aiperf", "timing", "grading", "output-check", "identity"
]
STAGE_ORDER: tuple[str, ...] = StageName.__args__  # type: ignore[attr-defined]
StageStatus = Literal["passed", "failed", "blocked", "skipped", "rejected", "not-run", "interrupted"]
Mode = Literal["trtmc", "endpoint"]


class StageResult(_Model):
    name: StageName
    status: StageStatus
    detail: str = ""
    wall_s: float | None = None
    evidence: list[str] = Field(default_factory=list, description="artifact files, relative to the row directory")


class TransportAttempt(_Model):
    """One try of the capability check with one video transport, and how the server answered it."""

    transport: VideoTransport
    http_status: int | None = Field(default=None, description="None when nothing came back (or it was not sent)")
    accepted: bool
    detail: str = Field(default="", description="the server's answer, or why the request was not sent")


class RequestRow(_Model):
    session_id: str = Field(description="the request identity (AIPerf conversation_id)")
    x_request_id: str | None = None
    phase: str
    question_id: str
    clip_id: str
    repeat: int
    start_ns: int | None = None
    end_ns: int | None = None
    client_latency_ms: float | None = Field(default=None, description="AIPerf's end-to-end latency")
    ttft_ms: float | None = Field(
        default=None, description="time to first token, AIPerf's: only for a streamed answer (--streaming)"
    )
    itl_ms: float | None = Field(
        default=None,
        description="inter-token latency, AIPerf's: (latency - TTFT) / (output tokens - 1), only for a streamed answer "
        "of two tokens or more",
    )
    output_tokens: float | None = Field(
        default=None, description="the answer's output tokens as AIPerf counted them with the run's tokenizer"
    )
    server_task_ms: float | None = Field(default=None, description="the server's own task time for this request")
    server_task_invalid: str | None = Field(
        default=None,
        description="why the task time the server gave for this request was not believed (not a finite number from "
        "zero up to the request's own client latency): where it was read, the value, the rule it broke; "
        "server_task_ms is then None and the value is left out of every figure",
    )
    http_status: int | None = None
    error: str | None = None
    answer: str | None = None
    expected: str | None = None
    grade: str | None = None
    rule: str | None = None
    malformed: str | None = Field(
        default=None,
        description="the server's answer was no chat completion: where its shape breaks; it is not graded, and the "
        "output check counts it malformed",
    )
    invalid_values: list[str] = Field(
        default_factory=list,
        description="numbers the server gave for this request that cannot be held (non-finite, huge, a count that "
        "is no whole number): where, the value, the rule; each left out",
    )
    raw_answer: str | None = Field(
        default=None,
        description="where the answer's raw bytes were kept (row-relative, private/) because the text written here "
        "differs from what the server sent: a lone surrogate escaped as \\uXXXX, a number no JSON reader holds",
    )


class Accuracy(_Model):
    questions: int
    forward: float | None
    reversed: float | None
    both_right: float | None
    graded: int
    correct: int
    wrong: int
    unparseable: int
    empty: int
    incomplete: int
    per_question: list[dict[str, Any]] = Field(default_factory=list)


# What the output check makes of one profiling answer: only "resolved" (exactly one of its question's options, from a
# complete answer) passes; "declared-no-answer" passes only where the run's own plan declares it (the self-test);
# "malformed" is an answer that was no chat completion (RequestRow.malformed says where its shape breaks).
AnswerOutcome = Literal["resolved", "unparseable", "ambiguous", "empty", "cut-off", "malformed", "declared-no-answer"]


class AnswerExample(_Model):
    session_id: str
    question_id: str
    clip_id: str
    outcome: AnswerOutcome
    answer: str = Field(description="scrubbed of secrets and truncated")


class OutputCheck(_Model):
    """Every profiling answer complete and resolving to exactly one option; counts by outcome, a few examples."""

    passed: bool
    checked: int
    by_outcome: dict[str, int]
    examples: list[AnswerExample] = Field(default_factory=list, description="at most five, failing ones first")
    declared_no_answer: str | None = Field(
        default=None, description="the run plan's declaration that lets a 'cannot tell' answer pass, quoted"
    )


IdentityVerdict = Literal["held", "differs", "not-applicable", "blocked", "failed"]


class IdentityAnswer(_Model):
    route: str = Field(description="e.g. 'POST /v1/chat/completions' or 'POST /v1/tasks/generate'")
    url: str | None = None
    request_id: str
    answer: str | None = None
    http_status: int | None = None
    error: str | None = None
    request_sha: str | None = Field(
        default=None, description="sha256 of the body sent, in aiperf_qual's canonical JSON (native route)"
    )
    server_task_ms: float | None = Field(default=None, description="the server's task time, from its own records")
    raw_answer: str | None = Field(
        default=None,
        description="where the answer's raw bytes were kept (row-relative, private/) because the text written here "
        "differs from what the server sent (a lone surrogate escaped as \\uXXXX)",
    )


class IdentityPair(_Model):
    question_id: str
    clip_id: str
    chat: IdentityAnswer
    native: IdentityAnswer
    verdict: Literal["same", "different", "error"]


class SentClip(_Model):
    """One clip as a video-to-text Task's native requests carried it: its frames, in order, with their times."""

    clip_id: str
    frame_count: int
    frame_indices: list[int] = Field(description="which frames of the clip (0-based, presentation order)")
    timestamps_seconds: list[float] = Field(description="one per frame, nondecreasing; empty: timing unspecified")
    frames: str = Field(description="where its frames were written as PNG files, with times.json beside (row-relative)")


class NativeCapability(_Model):
    """A video-to-text Task's one capability request through its native Task route, tried because the HTTP chat
    route refused the video: the only route left."""

    chat_refusal: str = Field(description="what the chat route answered to the video request (capability.json)")
    native_route: str
    request_source: str | None = Field(default=None, description="where the request's shape is defined (file:line)")
    answer: IdentityAnswer
    sampling: str | None = None
    clips: list[SentClip] = Field(default_factory=list)


class IdentityCheck(_Model):
    """The native Task path and HTTP chat on the same served bundle, once per (question, clip), both greedy."""

    verdict: IdentityVerdict
    reason: str
    native_route: str | None = None
    request_fields: list[str] = Field(default_factory=list, description="the native request fields sent")
    request_source: str | None = Field(default=None, description="where those fields are defined (file:line)")
    normalisation: str = "whitespace collapsed, case folded"
    native_records: str | None = Field(
        default=None, description="where the native route's task times were read, joined by X-Request-ID, and how many"
    )
    pairs: list[IdentityPair] = Field(default_factory=list)
    sampling: str | None = Field(
        default=None, description="a video-to-text Task: which frames its native requests carried, and whose sampling"
    )
    clips: list[SentClip] = Field(default_factory=list, description="a video-to-text Task: each clip's frames sent")


class Provenance(_Model):
    tool_versions: dict[str, str | None]
    aiperf: dict[str, str] = Field(default_factory=dict)
    trtmc_commit: str | None = None
    bundle_digest: str | None = None
    workload: str
    workload_digest: str
    endpoint: str | None = None
    mode: Mode
    served_by: str | None = Field(default=None, description="what the server says it is (a test double says so)")
    server_version: str | None = None
    hardware: dict[str, Any] = Field(default_factory=dict)
    effective_precision: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    tokenizer: str | None = None
    inventory_digest: str | None = Field(default=None, description="sha256 of the run's inventory.json")


class ServingMechanics(_Model):
    """Which serving and qualification mechanics the row ran through, by name; where TRTMC's own are missing, why."""

    chat: str = Field(description="what served the workload's chat requests, and where their task times came from")
    native: str = Field(description="what served the native Task route of the identity check, or why none did")
    evidence: str = Field(description="the qualification evidence written, in whose format")


COMPARISON_LABEL: Final = "comparison (not a TRTMC capability)"


class ComparisonFacts(_Model):
    """An upstream implementation of a checkpoint, served by a server we started from its published package, and
    measured with the same workload: beside trtmc-server in a report, never a TRTMC model or a group status."""

    label: Literal["comparison (not a TRTMC capability)"] = COMPARISON_LABEL
    server: str = Field(description="the upstream server, e.g. 'transformers serve'")
    server_version: str | None = None
    checkpoint: str = Field(description="the hub id (or a local folder's name) the server was pinned to")
    revision: str | None = None
    compared_profile: str | None = Field(default=None, description="the TRTMC profile of the same checkpoint")
    device: str
    media_adaptation: str = Field(description="what was changed in the workload for this server, or 'none: ...'")


class RecordedCommand(_Model):
    """A command as a row records it, to be run again on another machine: the program by its name alone (never a
    path of this machine), its arguments as a list (secrets as placeholders the shell expands), and the notes said
    before it. command.txt and the reports write it as one shell-quoted line (common/shell_quoting.py)."""

    argv: list[str] = Field(min_length=1)
    notes: list[str] = Field(default_factory=list, description="sentences said before the command, each one line")

    @classmethod
    def of(cls, argv: list[str], notes: list[str] | None = None) -> RecordedCommand:
        """`argv` recorded: its program by name only."""
        program = PurePosixPath(argv[0]).name or argv[0]
        return cls(argv=[program, *argv[1:]], notes=notes or [])

    @classmethod
    def from_line(cls, text: str) -> RecordedCommand:
        """A command recorded as one line of text, as rows before the argv lists did: its leading `# ` lines are
        its notes, the rest split as the shell would (left whole where it cannot be)."""
        lines = text.split("\n")
        notes = [line.removeprefix("#").strip() for line in lines if line.startswith("#")]
        rest = " ".join(line for line in lines if not line.startswith("#")).strip()
        try:
            argv = shlex.split(rest)
        except ValueError:
            argv = [rest]
        return cls(argv=argv or [rest], notes=notes)


class ToolError(_Model):
    """An exception of ours that ended a row at a stage: a tool error, never the model's outcome (the run exits 1)."""

    stage: StageName = Field(description="the stage the row was in when it raised")
    type: str = Field(description="the exception's type")
    message: str = Field(description="its message on one line, escaped")
    traceback: str | None = Field(default=None, description="where the traceback was kept (row-relative, private)")


class Interruption(_Model):
    """A stop signal that ended a row (status `interrupted`): which, and the stage that was running."""

    signal: str = Field(description="SIGINT, SIGTERM or SIGHUP")
    stage: StageName = Field(description="the stage running when it came (the last one reached, while finishing)")


# The timing scope of a row whose server gave no task time: the stage records it, the reports say it.
TASK_TIME_NOT_REPORTED = "not reported by this server"
TASK_TIME_NOT_REPORTED_LINE = f"server task time: {TASK_TIME_NOT_REPORTED}; client latency stands alone"


class ResultRow(_Model):
    schema_version: Literal["trtmc-videoqa.result/v1"] = RESULT_SCHEMA
    profile: str
    family: str | None = None
    checkpoint: str | None = None
    revision: str | None = None
    verdict: str | None = None
    in_group: bool = True
    variant_kinds: list[VariantKind] = Field(default_factory=list)
    normal_profile: bool | None = Field(
        default=None, description="the one normal full-model profile of its checkpoint@revision; None off TRTMC"
    )
    profile_gap: str | None = None
    status: QualificationStatus
    status_reason: str
    status_evidence: list[str] = Field(default_factory=list, description="what earned the status: files and lines")
    failed_stage: StageName | None = None
    aiperf_qual_verdict: AiperfQualVerdict | None = Field(
        default=None, description="TRTMC aiperf_qual's verdict that (status, failed_stage) supports, by a fixed table"
    )
    stages: list[StageResult] = Field(default_factory=list)
    reference_self_test: bool = Field(default=False, description="served by the reference endpoint, a test double")
    comparison: ComparisonFacts | None = Field(
        default=None, description="set on a comparison row: an upstream server of the checkpoint, not TRTMC"
    )
    clips: dict[str, ClipManifest] = Field(default_factory=dict, description="clip manifests by clip id")
    sampling: SamplingFacts | NoSampling = Field(
        default_factory=dict, description="policy, where it happens, resolved frames; {} when nothing ran"
    )
    warmup_requests: int = 0
    profiling_requests_planned: int = 0
    profiling_requests_completed: int = 0
    failed_requests: int = 0
    requests: list[RequestRow] = Field(default_factory=list)
    client_latency: LatencyStats | None = None
    server_task_time: LatencyStats | None = None
    task_time_field: str | None = Field(default=None, description="the server field the task time was read from")
    timing_scope: str | None = Field(
        default=None,
        description="what the task time measures: the server's own word where it gives one, else the boundary "
        f"its field measures; '{TASK_TIME_NOT_REPORTED}' when it gave none",
    )
    requests_per_s: float | None = None
    sweep: Sweep | None = Field(
        default=None,
        description="every load level measured (concurrency or request rate), each with its runs' own figures and, "
        "over repeated runs, intervals; the figures above are the first level's first run (docs/throughput.md)",
    )
    streamed: bool = Field(
        default=False, description="AIPerf asked the server to stream its answers (--streaming, where it was used)"
    )
    streaming_note: str | None = Field(
        default=None, description="why --streaming was asked and not used on this row (a server that refuses it)"
    )
    ttft: LatencyStats | None = Field(
        default=None, description="time to first token (AIPerf's, per request) over the streamed profiling requests"
    )
    itl: LatencyStats | None = Field(
        default=None, description="inter-token latency (AIPerf's, per request) over the streamed profiling requests"
    )
    output_tokens_per_s: float | None = Field(
        default=None,
        description="output tokens (AIPerf's count, by the run's tokenizer) per second over the profiling window",
    )
    video_transport: VideoTransport | None = Field(
        default=None, description="how the clip was carried to the server (every request after the capability check)"
    )
    transport_attempts: list[TransportAttempt] = Field(
        default_factory=list, description="the capability check's tries, in order, one per transport"
    )
    served_model: ServedModel | None = Field(
        default=None, description="the model the server named in its answers (and /v1/models), beside --model"
    )
    accuracy: Accuracy | None = None
    output_check: OutputCheck | None = None
    identity: IdentityCheck | None = None
    serving_mechanics: ServingMechanics | None = None
    provenance: Provenance | None = None
    commands: dict[str, RecordedCommand] = Field(
        default_factory=dict, description="ours, the servers' and AIPerf's by name: argv lists, secrets as placeholders"
    )
    cache_key: str | None = None
    reused: bool = False
    tool_error: ToolError | None = Field(
        default=None, description="set when an exception of ours ended the row: its stage, type and message"
    )
    interruption: Interruption | None = Field(
        default=None, description="set on an `interrupted` row: the signal and the stage it stopped"
    )

    @field_validator("commands", mode="before")
    @classmethod
    def _commands_of_earlier_rows(cls, value: Any) -> Any:
        """A row written before commands were argv lists holds each as one line of text: read it as one."""
        if isinstance(value, dict):
            return {k: RecordedCommand.from_line(v) if isinstance(v, str) else v for k, v in value.items()}
        return value
