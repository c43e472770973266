"""The job: what every row of one run shares (the output folder, the workload and its facts, the run's settings,
the tools found), and the stage a TRTMC row is in now."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..common.safe_names import row_dir_name
from ..results import StageName
from ..results.layout import CHECKPOINTS_DIR

if TYPE_CHECKING:
    from ..aiperf.locate import AiperfInstall
    from ..workloads import Workload
    from ..workloads.artifacts import WorkloadFacts
    from .settings import RunSettings


@dataclass
class QualifyJob:
    """What every row of one run shares."""

    out: Path
    workload: Workload
    facts: WorkloadFacts  # the workload's clip manifests and sampling, as prepare_workload_artifacts made them
    settings: RunSettings
    aiperf: AiperfInstall
    tokenizer: Path
    tokenizer_label: str
    command: str  # our own command line, secrets as placeholders
    force: bool = False
    api_key: str | None = None
    bundle_cache: Path | None = None
    stage_timeouts: dict[str, float] = field(
        default_factory=lambda: {"build": 7200.0, "correctness": 3600.0, "startup": 600.0}
    )
    progress: Callable[[str], None] = lambda _: None
    stage: StageName = "plan"  # the stage a TRTMC row is in now: where an unexpected error is recorded
    inventory_digest: str | None = None  # of the TRTMC run's inventory.json; None off TRTMC
    # Clip id -> its URL on the run's loopback clip server (the http transport); empty when none runs. Never in a
    # cache key: its port changes every run.
    clip_urls: dict[str, str] = field(default_factory=dict)

    def row_dir(self, profile: str) -> Path:
        return self.out / CHECKPOINTS_DIR / row_dir_name(profile)
