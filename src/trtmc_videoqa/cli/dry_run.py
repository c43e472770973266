"""`trtmc-videoqa qualify --dry-run`: the plan a run would follow, printed, with nothing run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..common.errors import EXIT_OK, BadInput
from ..common.text_escape import one_line, shown_name
from ..plan.trtmc_checks import named_by, row_names, variant_hold
from ..results import STAGE_ORDER
from ..transports.table import CHOICES

if TYPE_CHECKING:
    from ..plan.settings import RunSettings
    from ..runs.requests import QualifyRequest
    from ..workloads import Workload


def _load_words(settings: RunSettings) -> str:
    """The levels and runs each row is measured at: one AIPerf run each (docs/throughput.md)."""
    if settings.request_rate:
        levels = "request rate " + ", ".join(f"{rate:g}/s" for rate in settings.request_rate)
    else:
        levels = "concurrency " + ", ".join(str(level) for level in settings.concurrency or (1,))
    runs = settings.num_profile_runs
    count = len(settings.request_rate or settings.concurrency or (1,)) * runs
    repeated = f", {runs} runs each ({settings.confidence_level:g} intervals)" if runs > 1 else ""
    return f"{levels}{repeated}: {count} AIPerf run(s) per checkpoint"


def dry_run(request: QualifyRequest, workloads: list[Workload], notes: list[str]) -> int:
    """The plan the real run would follow, by the same rules (variant holds, unknown profiles refused)."""
    settings = request.settings
    print(f"workload(s): {', '.join(f'{shown_name(w.name)} ({w.digest[:12]})' for w in workloads)}")
    print(f"video transport: {settings.video_transport} ({CHOICES[settings.video_transport].dry_run})")
    for note in notes:
        print(f"note: {one_line(note)}")
    print(f"load: {_load_words(settings)}")
    for workload in workloads:
        rows = len(workload.spec.questions) * len(workload.spec.clips) * settings.repeats
        print(
            f"per checkpoint on {shown_name(workload.name)}: capability check, then aiperf {settings.warmup} warmup + "
            f"{rows} profiling requests (every question on every clip, {settings.repeats} times), then timing, "
            "grading, the output check and native/HTTP identity"
        )
    if request.self_test:
        print(
            "target: the reference endpoint (a test double) on loopback; endpoint ladder planned -> endpoint-qualified"
        )
    elif request.endpoint:
        target = f"{one_line(request.endpoint)} model {shown_name(request.model)}"
        print(f"target: {target}; endpoint ladder planned -> endpoint-qualified")
    elif request.trtmc is not None:
        _checkout_plan(request.trtmc, request.profiles)
    return EXIT_OK


def _checkout_plan(trtmc: Path, profiles: list[str] | None) -> None:
    """The steps each in-group checkpoint of the --trtmc checkout would go through, or why it would not, under the
    name of its row."""
    from ..inventory import run_inventory

    inventory = run_inventory(trtmc)
    names = row_names(inventory.entries)
    unknown = sorted(set(profiles or []) - {e.profile for e in inventory.entries} - set(names.values()))
    if unknown:
        raise BadInput(f"--profile {', '.join(unknown)} not in the inventory of {trtmc}")
    normals = {(e.checkpoint, e.revision): e.profile for e in inventory.entries if e.normal_profile}
    for entry in inventory.entries:
        name = names[entry.manifest]
        chosen = named_by(profiles, entry, name)
        if entry.in_group and (not profiles or chosen):
            held = variant_hold(entry, chosen=chosen, normal=normals.get((entry.checkpoint, entry.revision)))
            if entry.verdict != "temporal-video-qa":
                steps = f"unsupported: {entry.gap}"
            elif held is not None:
                steps = f"{held.status}: {held.status_reason}"
            else:
                steps = " -> ".join(STAGE_ORDER[1:])
            print(f"  {shown_name(name)}: {one_line(steps)}")
