"""Content-addressed result reuse: a row's cache key is made from everything that shapes its result, and a finished
row with the same key is reused instead of measured again. Both ladders' keys are made here, side by side:
`trtmc_key` for a TRTMC row, `endpoint_key` for a server we did not build."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..common.errors import UserError
from ..common.safe_read import MAX_RESULT_BYTES, read_file_inside
from ..results import QualificationStatus, ResultRow
from ..results.layout import RESULT_FILE

if TYPE_CHECKING:
    from ..results import CheckpointEntry, Inventory
    from .endpoint_target import EndpointTarget
    from .job import QualifyJob

# The statuses a row ends with when everything that could run here ran; only those are reused.
FINAL_STATUSES: frozenset[QualificationStatus] = frozenset({"unsupported", "aiperf-qualified", "endpoint-qualified"})


# 2: timing, output-check and identity; 3: the served model, a refused video told from a setup error; 4: every level
# of a sweep (or repeated run) passes, and the row records its levels
GATES_VERSION = 4


def cache_key(identity: dict[str, Any], job: QualifyJob) -> str:
    """Same inputs, same key: identity (bundle sources or endpoint), workload digest, tool versions, settings."""
    payload = {
        # Raised when the ladder's gates change, so a row that earned its status under fewer gates is measured again.
        "gates": GATES_VERSION,
        "identity": identity,
        "workload": job.workload.digest,
        "tool": __version__,
        "aiperf": job.aiperf.version,
        "settings": job.settings.measured(),
        "tokenizer": job.tokenizer_label,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def trtmc_key(job: QualifyJob, entry: CheckpointEntry, inventory: Inventory, tokenizer_label: str) -> str:
    """A TRTMC row is identified by its profile, the checkout's commit, the checkpoint and revision, the tokenizer."""
    identity = {
        "mode": "trtmc",
        "profile": entry.profile,
        "commit": inventory.commit,
        "checkpoint": entry.checkpoint,
        "revision": entry.revision,
        "tokenizer": tokenizer_label,
    }
    return cache_key(identity, job)


def endpoint_key(job: QualifyJob, target: EndpointTarget) -> str:
    """The row's cache key, made here only: the server, the model, its stated settings, the native route checked
    against and the no-answer the plan declares."""
    declared = target.declared_no_answer
    extra = {"native_url": target.native_key or "", "declared": declared.phrase if declared else ""}
    identity = {"mode": "endpoint", "endpoint": target.identity, "model": target.model, "stated": target.stated | extra}
    return cache_key(identity, job)


def reusable(row_dir: Path, key: str, force: bool) -> ResultRow | None:
    """The row's earlier result when it has this key and a final status, marked reused; None otherwise."""
    path = row_dir / RESULT_FILE
    if force or not path.is_file():
        return None
    try:
        row = ResultRow.model_validate_json(read_file_inside(row_dir, path, MAX_RESULT_BYTES))
    except (ValueError, UserError):
        return None  # a damaged or foreign result (a FIFO, a link, a huge file) is measured again, not trusted
    if row.cache_key == key and row.status in FINAL_STATUSES:
        return row.model_copy(update={"reused": True})
    return None
