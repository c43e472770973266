"""The TRTMC ladder: one capable checkpoint of a TRTMC checkout, planned -> aiperf-qualified.

    plan -> build -> correctness (the family's own, same bundle) -> serve (trtmc-server) -> capability (chat; a
    video Task's native route where chat refuses the video) -> aiperf -> timing -> grading -> output-check -> identity
    (trtmc-server's chat against perf_serving's Task route)

The ladder is data: a tuple of steps, each a stage of stages/ with the one signature `(row, climb) -> Climb | Stop`.
The row is finished once, by rows/end.py, from whichever stage ended it.
"""

from __future__ import annotations

from pathlib import Path

from ..aiperf.tokenizer import LOCAL_TOKENIZER_NAME, has_tokenizer
from ..climb.checkpoint import Checkpoint
from ..climb.protocol import Gates, Step
from ..hub.cache import hub_snapshot, revision_check
from ..plan.cache_keys import reusable, trtmc_key
from ..plan.job import QualifyJob
from ..results import CheckpointEntry, Inventory, ResultRow
from ..rows.end import Earning, climb_and_finish
from ..rows.provenance import LadderFacts
from ..stages.aiperf import aiperf
from ..stages.build import build
from ..stages.correctness import correctness
from ..stages.grading import grading
from ..stages.identity.trtmc_native import trtmc_identity
from ..stages.output_check import output_check
from ..stages.plan_checks import check_plan, planned
from ..stages.serve import serve
from ..stages.timing import timing
from ..stages.trtmc_capability import trtmc_capability
from ..trtmc.commands import Toolchain

TRTMC_LADDER: tuple[Step[Checkpoint], ...] = (
    Step("plan", check_plan),
    Step("build", build),
    Step("correctness", correctness),
    Step("serve", serve),
    Step("capability", trtmc_capability),
    Step("aiperf", aiperf),
    Step("timing", timing),
    Step("grading", grading),
    Step("output-check", output_check),
    Step("identity", trtmc_identity),
)


def qualify_entry(
    job: QualifyJob, entry: CheckpointEntry, inventory: Inventory, checkout: Path, toolchain: Toolchain, name: str
) -> ResultRow:
    """One capable checkpoint through every step, as far as this machine and the evidence allow; `name` is its
    row's (its profile, unless another family's manifest names the same one: `plan/trtmc_checks.row_names`)."""
    tokenizer, tokenizer_label = checkpoint_tokenizer(job, entry)
    key = trtmc_key(job, entry, inventory, tokenizer_label)
    previous = reusable(job.row_dir(name), key, job.force)
    if previous is not None:
        job.progress(f"{name}: unchanged inputs, result reused")
        return previous
    cp = Checkpoint(
        job=job,
        profile=name,
        tokenizer=tokenizer,
        gates=Gates(require_task_time=True),  # on trtmc-server every task time is a gate
        entry=entry,
        inventory=inventory,
        checkout=checkout,
        toolchain=toolchain,
        tokenizer_label=tokenizer_label,
        revision_check=revision_check(entry),
    )
    start = planned(cp, key)  # a server a stage starts stops when the ladder ends, before the row is written
    return climb_and_finish(cp, TRTMC_LADDER, start, _earning(cp))


def _earning(cp: Checkpoint) -> Earning:
    """What a TRTMC row earns: aiperf-qualified at most; its provenance names the checkout's commit and the build
    settings, and once measured the server it served (rows/provenance.py)."""
    facts = LadderFacts(
        mode="trtmc",
        tokenizer=cp.tokenizer_label,
        settings={"build": cp.entry.build_settings, "revision_check": cp.revision_check},
        trtmc_commit=cp.inventory.commit,
        server_version=f"trtmc-server built from TRTMC {cp.inventory.commit}",
    )
    return Earning("aiperf-qualified", facts)


def checkpoint_tokenizer(job: QualifyJob, entry: CheckpointEntry) -> tuple[Path, str]:
    """The row's tokenizer: one given with --tokenizer, else the checkpoint's own from the hub cache at its pinned
    revision, else the run's small local one. Token counts only; never a download."""
    snapshot = hub_snapshot(entry)
    if (
        job.tokenizer_label.startswith(LOCAL_TOKENIZER_NAME)
        and snapshot is not None
        and has_tokenizer(snapshot)
        and "auto_map" not in (snapshot / "tokenizer_config.json").read_text(errors="replace")
    ):
        # (a tokenizer that needs the checkpoint's own code would need trust_remote_code: AIPerf is not given it)
        return snapshot, f"the checkpoint's own tokenizer ({entry.checkpoint}@{entry.revision}, hub cache)"
    return job.tokenizer, job.tokenizer_label
