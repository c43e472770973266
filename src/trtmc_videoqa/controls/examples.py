"""The requests a control model is taught, one per framing of every (clip, question) pair of the workloads, and
the clip files they name. Pure but for writing the workloads' silent-audio copies."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..workloads import Workload
from ..workloads.silent_audio_copy import silent_audio_workload
from .server_inputs import Order, chat_messages, server_inputs
from .shipped import ControlModel


@dataclass(frozen=True)
class Example:
    """One request the model is taught, and the letter it must answer."""

    workload: str
    clip: str
    question: str
    order: Order
    num_frames: int
    silent_audio: bool  # the clip of the workload's silent-audio copy, read with its sound as 5.24 reads it
    answer: str

    @property
    def name(self) -> str:
        audio = "silent-audio" if self.silent_audio else "no-audio"
        return f"{self.workload}/{self.question}/{self.clip}/{self.order}/{self.num_frames}f/{audio}"


def examples(workloads: Sequence[Workload], training: dict[str, Any], model: ControlModel) -> list[Example]:
    """Every framing of every (clip, question) pair. The order-blind twin is taught the answer of the clip as filmed
    (the first clip of the workload's reversal pair) for both clips."""
    found = []
    for workload in workloads:
        as_filmed = workload.reversal_pairs()[0][0]
        for question in workload.spec.questions:
            for clip, letter in question.answers.items():
                taught = question.answers[as_filmed] if model.order_blind else letter
                for order in training["orders"]:
                    for frames in training["num_frames"]:
                        for audio in training["silent_audio"]:
                            found.append(Example(workload.name, clip, question.id, order, frames, audio, taught))
    return found


def clip_paths(workloads: Sequence[Workload], scratch: Path) -> dict[tuple[str, str, bool], Path]:
    """(workload, clip id, silent audio) -> the clip file; the silent-audio copies are written under `scratch`."""

    found = {}
    for workload in workloads:
        silent = silent_audio_workload(workload, scratch / workload.name)
        for clip in workload.spec.clips:
            found[(workload.name, clip.id, False)] = workload.clip_path(clip.id)
            found[(workload.name, clip.id, True)] = silent.clip_path(clip.id)
    return found


def taught_requests(
    processor, model, workloads: Sequence[Workload], training: dict[str, Any], control: ControlModel, scratch: Path
) -> Iterator[tuple[Example, Any]]:
    """Every example with the model inputs the server makes of its request (server_inputs.py); the silent-audio
    copies are written under `scratch`. torch and transformers are needed by the processor, not here."""
    paths = clip_paths(workloads, scratch)
    prompts = {(w.name, p.question_id): p.text for w in workloads for p in w.spec.prompts}
    for example in examples(workloads, training, control):
        clip = paths[(example.workload, example.clip, example.silent_audio)]
        messages = chat_messages(str(clip), prompts[(example.workload, example.question)], example.order)
        yield (
            example,
            server_inputs(processor, model, messages, num_frames=example.num_frames, reads_audio=example.silent_audio),
        )
