"""Which frames a route that asks the caller to choose them gets: the family's own sampling, else the workload's.

Frame count, FPS and sampling defaults belong to the family. What the tool can read of them without running the
family is the checkpoint's video processor configuration in the local hub cache (``video_preprocessor_config.json``,
else ``preprocessor_config.json``): ``do_sample_frames: false`` (every frame), ``num_frames`` (that many, spread
evenly) or ``fps`` (with ``min_frames`` / ``max_frames``). The family's code is not read for it. Where none of these
is there, the workload's own first policy is used, and the row says the family declared none. Never downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...hub.cache import hub_snapshot, json_object
from ...media.sampling import SamplingPolicy

if TYPE_CHECKING:
    from ...results import CheckpointEntry
    from ...workloads.loading import Workload

PROCESSOR_CONFIGS = ("video_preprocessor_config.json", "preprocessor_config.json")
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True)
class FrameChoice:
    policy: SamplingPolicy
    source: str  # whose sampling it is, in words, with where it was read


def frame_choice(entry: CheckpointEntry, workload: Workload) -> FrameChoice:
    """The family's sampling where its processor configuration is local; else the workload's first policy."""
    snapshot = hub_snapshot(entry)
    for name in PROCESSOR_CONFIGS:
        path = snapshot / name if snapshot is not None else None
        config = json_object(path, MAX_CONFIG_BYTES) if path is not None else None
        policy, keys = _family_policy(config) if config is not None else (None, "")
        if policy is not None:
            where = f"{name} of {entry.checkpoint}@{(entry.revision or '?')[:12]}"
            return FrameChoice(policy, f"the family's processor configuration ({where}: {keys}), as {policy.spec}")
    workload_policy = workload.sampling_policies()[0]
    policy = workload_policy.model_copy(update={"where": "client"})
    return FrameChoice(
        policy,
        f"the workload's policy {workload_policy.spec}: the family declares none (no video processor configuration "
        f"of {entry.checkpoint or 'the checkpoint'} at its pinned revision in the local hub cache)",
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _family_policy(config: dict[str, Any]) -> tuple[SamplingPolicy | None, str]:
    if config.get("do_sample_frames") is False:
        return SamplingPolicy(mode="all", where="client"), "do_sample_frames=false"
    frames = _count(config.get("num_frames"))
    if frames is not None:
        return SamplingPolicy(mode="uniform", frames=frames, where="client"), f"num_frames={frames}"
    fps = config.get("fps")
    if isinstance(fps, int | float) and not isinstance(fps, bool) and fps > 0:
        low, high = _count(config.get("min_frames")) or 1, _count(config.get("max_frames"))
        if high is not None and high < low:
            return None, ""
        policy = SamplingPolicy(mode="fps", fps=float(fps), min_frames=low, max_frames=high, where="client")
        bounds = f", min_frames={low}" + (f", max_frames={high}" if high is not None else "")
        return policy, f"fps={fps}{bounds}"
    return None, ""
