"""The AIPerf `single_turn` input file, planned as data: one row per (question, clip variant, repeat).

AIPerf 0.13.0 draws warmup and profiling rows from ONE sequential sampler, so warmup rows go first and the profiling
phase asks for exactly as many requests as there are profiling rows: then every planned row is sent exactly once.

A row's ``video`` is the clip's absolute path (AIPerf reads it and sends a base64 data URL) or an http URL (AIPerf
passes a URL with a scheme and host through unchanged). Its ``extra`` is AIPerf's per-turn ``extra_body``,
shallow-merged into the request body: the generation settings and the workload's own ``extra_body`` fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..common.atomic_write import write_text_atomic

Phase = Literal["warmup", "profiling"]


class Prompt(BaseModel):
    """One question on one clip variant, as the workload renders it."""

    model_config = ConfigDict(frozen=True)
    question_id: str
    clip_id: str
    clip_path: str  # absolute: AIPerf resolves relative paths against its working directory
    text: str


class PlannedRequest(BaseModel):
    model_config = ConfigDict(frozen=True)
    session_id: str  # the request identity: AIPerf's conversation_id
    phase: Phase
    question_id: str
    clip_id: str
    repeat: int
    clip_path: str
    text: str
    video: str = ""  # what AIPerf's `video` field carries: the clip path, or the clip's http URL


class RequestPlan(BaseModel):
    requests: list[PlannedRequest]
    max_tokens: int
    temperature: float = 0.0
    extra_body: dict[str, Any] = {}  # the workload's extra request-body fields, in every row's `extra`

    @property
    def warmup(self) -> list[PlannedRequest]:
        return [r for r in self.requests if r.phase == "warmup"]

    @property
    def profiling(self) -> list[PlannedRequest]:
        return [r for r in self.requests if r.phase == "profiling"]


def plan_requests(
    prompts: list[Prompt],
    *,
    repeats: int,
    warmup: int,
    max_tokens: int,
    temperature: float = 0.0,
    videos: Mapping[str, str] | None = None,
    extra_body: Mapping[str, Any] | None = None,
    id_prefix: str = "",
) -> RequestPlan:
    """Warmup rows (real requests, kept apart) cycle over the prompts; then every prompt `repeats` times.

    `videos` maps a clip id to the URL its rows carry instead of the clip's path: a transport that carries the clip
    by URL (transports/table.py; transports/clips.py's `aiperf_videos`). `id_prefix` starts every request id: a
    row's further AIPerf runs (a sweep's levels, repeats) keep their ids apart from the first run's."""
    if not prompts:
        raise ValueError("a request plan needs at least one prompt")
    if repeats < 1 or warmup < 0:
        raise ValueError("repeats must be >= 1 and warmup >= 0")
    urls = dict(videos or {})
    rows = [
        PlannedRequest(
            session_id=f"{id_prefix}warmup-{index:03d}.{p.question_id}.{p.clip_id}",
            phase="warmup",
            question_id=p.question_id,
            clip_id=p.clip_id,
            repeat=index,
            clip_path=p.clip_path,
            text=p.text,
            video=urls.get(p.clip_id, p.clip_path),
        )
        for index, p in ((i, prompts[i % len(prompts)]) for i in range(warmup))
    ]
    # Repeats interleave (all prompts once, then again) so a drifting server affects every prompt alike.
    rows += [
        PlannedRequest(
            session_id=f"{id_prefix}{p.question_id}.{p.clip_id}.r{repeat:02d}",
            phase="profiling",
            question_id=p.question_id,
            clip_id=p.clip_id,
            repeat=repeat,
            clip_path=p.clip_path,
            text=p.text,
            video=urls.get(p.clip_id, p.clip_path),
        )
        for repeat in range(repeats)
        for p in prompts
    ]
    return RequestPlan(requests=rows, max_tokens=max_tokens, temperature=temperature, extra_body=dict(extra_body or {}))


def input_file_lines(plan: RequestPlan) -> list[str]:
    # The workload model refuses extra_body keys that clash with these, so the merge order changes nothing.
    extra = {**plan.extra_body, "max_tokens": plan.max_tokens, "temperature": plan.temperature}
    return [
        json.dumps(
            {"session_id": r.session_id, "text": r.text, "video": r.video or r.clip_path, "extra": extra},
            sort_keys=True,
        )
        for r in plan.requests
    ]


def write_input_file(plan: RequestPlan, path: Path) -> Path:
    return write_text_atomic(path, "\n".join(input_file_lines(plan)) + "\n")
