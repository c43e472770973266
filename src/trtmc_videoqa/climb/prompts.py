"""The workload's (question, clip) pairs as prompts: what every measuring stage sends, in the workload's order."""

from __future__ import annotations

from ..aiperf.dataset import Prompt
from ..workloads import Workload


def workload_prompts(workload: Workload) -> list[Prompt]:
    return [
        Prompt(
            question_id=q.id,
            clip_id=clip.id,
            clip_path=str(workload.clip_path(clip.id).resolve()),
            text=workload.prompt(q.id).text,
        )
        for q in workload.spec.questions
        for clip in workload.spec.clips
    ]
