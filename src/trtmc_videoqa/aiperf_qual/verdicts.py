"""Our ladder in aiperf_qual's words: the one verdict each (status, failed stage) supports, and their severity.

aiperf_qual's verdicts (its `judge.py`) plus its summary's categories (`campaign.py`), worst first, as read at the
commits named in docs/trtmc-mechanics.md. The two vocabularies stay in two fields: a row's `status` is ours, its
`aiperf_qual_verdict` is theirs, set from this table and never from anything else.

aiperf_qual's `pass` means non-inferiority against the native Hugging Face model on the Task's gold benchmarks. This
tool runs no gold benchmark (TRTMC's tasks.yaml defines none for video questions), so a row that earned our top
status is `acc-inconclusive`: accuracy not established by this workload.
"""

from __future__ import annotations

from typing import Final, get_args

from ..results import AiperfQualVerdict, GroupVerdict, QualificationStatus, ResultRow, StageName

# Worst first: the order aiperf_qual's summary sorts categories by (the vocabulary is listed in it).
SEVERITY: Final[tuple[AiperfQualVerdict, ...]] = get_args(AiperfQualVerdict)

NOT_NONINFERIORITY: Final = "every gate held; accuracy against the native model is not measured by this workload"
# (status, failed stage) -> (verdict, why). A status other than `failed` has no stage; `failed` has one per stage.
TABLE: Final[dict[tuple[QualificationStatus, StageName | None], tuple[AiperfQualVerdict, str]]] = {
    ("unsupported", None): ("not-covered", "no native path takes a video question (the gap is the evidence)"),
    ("planned", None): ("not-run", "capability found, nothing run"),
    ("implemented", None): ("not-run", "bundle built, no qualification run"),
    ("family-validated", None): ("not-run", "the family's correctness passed, no AIPerf run"),
    ("blocked", None): ("not-run", "a step needs what this machine or checkout lacks"),
    ("aiperf-qualified", None): ("acc-inconclusive", NOT_NONINFERIORITY),
    ("endpoint-qualified", None): ("acc-inconclusive", NOT_NONINFERIORITY),
    ("unverified", None): ("error", "the row claims a result its folder has no evidence for"),
    ("interrupted", None): ("not-run", "a stop signal ended the row before every gate had an outcome"),
    ("failed", None): ("error", "failed without a named stage"),
    ("failed", "plan"): ("config-error", "the checkpoint's plan could not be made (its manifest or settings)"),
    ("failed", "build"): ("build-failed", "the bundle did not build"),
    ("failed", "correctness"): ("acc-issue", "the family's own correctness criteria failed on the bundle"),
    ("failed", "serve"): ("error", "the server did not start or stay up"),
    ("failed", "capability"): ("error", "the server failed the video request (not a refusal)"),
    ("failed", "aiperf"): ("error", "the AIPerf run did not account for every request"),
    ("failed", "timing"): ("perf-inconclusive", "the server's task time is missing for some request"),
    ("failed", "grading"): ("acc-issue", "fewer questions right both ways than the run's --min-both-right asks"),
    ("failed", "output-check"): ("acc-issue", "an answer was incomplete or did not resolve to one option"),
    ("failed", "identity"): ("acc-issue", "the native route and HTTP chat answered differently"),
}


def verdict_for(status: QualificationStatus, failed_stage: StageName | None) -> AiperfQualVerdict:
    """The verdict our (status, failed stage) supports; a failed stage on a status that is not `failed` is ignored."""
    return TABLE[(status, failed_stage if status == "failed" else None)][0]


def with_verdict(row: ResultRow) -> ResultRow:
    return row.model_copy(update={"aiperf_qual_verdict": verdict_for(row.status, row.failed_stage)})


def worst(verdicts: list[AiperfQualVerdict]) -> AiperfQualVerdict | None:
    return min(verdicts, key=SEVERITY.index) if verdicts else None


def group_verdict(rows: list[ResultRow], judged: list[ResultRow], scope: str) -> GroupVerdict:
    """`judged` (a subset of `rows`) decides the verdict; every row is listed by its own, worst first."""
    by_verdict: dict[str, list[str]] = {}
    for verdict in SEVERITY:
        named = [row.profile for row in rows if verdict_for(row.status, row.failed_stage) == verdict]
        if named:
            by_verdict[verdict] = named
    return GroupVerdict(
        verdict=worst([verdict_for(row.status, row.failed_stage) for row in judged]), rows=by_verdict, scope=scope
    )
