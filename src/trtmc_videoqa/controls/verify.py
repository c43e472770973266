"""What a control model answers, in process, to every request it was taught: the server's inputs (server_inputs.py),
then greedy generation and decoding as `transformers serve` does them. The training script records it; the tests
check the shipped weights with it.

torch and transformers are imported inside the functions (the `real-server` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..workloads import Workload, builtin_workload
from .build import base_config
from .examples import Example, examples, taught_requests
from .shipped import ControlModel

MAX_NEW_TOKENS = 16  # the workloads' own token limit


@dataclass(frozen=True)
class Answered:
    example: Example
    answer: str  # the decoded text, special tokens left out

    @property
    def right(self) -> bool:
        return self.answer.strip() == self.example.answer


def answer_all(
    models: Sequence[tuple[Path, ControlModel]], scratch: Path, workloads: Sequence[Workload] = ()
) -> list[list[Answered]]:
    """Load each model (its folder, what it is) on the CPU and answer every request it was taught, one list per
    model (the silent-audio copies are written under `scratch`). The models share the base's processor and are
    taught the same framings, so each framing's inputs are made once, by the first model's processor, for all of
    them (making them is most of the work: decoding and resizing up to 32 frames)."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    training = base_config()["training"]
    chosen = list(workloads) or [builtin_workload(name) for name in training["workloads"]]
    processor = AutoProcessor.from_pretrained(models[0][0])
    loaded = [AutoModelForImageTextToText.from_pretrained(folder).eval() for folder, _ in models]
    taught = [examples(chosen, training, control) for _, control in models]
    answered: list[list[Answered]] = [[] for _ in models]
    with torch.no_grad():
        requests = taught_requests(processor, loaded[0], chosen, training, models[0][1], scratch)
        for index, (example, inputs) in enumerate(requests):
            for model, each, answers in zip(loaded, taught, answered, strict=True):
                if each[index].name != example.name:  # a model taught other framings cannot share these inputs
                    raise ValueError(f"{each[index].name} is not the framing {example.name}")
                produced = model.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS, do_sample=False)
                text = processor.decode(produced[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
                answers.append(Answered(each[index], text))
    return answered
