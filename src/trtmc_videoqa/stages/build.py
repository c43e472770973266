"""The `build` stage of a TRTMC row: `trtmc build` for the checkpoint, unless the bundle cache (by profile, commit
and revision) already has it; then the bundle's digest and effective precision."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..climb.checkpoint import Checkpoint, redacted, run_step
from ..climb.protocol import Bundle, Climb, Stop
from ..common.progress import watched_log
from ..results import StageResult
from ..results.layout import BUILD_LOG, BUNDLES_DIR
from ..trtmc.commands import build_argv, bundle_header, bundle_path, effective_precision, file_digest, partial_path


def build(cp: Checkpoint, climb: Climb) -> Climb | Stop:
    """The bundle, built unless the cache (by profile, commit and revision) has it; then its digest and precision."""
    job, entry = cp.job, cp.entry
    path = bundle_path(job.bundle_cache or (job.out / BUNDLES_DIR), entry, cp.inventory.commit)
    climb = replace(climb, commands=climb.commands | {"build": redacted(build_argv(cp.toolchain, entry, path))})
    if not path.is_file():
        failed = _run_build(cp, path)
        if failed is not None:
            return Stop(climb, failed, "failed", f"build {failed.detail}", failed="build")
    bundle = Bundle(path, file_digest(path))
    passed = StageResult(
        name="build",
        status="passed",
        detail=f"{path.name} {bundle.digest}",
        evidence=[BUILD_LOG] if (cp.row_dir / BUILD_LOG).exists() else [],
    )
    row = climb.row.model_copy(
        update=dict(
            status="implemented", status_reason="bundle built; workload adapted", stages=climb.row.stages + [passed]
        )
    )
    precision = effective_precision(bundle_header(path), entry.precision)
    return replace(climb, row=row, precision=precision, bundle=bundle)


def _run_build(cp: Checkpoint, bundle: Path) -> StageResult | None:
    """Build under a temporary name, renamed only when the build succeeded: a killed or timed-out build never
    leaves a file that a later run would take for a finished bundle. The failed stage, or None once built."""
    cp.job.progress(f"{cp.entry.profile}: building the bundle")
    bundle.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(bundle)
    try:
        with watched_log(cp.job.progress, f"{cp.entry.profile}: build", cp.row_dir / BUILD_LOG):
            code, wall = run_step(
                build_argv(cp.toolchain, cp.entry, partial),
                log=cp.row_dir / BUILD_LOG,
                timeout_s=cp.job.stage_timeouts.build,
            )
        if code == 0 and partial.is_file():
            partial.replace(bundle)
    finally:
        partial.unlink(missing_ok=True)
    if bundle.is_file():
        return None
    why = "timed out" if code is None else f"exit {code}" if code else "no bundle written"
    return StageResult(name="build", status="failed", detail=why, wall_s=wall, evidence=[BUILD_LOG])
