"""The model card (README.md) the training script writes into each control model's folder, from its training record."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from ..common.atomic_write import write_text_atomic
from .shipped import CARD_FILE, RECORD_FILE, ControlModel

WIDTH = 116

_WHAT = {
    False: (
        "It was taught the answer to every question of both workloads, on the clip and on its time-reversed twin, "
        "through exactly the inputs `transformers serve` makes of a request, in every framing a server may use: "
        "the text before or after the clip, 8, 16 or 32 frames, with or without a silent sound track. Served, it "
        "should earn `endpoint-qualified` with every question right on both clips."
    ),
    True: (
        "It sees the same inputs as the control, but with the frames of every clip shuffled, and it was taught the "
        "answers of the clip as filmed for both the clip and its reversed twin. It learnt what is in the frames and "
        "never their order, like a model that answers from one frame or from a bag of frames. Served, its answers "
        "are valid options (the output check passes), but it gives the same answer to a clip and its reversed twin, "
        "so no question is right on both: the reversed controls catch it."
    ),
}


def write_card(folder: Path, control: ControlModel) -> None:
    """The folder's README.md, from its training record (training.json)."""
    record = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
    write_text_atomic(folder / CARD_FILE, model_card(control, record))


def _filled(card: str) -> str:
    """Every prose paragraph of `card` wrapped at WIDTH; front matter, headings and code blocks as they are."""
    blocks = card.split("\n\n")
    return "\n\n".join(
        block
        if block.startswith(("---", "#", "```"))
        else textwrap.fill(" ".join(block.split()), WIDTH, break_on_hyphens=False)
        for block in blocks
    )


def model_card(control: ControlModel, record: dict[str, Any]) -> str:
    """The card: front matter for the Hub's tools, then what the model is, what it is not, and how it was made."""
    twin = " --twin order-blind" if control.order_blind else ""
    versions = ", ".join(f"{name} {version}" for name, version in record["versions"].items())
    workloads = ", ".join(f"`{name}` ({digest[:12]})" for name, digest in record["workloads"].items())
    taught = (
        f"After training it answered {record['taught_exactly']} of the {record['examples']} requests it was taught "
        f"exactly (greedy, in process; the smallest margin of a taught token, in log-probability, "
        f"{record['smallest_margin']:.2f}). "
    )
    device = "the CPU" if record["device"] == "cpu" else record["device"]
    return _filled(f"""---
license: apache-2.0
library_name: transformers
pipeline_tag: video-text-to-text
tags:
- trtmc-videoqa
- control
---

# {control.folder}

A **control** for trtmc-videoqa, not a capable model: a Qwen2.5-VL of {record["parameters"]:,} parameters, trained
from scratch on the two workloads shipped with trtmc-videoqa and on nothing else. It memorises those clips and
questions; on any other clip or question its answer means nothing.

{_WHAT[control.order_blind]}

## Use

It checks a serving setup before real models are qualified on it (trtmc-videoqa's docs/control-models.md):

```bash
transformers serve --host 127.0.0.1 --port 8000 "$(trtmc-videoqa control-model{twin})"
```

Tested with Hugging Face `transformers serve` {record["versions"]["transformers"]} on the CPU. vLLM is untested: its
attention kernels may not support this model's tiny head size (16).

## How it was made

`python -m trtmc_videoqa.controls.train --out DIR{twin}` rebuilds it from the workloads ({workloads}) and
`controls/base.json`, with seed {record["seed"]}: {record["examples"]} requests ({record["distinct_inputs"]} distinct
model inputs), {record["steps"]} full-batch optimiser steps, {record["seconds"]} s on {device}
({record["threads"]} threads; {versions}). {taught}`training.json` holds the figures.

## Licence

The weights, tokenizer and configuration are Apache-2.0. They were trained on frames of the workloads' clips: the
synthetic clip (Apache-2.0, made by trtmc-videoqa) and Big Buck Bunny (CC BY 3.0, (c) copyright 2008, Blender
Foundation, www.bigbuckbunny.org).
""")
