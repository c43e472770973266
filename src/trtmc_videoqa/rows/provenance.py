"""Where a row's figures come from: the tools, the workload, the machine and the settings, whichever ladder."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..common.pins import tool_versions
from ..machine.provenance import hardware_provenance
from ..results import Mode, Provenance

if TYPE_CHECKING:
    from ..climb.protocol import Climb, Measurement
    from ..plan.job import QualifyJob


@dataclass(frozen=True, kw_only=True)
class LadderFacts:
    """What a ladder adds to its rows' provenance, known before the row climbs (values, never a call back into the
    ladder); the rest is read off where the row ended (`ended_provenance`). `endpoint` is the server the user or the
    run named (endpoint rows: said even before it answers); a TRTMC row names the one its ladder served, once
    measured. `settings` are the ladder's own, fixed ones."""

    mode: Mode
    tokenizer: str
    settings: dict[str, Any] = field(default_factory=dict)
    endpoint: str | None = None
    trtmc_commit: str | None = None
    server_version: str | None = None


def hardware() -> dict[str, Any]:
    """What a row says about the machine: GPU, driver, CUDA, TensorRT and TRTMC versions, CPU count; nothing that
    names the machine or its user. Package versions are this interpreter's, which is TRTMC's (Toolchain.python)."""
    return hardware_provenance()


def run_provenance(
    job: QualifyJob,
    *,
    mode: Mode,
    settings: dict[str, Any],
    tokenizer: str,
    endpoint: str | None = None,
    served_by: str | None = None,
    trtmc_commit: str | None = None,
    server_version: str | None = None,
    effective_precision: str | None = None,
    bundle_digest: str | None = None,
) -> Provenance:
    """Where a row's figures come from: tools, workload, hardware, and the run's settings with the ladder's own."""
    return Provenance(
        tool_versions=tool_versions(),
        aiperf=job.aiperf.model_dump(),
        trtmc_commit=trtmc_commit,
        bundle_digest=bundle_digest,
        workload=job.workload.name,
        workload_digest=job.workload.digest,
        endpoint=endpoint,
        mode=mode,
        served_by=served_by,
        server_version=server_version,
        hardware=hardware(),
        effective_precision=effective_precision,
        settings=job.settings.measured() | settings,
        tokenizer=tokenizer,
        inventory_digest=job.inventory_digest,
    )


def ended_provenance(job: QualifyJob, facts: LadderFacts, climb: Climb, measurement: Measurement | None) -> Provenance:
    """A row's provenance from where its ladder ended: once measured, the server that answered, what it said it
    is and the transport it took; a TRTMC row's precision and bundle as far as it built."""
    capability = measurement.capability if measurement else None
    endpoint = facts.endpoint
    if facts.mode == "trtmc":
        endpoint = climb.served.url if measurement and climb.served else None
    precision = {"precision_source": climb.precision[1]} if facts.mode == "trtmc" else {}
    transport = measurement.video_transport if measurement else None
    return run_provenance(
        job,
        mode=facts.mode,
        settings=precision | facts.settings | {"video_transport_used": transport},
        tokenizer=facts.tokenizer,
        endpoint=endpoint,
        served_by=capability.served_by if capability else None,
        trtmc_commit=facts.trtmc_commit,
        server_version=facts.server_version,
        effective_precision=climb.precision[0],
        bundle_digest=climb.bundle.digest if climb.bundle else None,
    )
