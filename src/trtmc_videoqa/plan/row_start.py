"""The row a checkpoint starts from: `unsupported` with its audit gap and evidence, the workload's facts that every
measured row carries, and the sampling a server that samples says it applies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..results import ResultRow, SamplingFacts
from .job import QualifyJob

if TYPE_CHECKING:  # an endpoint run has no inventory: its schemas stay unloaded
    from ..results import CheckpointEntry


def unsupported_row(entry: CheckpointEntry, name: str | None = None) -> ResultRow:
    """`name`: the row's name where it is not the profile's (`row_names`: a profile two families share)."""
    evidence = [f"{e.file}:{e.line}" if e.line else e.file for e in entry.evidence]
    # A gap is also shown by the search that found nothing: what was looked for, and where it had zero hits.
    evidence += [
        f"searched for {g.searched_for} ({', '.join(g.patterns)})"
        + (f": no hits in {', '.join(g.files_without_hits)}" if g.files_without_hits else "")
        for g in entry.gap_evidence
    ]
    return ResultRow(
        profile=name or entry.profile,
        family=entry.family,
        checkpoint=entry.checkpoint,
        revision=entry.revision,
        verdict=entry.verdict,
        in_group=entry.in_group,
        variant_kinds=entry.variant_kinds,
        normal_profile=entry.normal_profile,
        profile_gap=entry.profile_gap,
        status="unsupported",
        status_reason=entry.gap or f"verdict {entry.verdict}",
        status_evidence=evidence,
    )


def with_workload_facts(job: QualifyJob, row: ResultRow) -> ResultRow:
    """The row with the workload's clip manifests and the frames its declared policy picks."""
    return row.model_copy(update={"clips": dict(job.facts.clips), "sampling": job.facts.sampling})


def with_server_sampling(row: ResultRow, job: QualifyJob, stated: dict[str, str]) -> ResultRow:
    """Where the server samples, the policy it states is the one applied: record it beside the workload's declared
    one, and say so plainly when they differ (the strip then shows the declared frames, not the server's)."""
    policy, where = stated.get("sampling_policy"), stated.get("sampling_where")
    if not policy or where != "server" or not isinstance(row.sampling, SamplingFacts):
        return row
    from ..media.sampling import SamplingPolicy  # lazy: the media room, only where a server states its sampling

    try:
        applied = SamplingPolicy.parse(policy).spec
    except ValueError:
        applied = policy
    mismatch = None
    if applied != row.sampling.policy:
        declared = [p.spec for p in job.workload.sampling_policies()]
        mismatch = (
            f"the server samples {applied}, not {row.sampling.policy} as resolved above; "
            f"{applied} is {'one' if applied in declared else 'not one'} of the workload's "
            "declared policies"
        )
    sampling = row.sampling.model_copy(update={"applied_by_server": applied, "mismatch": mismatch})
    return row.model_copy(update={"sampling": sampling})
