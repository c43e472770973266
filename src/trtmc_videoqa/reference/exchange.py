"""What one request (chat or native) gathers on its way through the endpoint, and the record it leaves."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .answering import TaskResult
from .clip import RequestClip
from .records import RequestRecord
from .responses import Timing


@dataclass
class Exchange:
    request_id: str
    route: str
    sequence: int  # among requests of its own route
    received_at: datetime
    started: float
    clip: RequestClip | None = None
    result: TaskResult | None = None
    content: str | None = None  # the answer as sent
    finish_reason: str | None = None
    reports_task_time: bool = True  # False where the omit-task-time knob hides it
    body_fields: dict[str, Any] | None = None  # a chat body's top-level fields but model and messages
    video_scheme: str | None = None  # how the chat clip came: "data" or "http(s)"
    streamed: bool = False  # the answer goes out as server-sent events (stream=true, where the endpoint allows it)

    @classmethod
    def arriving(cls, request_id: str, route: str, sequence: int) -> Exchange:
        return cls(
            request_id=request_id,
            route=route,
            sequence=sequence,
            received_at=datetime.now(UTC),
            started=time.monotonic(),
        )

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000

    def timing(self) -> Timing | None:
        """The times the response reports, None where they are hidden (or no task ran)."""
        if self.result is None or not self.reports_task_time:
            return None
        return Timing(
            queue_ms=self.result.queue_ms, model_call_ms=self.result.model_call_ms, handler_ms=self.elapsed_ms()
        )

    def observation(self) -> dict[str, Any]:
        """What the endpoint saw and did: the same keys on both routes."""
        result, clip = self.result, self.clip
        assert result is not None and clip is not None, "observed only once the task has run"
        return {
            "sampling_policy": result.sampling.spec,
            "frame_count": result.sampling.frame_count,
            "frame_indices": result.sampling.indices,
            "question_id": result.answer.question_id,
            "outcome": result.answer.outcome,
            "cannot_tell_because": result.answer.reason,
            "clip_sha256": clip.sha256,
        }

    def record(self, *, status: int, error: str | None, model: str, sampling_spec: str) -> RequestRecord:
        result, clip = self.result, self.clip
        timed = self.reports_task_time
        return RequestRecord(
            request_id=self.request_id,
            route=self.route,
            sequence=self.sequence,
            received_at=self.received_at,
            finished_at=datetime.now(UTC),
            status=status,
            error=error,
            model=model,
            handler_ms=round(self.elapsed_ms(), 3) if timed else None,
            queue_ms=round(result.queue_ms, 3) if result and timed else None,
            model_call_ms=round(result.model_call_ms, 3) if result and timed else None,
            sampling_policy=result.sampling.spec if result else sampling_spec,
            frame_count=result.sampling.frame_count if result else None,
            frame_indices=result.sampling.indices if result else None,
            question_id=result.answer.question_id if result else None,
            answer=self.content,
            finish_reason=self.finish_reason,
            clip_sha256=clip.sha256 if clip else None,
            clip_bytes=len(clip.data) if clip else None,
            body_fields=self.body_fields,
            video_scheme=self.video_scheme,
        )
