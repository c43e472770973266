"""The JSON bodies the endpoint answers with: OpenAI chat completion and native Task result (each with timing and
observation), errors, health."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .labels import (
    NATIVE_OBSERVATION_FIELD,
    NOT_A_MODEL_NOTE,
    OBSERVATION_FIELD,
    SERVED_BY,
    TEST_DOUBLE_LABEL,
    TIMING_FIELD,
)

MODEL_CALL_SCOPE = "reference task: decode the sampled frames and answer (a test double, not a TRTMC task call)"


@dataclass(frozen=True)
class Timing:
    queue_ms: float
    model_call_ms: float
    handler_ms: float

    def body(self) -> dict[str, float | str]:
        return {
            "queue_ms": round(self.queue_ms, 3),
            "model_call_ms": round(self.model_call_ms, 3),
            "handler_ms": round(self.handler_ms, 3),
            # What its task time measures, in its own word: it is no TRTMC task call.
            "model_call_scope": MODEL_CALL_SCOPE,
        }


def word_count(text: str) -> int:
    return len(text.split())


def cut_to_tokens(text: str, max_tokens: int | None) -> tuple[str, str]:
    """(content, finish_reason): tokens are whitespace-separated words; "length" when max_tokens cut it."""
    words = text.split()
    if max_tokens is not None and len(words) > max_tokens:
        return " ".join(words[:max_tokens]), "length"
    return text, "stop"


def label_fields() -> dict[str, Any]:
    return {"served_by": SERVED_BY, "label": TEST_DOUBLE_LABEL, "test_double": True}


def chat_completion_body(
    *,
    request_id: str,
    model: str,
    content: str,
    finish_reason: str,
    prompt_text: str,
    timing: Timing | None,
    observation: dict[str, Any],
) -> dict[str, Any]:
    """``timing`` None leaves trtmc_timing out altogether, as a server that does not report this task time."""
    completion_tokens = word_count(content)
    prompt_tokens = word_count(prompt_text)  # text only; the clip is not tokenised by a test double
    body: dict[str, Any] = {
        "id": f"chatcmpl-{request_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": TEST_DOUBLE_LABEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        OBSERVATION_FIELD: observation_body(request_id, observation),
    }
    if timing is not None:
        body[TIMING_FIELD] = timing.body()
    return body


def observation_body(request_id: str, observation: dict[str, Any]) -> dict[str, Any]:
    return {**label_fields(), "note": NOT_A_MODEL_NOTE, "request_id": request_id, **observation}


def task_result_body(
    *, request_id: str, operation: str, text: str, timing: Timing, observation: dict[str, Any]
) -> dict[str, Any]:
    """A native Task result in perf_serving's shape, its observation under perf_serving's own field name."""
    return {
        "id": request_id,
        "object": "task.result",
        "operation": operation,
        "text": text,
        TIMING_FIELD: timing.body(),
        NATIVE_OBSERVATION_FIELD: observation_body(request_id, observation),
        **label_fields(),
    }


def error_body(status: int, message: str, error_type: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "code": status}, **label_fields()}


def models_body(model: str, created: int) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": model, "object": "model", "created": created, "owned_by": TEST_DOUBLE_LABEL}],
    }


def readiness_body(*, ready: bool, model: str) -> dict[str, Any]:
    return {
        "status": "ready" if ready else "starting",
        "ready": ready,
        "degraded": False,
        "models": [model],
        **label_fields(),
    }
