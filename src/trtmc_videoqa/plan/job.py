"""The job: what every row of one run shares (the output folder, the workload and its facts, the run's settings,
the tools found), built once, before the first row, and never changed: a frozen value."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..common.progress import silent
from ..common.safe_names import row_dir_name
from ..results import RecordedCommand
from ..results.layout import CHECKPOINTS_DIR

if TYPE_CHECKING:
    from ..aiperf.locate import AiperfInstall
    from ..workloads import Workload
    from ..workloads.artifacts import WorkloadFacts
    from .settings import RunSettings

# Seconds a TRTMC build and the family's correctness command may take (the startup limit is a run setting).
BUILD_TIMEOUT_S = 7200.0
CORRECTNESS_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class StageTimeouts:
    """Wall limits of the steps a TRTMC row runs (seconds)."""

    startup: float
    build: float = BUILD_TIMEOUT_S
    correctness: float = CORRECTNESS_TIMEOUT_S


@dataclass(frozen=True)
class QualifyJob:
    """What every row of one run shares."""

    workload: Workload
    facts: WorkloadFacts  # the workload's clip manifests and sampling, as prepare_workload_artifacts made them
    settings: RunSettings
    aiperf: AiperfInstall
    tokenizer: Path
    tokenizer_label: str
    command: RecordedCommand  # our own command line, secrets as placeholders
    api_key: str | None = None
    progress: Callable[[str], None] = silent
    inventory_digest: str | None = None  # of the TRTMC run's inventory.json; None off TRTMC
    # Clip id -> its URL on the run's loopback clip server (the http transport); empty when none runs. Never in a
    # cache key: its port changes every run.
    clip_urls: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def out(self) -> Path:
        return self.settings.out

    @property
    def force(self) -> bool:
        return self.settings.force

    @property
    def bundle_cache(self) -> Path | None:
        return self.settings.bundle_cache

    @property
    def stage_timeouts(self) -> StageTimeouts:
        return StageTimeouts(startup=self.settings.startup_timeout_s)

    def row_dir(self, profile: str) -> Path:
        return self.out / CHECKPOINTS_DIR / row_dir_name(profile)
