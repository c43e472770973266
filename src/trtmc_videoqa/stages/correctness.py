"""The `correctness` stage of a TRTMC row: the family's own correctness command, unchanged, on this exact bundle;
its evidence (the bundle it ran on, its JUnit report) checked, not assumed."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

from ..climb.checkpoint import Checkpoint, redacted, run_step
from ..climb.protocol import Climb, Stop, built
from ..common.progress import watched_log
from ..plan.trtmc_checks import correctness_problem
from ..results import StageResult
from ..results.layout import CORRECTNESS_DIR, CORRECTNESS_LOG
from ..trtmc.commands import correctness_argv, correctness_env, correctness_test, family_test_outcome


def correctness(cp: Checkpoint, climb: Climb) -> Climb | Stop:
    """The family's own correctness command, unchanged, on this exact bundle; its evidence checked, not assumed."""
    job, entry, bundle = cp.job, cp.entry, built(climb)
    test = correctness_test(cp.checkout, entry, cp.inventory.layout)
    if test is None:
        reason = f"family {entry.family!r} has no E2E correctness test in the checkout"
        blocked = StageResult(name="correctness", status="blocked", detail="no family E2E test found")
        return Stop(climb, blocked, "blocked", reason)
    # The family's command runs in the checkout: every path it is given is absolute, or a relative --out would
    # send its artifacts into the checkout and leave ours empty (the public rewrite makes the recorded one portable).
    artifacts = cp.row_dir.resolve() / CORRECTNESS_DIR
    shutil.rmtree(artifacts, ignore_errors=True)  # an earlier run's verdict or bundle must not speak for this one
    argv = correctness_argv(cp.toolchain, cp.checkout, test, entry, artifacts, engine_dir=bundle.path.parent.resolve())
    climb = replace(climb, commands=climb.commands | {"correctness": redacted(argv)})
    job.progress(f"{entry.profile}: the family's correctness tests")
    with watched_log(job.progress, f"{entry.profile}: correctness", cp.row_dir / CORRECTNESS_LOG):
        code, wall = run_step(
            argv,
            log=cp.row_dir / CORRECTNESS_LOG,
            timeout_s=job.stage_timeouts.correctness,
            cwd=cp.checkout,
            env=correctness_env(cp.checkout, dict(os.environ)),
        )
    if code != 0:
        why = "timed out" if code is None else f"exit {code}"
        failed = StageResult(name="correctness", status="failed", detail=why, wall_s=wall, evidence=[CORRECTNESS_LOG])
        return Stop(climb, failed, "failed", f"family correctness {why}", failed="correctness")
    problem = correctness_problem(bundle.path, bundle.digest, artifacts, entry.profile)
    if problem is not None:
        reason, detail, evidence = problem
        failed = StageResult(name="correctness", status="failed", wall_s=wall, detail=detail, evidence=evidence)
        return Stop(climb, failed, "failed", reason, failed="correctness")
    passed = StageResult(
        name="correctness",
        status="passed",
        wall_s=wall,
        detail=f"{test.relative_to(cp.checkout)} on {bundle.digest}: {_test_counts(artifacts)}",
        evidence=[CORRECTNESS_LOG],
    )
    row = climb.row.model_copy(
        update=dict(
            status="family-validated",
            status_reason="the family's own correctness passed on this bundle",
            stages=climb.row.stages + [passed],
        )
    )
    return replace(climb, row=row)


def _test_counts(artifacts: Path) -> str:
    outcome = family_test_outcome(artifacts)  # read again: correctness_problem has just checked it exists
    return outcome.counts() if outcome is not None else "no JUnit report"
