"""The inventory's schema: one CheckpointEntry per manifest, with its verdict and evidence."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from .base import _Model
from .variants import VariantKind

INVENTORY_SCHEMA: Final = "trtmc-videoqa.inventory/v2"
# v2 (issue 27): what TRTMC itself declares (declared_tasks, family_declarations, group_line, each row's
# declaration and family_tasks). A v1 inventory still reads: the new fields default to empty.
InventorySchema = Literal["trtmc-videoqa.inventory/v1", "trtmc-videoqa.inventory/v2"]

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


class NativeRequest(_Model):
    """The request a Task's native call takes, as the checkout's own task adapter builds it (read, never run)."""

    operation: str = Field(description="the Task API operation, e.g. 'generate'")
    fields: list[str] = Field(description="the request fields the adapter builds for this Task")
    clip_field: str | None = Field(default=None, description="the field that carries a whole clip, if any")
    prompt_field: str | None = Field(default=None, description="the field that carries the question, if any")
    evidence: Evidence | None = None
    template: Any = Field(
        default=None,
        description="the request the branch returns, as a JSON tree: constants as written, each testcase value a "
        "{'$slot': {...}} naming the testcase keys it reads and the role the tool fills it with "
        "(inventory/request_template.py); null where the branch returns no dict literal",
    )
    video_view: str | None = Field(
        default=None, description="where the frame and time names of the video view were read (file:line)"
    )


class DeclaredTaskFact(_Model):
    """A Task id the checkout's own headers declare (inventory/task_registry.py)."""

    task: str
    file: str
    line: int
    side: Literal["api", "runtime"] = Field(description="the C API's #define, or a runtime kTask constant")
    known: bool = Field(description="whether the tool's Task contracts know it; else its contract is inferred")
    inputs: list[str]
    output: str
    video_to_text: bool


class FamilyDeclarationFact(_Model):
    """What a family's support.py declares and its runtime binds (inventory/family_declarations.py)."""

    family: str
    file: str | None = Field(description="families/<family>/support.py; None when the family has none")
    tasks: list[str] = Field(default_factory=list)
    conditions: list[str] = Field(default_factory=list, description="'<task>: <condition> (line N)' for each")
    matches: dict[str, list[str]] = Field(default_factory=dict)
    bound: list[str] = Field(default_factory=list, description="Tasks its runtime implements or binds")
    unreadable: list[str] = Field(default_factory=list)


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
    normal_profile: bool = Field(
        default=False, description="the one normal full-model profile of its checkpoint@revision (docs/architecture.md)"
    )
    profile_gap: str | None = Field(
        default=None, description="'no full-model profile in this checkout' when every profile is a smoke variant"
    )
    native_request: NativeRequest | None = Field(
        default=None, description="the Task's native request, from the checkout's task adapter"
    )
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
    declaration: str | None = Field(
        default=None, description="what the family's support.py and runtime declare of this row's Task (v2)"
    )
    family_tasks: list[str] = Field(default_factory=list, description="the Tasks the family's support.py declares")

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


GroupChangeKind = Literal["joined", "left", "verdict", "catalog_status", "revision", "precision", "checkpoint"]


class GroupChange(_Model):
    """One in-group change of one row between the pinned commit and main."""

    profile: str
    kind: GroupChangeKind
    old: str | None
    new: str | None
    variant: bool = Field(description="the row (on main, else pinned) is a variant, never counted as a model")
    new_capable: bool = Field(description="the row joined the group or changed verdict, and is temporal-video-qa now")


class OutsideCounts(_Model):
    added: int
    removed: int
    changed: int


class GroupReconciliation(_Model):
    """`trtmc-videoqa refresh`: the group's changes between the pinned commit and main first, the rest counted."""

    schema_version: Literal["trtmc-videoqa.reconciliation/v1"] = "trtmc-videoqa.reconciliation/v1"
    pinned_commit: str
    pinned_commit_source: str = Field(description="where the pinned side's commit came from (git, or the pin file)")
    main_ref: str
    main_commit: str
    line: str = Field(description="the one line reconciliation.md opens with")
    changes: list[GroupChange]
    new_capable: list[str] = Field(description="profiles that became or arrived temporal-video-qa")
    flagged_verdicts: list[str] = Field(description="profiles that became or arrived temporal-video-qa or partial")
    new_video_tasks: list[str] = Field(
        default_factory=list, description="video-to-text Tasks main's API declares that the pinned commit's did not"
    )
    new_video_families: list[str] = Field(
        default_factory=list, description="'<family>: <tasks>' for families newly declaring or binding one"
    )
    outside: OutsideCounts
    by_kind: dict[str, int]


# An inventory.json of ours holds about 4 kB per manifest (a 20,000-manifest tree writes 77 MB): `inventory --against`
# and `report` read one of up to 1 GiB, a quarter of a million manifests, and refuse more (a device or a stray file of
# gigabytes is no inventory of ours).
MAX_INVENTORY_BYTES = 1 << 30


class Inventory(_Model):
    schema_version: InventorySchema = INVENTORY_SCHEMA
    tool_version: str
    checkout: str
    layout: Layout
    layout_description: str
    commit: str = Field(description="the checkout's HEAD from git, else the commit the caller named, else 'unknown'")
    pinned_commit: str
    matches_pin: bool | None = Field(description="None when the commit is unknown")
    lacking: list[str] = Field(default_factory=list, description="what the checkout lacked, and what that costs")
    skipped: list[Skipped] = Field(default_factory=list)
    serving: ServingFacts
    entries: list[CheckpointEntry]
    summary: Summary
    reconciliation: Reconciliation | None = None
    declared_tasks: list[DeclaredTaskFact] = Field(default_factory=list, description="the headers' Task ids (v2)")
    family_declarations: list[FamilyDeclarationFact] = Field(default_factory=list)
    group_line: str | None = Field(default=None, description="the furthest state the group reached, in one line")
