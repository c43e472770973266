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
from .examples import Example, taught_requests
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
    folder: Path, control: ControlModel, scratch: Path, workloads: Sequence[Workload] = ()
) -> list[Answered]:
    """Load the model in `folder` on the CPU and answer every request of `examples` (the silent-audio copies are
    written under `scratch`)."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    training = base_config()["training"]
    chosen = list(workloads) or [builtin_workload(name) for name in training["workloads"]]
    processor = AutoProcessor.from_pretrained(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder).eval()
    answered = []
    with torch.no_grad():
        for example, inputs in taught_requests(processor, model, chosen, training, control, scratch):
            produced = model.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS, do_sample=False)
            text = processor.decode(produced[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
            answered.append(Answered(example, text))
    return answered
