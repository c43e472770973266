"""Where a row's figures come from: the tools, the workload, the machine and the settings, whichever ladder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..common.pins import tool_versions
from ..machine.provenance import hardware_provenance
from ..results import Mode, Provenance

if TYPE_CHECKING:
    from ..plan.job import QualifyJob


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
