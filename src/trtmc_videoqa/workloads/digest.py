"""The workload's identity: one sha256 over everything that changes what is asked and of which bytes."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .model import WorkloadFile


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8: equal content gives equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest_content(workload: WorkloadFile) -> dict[str, Any]:
    """What the digest covers. Clip bytes enter through their sha256 (checked against the files on load);
    names, descriptions and attribution text do not change what is asked, so they stay out."""
    return {
        "schema": workload.schema_,
        "clips": [
            {"id": clip.id, "sha256": clip.sha256, "bytes": clip.bytes, "reverses": clip.reverses}
            for clip in workload.clips
        ],
        "questions": [question.model_dump(mode="json") for question in workload.questions],
        "prompts": [prompt.model_dump(mode="json") for prompt in workload.prompts],
        "generation": workload.generation.model_dump(mode="json"),
        "sampling_policies": list(workload.sampling_policies),
    }


def workload_digest(workload: WorkloadFile) -> str:
    return hashlib.sha256(canonical_json(digest_content(workload))).hexdigest()
