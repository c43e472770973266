"""Versioned schemas of the artifacts: the inventory (and, later, result rows and the report).

This module imports nothing of ours, so every other room (and the report rebuilt from artifacts alone) can use it.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

INVENTORY_SCHEMA: Final = "trtmc-videoqa.inventory/v1"

# What the source shows about the capability (docs/architecture.md, "The vocabularies").
Verdict = Literal[
    "temporal-video-qa",
    "partial",
    "image-only",
    "video-generation",
    "segmentation-tracking",
    "not-generative",
    "text-or-speech",
    "invalid",
]
VERDICTS: tuple[str, ...] = Verdict.__args__  # type: ignore[attr-defined]

# TRTMC's own catalog.py status for the newer layout; "n/a" for the older layout, which has no catalog;
# "unknown" when the checkout lacks the Task registry the rule needs (the reason says so).
CatalogStatus = Literal["ready", "distributed", "unsupported", "invalid", "n/a", "unknown"]

Layout = Literal["families", "e2e-models"]
LAYOUT_DESCRIPTIONS: dict[str, str] = {
    "families": "newer layout: families/<family>/tests/manifests/*.json",
    "e2e-models": "older layout: tests/e2e/models/<family>/manifests/*.json + MODEL.toml",
}

VariantKind = Literal["tp", "cp", "quantized", "l0", "regression", "random", "partial", "local-only"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Model):
    """One line of the checkout that shows a fact."""

    file: str = Field(description="path relative to the checkout root")
    line: int | None = Field(default=None, description="1-based line number; None when the fact is the file itself")
    excerpt: str = ""
    shows: str = Field(default="", description="what this line shows, in words")


class GapEvidence(_Model):
    """The search that found nothing: which patterns, and the files where they had zero hits."""

    searched_for: str
    patterns: list[str]
    files_without_hits: list[str]


class MediaControl(_Model):
    name: str
    value: Any
    scope: str = Field(description="'manifest' or 'testcase:<name>'")
    evidence: Evidence


class TestcaseFacts(_Model):
    name: str
    selected_task: str | None = None
    ci_tier: str | None = None
    premerge: bool | None = None
    l0: bool = False
    media_inputs: list[str] = Field(default_factory=list, description="media input fields this testcase carries")


class TaskContract(_Model):
    """What a Task takes and gives, from TRTMC's Task contract (or inferred from its name, and then said so)."""

    inputs: list[str]
    output: str
    source: str = Field(description="where this contract comes from")


class CheckpointEntry(_Model):
    """One row per manifest."""

    profile: str
    family: str
    manifest: str
    checkpoint: str | None = Field(default=None, description="Hugging Face id")
    revision: str | None = None
    bundle: str | None = Field(default=None, description="the manifest's bundle file name, under the engine directory")
    precision: str | None = None
    task: str | None = Field(default=None, description="native Task (newer layout) or task strategy (older layout)")
    task_field: Literal["task", "task_strategy"] | None = None
    runtime_strategy: str | None = None
    operation: str | None = Field(default=None, description="Task API operation from TRTMC's task adapters")
    contract: TaskContract | None = None
    variant_kinds: list[VariantKind] = Field(default_factory=list)
    catalog_status: CatalogStatus
    catalog_reason: str = ""
    in_group: bool
    group_reason: str
    media_controls: list[MediaControl] = Field(default_factory=list)
    build_settings: dict[str, Any] = Field(default_factory=dict, description="the manifest's build settings")
    testcases: list[TestcaseFacts] = Field(default_factory=list)
    verdict: Verdict
    gap: str | None = Field(default=None, description="the capability gap, in words; None for temporal-video-qa")
    ambiguous: bool = False
    ambiguity: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    gap_evidence: list[GapEvidence] = Field(default_factory=list)
    error: str | None = Field(default=None, description="the parse error of an invalid manifest")

    @property
    def is_variant(self) -> bool:
        return bool(self.variant_kinds)


class Skipped(_Model):
    path: str
    reason: str


class ServingFacts(_Model):
    """What the checkout's trtmc-server accepts as chat content, read from its source."""

    source: str | None = None
    chat_content_types: list[str] = Field(default_factory=list)
    accepts_video: bool | None = None
    evidence: list[Evidence] = Field(default_factory=list)


class Summary(_Model):
    rows: int
    in_group: int
    by_verdict: dict[str, int]
    in_group_by_verdict: dict[str, int]
    models: int = Field(description="distinct checkpoints (id + revision) over rows that are not variants")
    variant_rows: int
    capable: list[str] = Field(description="profiles with a clip-plus-question capability (temporal-video-qa)")


class FieldChange(_Model):
    profile: str
    field: str
    old: Any
    new: Any


class Reconciliation(_Model):
    against: str
    added: list[str]
    removed: list[str]
    changed: list[FieldChange]


class Inventory(_Model):
    schema_version: Literal["trtmc-videoqa.inventory/v1"] = INVENTORY_SCHEMA
    tool_version: str
    checkout: str
    layout: Layout
    layout_description: str
    commit: str = Field(description="the checkout's HEAD from git, else 'unknown'")
    pinned_commit: str
    matches_pin: bool | None = Field(description="None when the commit is unknown")
    lacking: list[str] = Field(default_factory=list, description="what the checkout lacked, and what that costs")
    skipped: list[Skipped] = Field(default_factory=list)
    serving: ServingFacts
    entries: list[CheckpointEntry]
    summary: Summary
    reconciliation: Reconciliation | None = None


# --- clip facts: the probe's manifest of each clip and the frames a sampling policy picks -----------------------

FrameCountMethod = Literal["packets, first and last frame decoded", "decoded all frames"]
DurationSource = Literal["container", "stream", "last pts + frame duration"]
FpsSource = Literal["average_rate", "guessed_rate", "base_rate", "frames / duration"]
BitRateSource = Literal["stream", "derived: size*8/duration"]
SamplingWhere = Literal["client", "server"]


class CodecInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    decoder: str  # the FFmpeg decoder that read it (AV1 shows libdav1d)
    name: str  # canonical codec name (av1, h264)
    long_name: str
    profile: str | None
    pix_fmt: str | None


class ProbeTool(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    av: str
    ffmpeg: str
    libraries: dict[str, str]  # libavcodec -> "62.28.102", ...


class ClipManifest(BaseModel):
    """The container's claims next to what was counted and decoded; a disagreement is flagged, not hidden."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    sha256: str  # of the file bytes: the clip's primary identity
    bytes: int
    container: str  # FFmpeg demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2"
    container_long_name: str
    codec: CodecInfo
    width: int
    height: int
    fps: str  # exact fraction, "30000/1001"
    fps_float: float
    fps_source: FpsSource
    duration_s: float
    duration_source: DurationSource
    start_time_s: float
    frames_declared: int  # stream.frames; 0 when the container does not say (webm, mkv, MPEG-PS)
    frames_counted: int
    frame_count_method: FrameCountMethod
    frames_mismatch: bool
    frames_mismatch_message: str | None
    first_pts_s: float
    last_pts_s: float
    frames_span_s: float  # last pts + frame duration - first pts: what the frames cover, whatever the header says
    bit_rate: int
    bit_rate_source: BitRateSource
    audio: str | None  # codec of the first audio track, None without one
    decoded_rgb_sha256: str | None = None  # secondary identity, only when asked for
    probe_tool: ProbeTool


class PickedFrames(_Model):
    """The frames a sampling policy picks from one clip."""

    indices: list[int]
    timestamps_s: list[float]
    rule: str


def _absent(value: object) -> bool:
    return value is None


class SamplingFacts(_Model):
    """The workload's declared sampling policy resolved on each clip (workload/<name>/sampling.json); a row of a
    server that states its own policy adds the one it applies, and says so when the two differ."""

    policy: str
    where: SamplingWhere
    clips: dict[str, PickedFrames]
    note: str
    # Left out of the JSON when not stated, as sampling.json has neither.
    applied_by_server: str | None = Field(default=None, exclude_if=_absent)
    mismatch: str | None = Field(default=None, exclude_if=_absent)


# A row that ran nothing (unsupported, held back, crashed before its workload facts) records no sampling: {}.
NoSampling = Annotated[dict[str, Any], Field(max_length=0)]


# --- qualification ----------------------------------------------------------------------------------------------

RESULT_SCHEMA: Final = "trtmc-videoqa.result/v1"
REPORT_SCHEMA: Final = "trtmc-videoqa.report/v1"

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
]
StageName = Literal["plan", "build", "correctness", "serve", "capability", "aiperf", "grading"]
StageStatus = Literal["passed", "failed", "blocked", "skipped", "rejected", "not-run"]
Mode = Literal["trtmc", "endpoint"]


class StageResult(_Model):
    name: StageName
    status: StageStatus
    detail: str = ""
    wall_s: float | None = None
    evidence: list[str] = Field(default_factory=list, description="artifact files, relative to the row directory")


class LatencyStats(_Model):
    """Steady-state figures over successful profiling requests; a percentile only with enough samples for it."""

    count: int
    mean_ms: float | None = None
    p50_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None


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
    server_task_ms: float | None = Field(default=None, description="the server's own task time for this request")
    http_status: int | None = None
    error: str | None = None
    answer: str | None = None
    expected: str | None = None
    grade: str | None = None
    rule: str | None = None


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


class ResultRow(_Model):
    schema_version: Literal["trtmc-videoqa.result/v1"] = RESULT_SCHEMA
    profile: str
    family: str | None = None
    checkpoint: str | None = None
    revision: str | None = None
    verdict: str | None = None
    in_group: bool = True
    status: QualificationStatus
    status_reason: str
    status_evidence: list[str] = Field(default_factory=list, description="what earned the status: files and lines")
    failed_stage: StageName | None = None
    stages: list[StageResult] = Field(default_factory=list)
    reference_self_test: bool = Field(default=False, description="served by the reference endpoint, a test double")
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
    requests_per_s: float | None = None
    accuracy: Accuracy | None = None
    provenance: Provenance | None = None
    commands: dict[str, str] = Field(default_factory=dict, description="ours and AIPerf's, secrets as placeholders")
    cache_key: str | None = None
    reused: bool = False


class Report(_Model):
    schema_version: Literal["trtmc-videoqa.report/v1"] = REPORT_SCHEMA
    title: str
    generated_by: str
    sources: list[str] = Field(description="artifact directories the report was built from")
    reference_self_test: bool
    rows: list[ResultRow]
    counts: dict[str, int]


def json_schemas() -> dict[str, dict[str, Any]]:
    """The committed JSON Schemas, by file name (tests check the committed copies are current)."""
    return {
        "inventory.schema.json": Inventory.model_json_schema(),
        "result.schema.json": ResultRow.model_json_schema(),
        "report.schema.json": Report.model_json_schema(),
    }
