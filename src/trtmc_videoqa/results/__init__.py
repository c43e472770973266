"""Versioned schemas of the artifacts: the inventory (and, later, result rows and the report).

This module imports nothing of ours, so every other room (and the report rebuilt from artifacts alone) can use it.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# The schemas live in modules by subject; every name is importable from here. The inventory's load on first use: a
# run against an endpoint never reads an inventory, and they cost about 15 ms to build.
from .clips import (  # noqa: F401
    BitRateSource,
    ClipManifest,
    CodecInfo,
    DurationSource,
    FpsSource,
    FrameCountMethod,
    NoSampling,
    PickedFrames,
    ProbeTool,
    SamplingFacts,
    SamplingWhere,
)
from .differences import ComparedFigure, ComparedRow, DifferenceVerdict, FigureDifference, RowDifference  # noqa: F401
from .levels import TINY_WORKLOAD_NOTE, FigureInterval, LoadAxis, LoadLevel, RunFigures, Sweep  # noqa: F401
from .reports import (  # noqa: F401
    REPORT_SCHEMA,
    GroupLine,
    GroupStatus,
    GroupVerdict,
    InterruptedAttempt,
    Report,
    UnreadableRow,
    json_schemas,
)
from .rows import (  # noqa: F401
    COMPARISON_LABEL,
    RESULT_SCHEMA,
    STAGE_ORDER,
    Accuracy,
    AiperfQualVerdict,
    AnswerExample,
    AnswerOutcome,
    ComparisonFacts,
    IdentityAnswer,
    IdentityCheck,
    IdentityPair,
    IdentityVerdict,
    Interruption,
    LatencyStats,
    Mode,
    NativeCapability,
    OutputCheck,
    Provenance,
    QualificationStatus,
    RecordedCommand,
    RequestRow,
    ResultRow,
    SentClip,
    ServingMechanics,
    StageName,
    StageResult,
    StageStatus,
    ToolError,
    TransportAttempt,
)
from .served import ServedModel, ServedModelVerdict  # noqa: F401
from .transports import TransportChoice, VideoTransport  # noqa: F401
from .variants import VariantKind  # noqa: F401

if TYPE_CHECKING:
    from .inventory import (  # noqa: F401
        INVENTORY_SCHEMA,
        LAYOUT_DESCRIPTIONS,
        VERDICTS,
        CatalogStatus,
        CheckpointEntry,
        DeclaredTaskFact,
        Evidence,
        FamilyDeclarationFact,
        FieldChange,
        GapEvidence,
        GroupChange,
        GroupChangeKind,
        GroupReconciliation,
        Inventory,
        Layout,
        MediaControl,
        NativeRequest,
        OutsideCounts,
        Reconciliation,
        ServingFacts,
        Skipped,
        Summary,
        TaskContract,
        TestcaseFacts,
        Verdict,
    )

_INVENTORY_NAMES = frozenset(
    {
        "INVENTORY_SCHEMA",
        "LAYOUT_DESCRIPTIONS",
        "VERDICTS",
        "CatalogStatus",
        "CheckpointEntry",
        "DeclaredTaskFact",
        "Evidence",
        "FamilyDeclarationFact",
        "FieldChange",
        "GapEvidence",
        "GroupChange",
        "GroupChangeKind",
        "GroupReconciliation",
        "Inventory",
        "Layout",
        "MediaControl",
        "NativeRequest",
        "OutsideCounts",
        "Reconciliation",
        "ServingFacts",
        "Skipped",
        "Summary",
        "TaskContract",
        "TestcaseFacts",
        "Verdict",
    }
)


def __getattr__(name: str) -> Any:
    """An inventory name, loaded on first use (PEP 562; common/lazy.py's way, written here: results/ imports
    nothing of ours)."""
    if name not in _INVENTORY_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.inventory"), name)
    globals()[name] = value
    return value
