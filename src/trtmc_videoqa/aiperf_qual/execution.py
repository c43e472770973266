"""aiperf_qual's evidence stream, `execution.jsonl`, as this project writes it: our own definitions of the format.

TRTMC's `apps/aiperf_qual` keeps one `execution.jsonl` per model result directory: a line per AIPerf run (a batch,
with its per-request records) and an event line that marks failed attempts as superseded. The fields and types
here were read from `apps/aiperf_qual/trtmc_aiperf_qual/execution.py` (the writer) and `accuracy_recovery.py`
(`batches`, the reader of the file) at TRTMC commit READ_AT_COMMIT; no TRTMC code is copied. Where TRTMC is silent
(who is a candidate in a run of ours) the choice is ours and says so below.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final, Literal

from pydantic import Field

from ..results.base import _Model
from ..results.layout import EXECUTION_FILE

SCHEMA: Final = "trtmc.qualification/v2"
TIMING_CONTRACT: Final = "task-call-wall/v1"
READ_AT_COMMIT: Final = "3878755ca2caffe2de442f7eb80e88a8c73367b1"
SUPERSEDE_EVENT: Final = "supersede_failed_attempt"
# The task-call boundaries aiperf_qual accepts as comparable (anything else: "timing boundary is not declared").
COMPARABLE_SCOPES: Final = ("task-call-wall", "public_task_call_wall")
# The AIPerf summary statistics aiperf_qual keeps per run, as AIPerf names them.
AIPERF_METRICS: Final = ("request_latency", "request_throughput", "output_token_throughput", "request_error_rate")

# What a row says of the evidence it wrote (ServingMechanics.evidence).
EVIDENCE: Final = (
    f"{EXECUTION_FILE} in TRTMC aiperf_qual's format ({SCHEMA}, read at {READ_AT_COMMIT[:8]}), written by "
    "trtmc-videoqa beside result.json for each AIPerf run; aiperf_qual itself does not run"
)

Role = Literal["quality", "performance", "both", "service"]
# aiperf_qual's two sides: the TRTMC candidate and the native (reference) implementation. In our runs the server
# under test is the candidate; a comparison row (the upstream checkpoint on its own server) is the reference side.
Side = Literal["candidate", "reference"]


def request_sha(payload: Any) -> str:
    """The request's identity as aiperf_qual computes it: sha256 of the AIPerf record's payload, serialised with
    sorted keys and no spaces (json's default ASCII escaping)."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class BatchIdentity(_Model):
    side: Side
    precision: str | None = Field(description="the effective precision served; None where the server gives none")
    timing_scope: str | None = Field(
        description="what model_call_ms measures (comparable: " + ", ".join(COMPARABLE_SCOPES) + ")"
    )
    concurrency: int = Field(ge=1)
    replicas: int = Field(default=1, ge=1)
    mps: bool = False
    operation: str = Field(description="the route the workload's requests went to, e.g. 'POST /v1/chat/completions'")


class OutputRef(_Model):
    aiperf_run: str = Field(description="the AIPerf artifact directory, relative to the execution.jsonl's folder")
    record_index: int = Field(ge=0, description="position among the run's profiling-phase raw records")
    request_id: str | None = Field(description="the request's X-Request-ID (our request identity)")


class ExecutionRecord(_Model):
    sample_id: str = Field(description="AIPerf's conversation_id: our request identity")
    unit_id: str = Field(description="the evaluation unit: question and clip; its repeats share it")
    request_sha: str = Field(pattern="^[0-9a-f]{64}$")
    model_call_ms: float | None = Field(gt=0, description="the server's task time; None where not reported")
    valid: bool = Field(description="output_valid and a task time was joined")
    output_valid: bool = Field(description="the request was answered: HTTP 200 with an answer, not cancelled")
    work: list[tuple[str, int | None]] | None = Field(description="[[name, count]]: the output tokens reported")
    capacity_rejection: bool | None = Field(description="candidate side: refused for capacity (429); None: reference")
    request_problems: list[str] = Field(default_factory=list, description="computation left to server defaults")
    output_ref: OutputRef


class MetricsCapture(_Model):
    source: str = Field(description="AIPerf's summary file, relative to the execution.jsonl's folder")
    metrics: dict[str, dict[str, float | str]] = Field(default_factory=dict)


class ExecutionBatch(_Model):
    schema_version: Literal["trtmc.qualification/v2"] = SCHEMA
    timing_contract: Literal["task-call-wall/v1"] = TIMING_CONTRACT
    batch_id: int = Field(ge=0)
    workload: str
    role: Role
    identity: BatchIdentity
    gpu_busy_percent: float | None = Field(description="GPU utilisation read just before AIPerf; None: no GPU read")
    warmup: int = Field(ge=0)
    expected_requests: int | None = Field(ge=0)
    aiperf_exit: int = Field(description="AIPerf's exit code; -1 where this tool ended it (wall limit, interrupt)")
    aiperf_metrics: MetricsCapture
    records: list[ExecutionRecord]


class SupersedeEvent(_Model):
    event: Literal["supersede_failed_attempt"] = SUPERSEDE_EVENT
    batch_ids: list[int]


def json_line(item: ExecutionBatch | SupersedeEvent) -> str:
    return item.model_dump_json() + "\n"
