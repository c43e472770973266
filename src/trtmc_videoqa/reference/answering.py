"""The timed task for one request: decode the sampled frames, track the squares, answer, plus the added delay."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..media import ResolvedSampling, SamplingPolicy
from .clip import RequestClip, sample_clip
from .questions import Answer, answer_question
from .tracking import track_scene


@dataclass(frozen=True)
class TaskResult:
    answer: Answer
    sampling: ResolvedSampling
    queue_ms: float  # waiting for the execution lane
    model_call_ms: float  # the task time: from the start of decoding to the answer, monotonic clock


def run_task(
    clip: RequestClip, prompt: str, policy: SamplingPolicy, *, added_task_ms: float, submitted: float
) -> TaskResult:
    """Runs in a worker thread on one of the execution lanes (`capacity`, one by default); ``submitted`` is when
    the request joined the lane."""
    started = time.monotonic()
    sampled = sample_clip(clip, policy)
    answer = answer_question(prompt, track_scene(sampled.frames))
    if added_task_ms:
        # Inside the timed section, so the reported task time is at least the added delay.
        time.sleep(added_task_ms / 1000)
    finished = time.monotonic()
    return TaskResult(
        answer=answer,
        sampling=sampled.sampling,
        queue_ms=(started - submitted) * 1000,
        model_call_ms=(finished - started) * 1000,
    )
