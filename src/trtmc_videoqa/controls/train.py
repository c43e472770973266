"""Rebuild the control models from the shipped workloads and base.json, seeded:

    python -m trtmc_videoqa.controls.train --out DIR [--twin order-blind] [--device cpu|cuda]

The control is taught each (clip, question) answer of both workloads, forward and reversed, through exactly the
inputs `transformers serve` makes (server_inputs.py), in every framing a server may use: the text before or after
the clip, 8, 16 or 32 frames, the clip with or without its silent sound track. The order-blind twin sees the same
inputs with the frames of every clip shuffled, and is taught the answers of the clip as filmed for both clips: it
learns what is in the frames, never their order.

Two settings of base.json make the difference between learning and not: full-batch steps (see `fit`), and weights
that start at a standard deviation of 0.15 rather than transformers' 0.02, at which a network this small sits at a
saddle and never tells the synthetic clip from its reversed twin.

Needs the `real-server` extra (torch, transformers, torchcodec) and ffmpeg's libraries. Writes DIR/NAME (the HF
folder with its model card and training record) and prints the loss every ten steps.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common.atomic_write import copy_file_atomic, write_text_atomic
from ..common.errors import EXIT_BAD_INPUT, EXIT_OK, UserError
from ..workloads import Workload, builtin_workload
from .build import END_TOKEN, PAD_TOKEN, base_config, build_config, build_processor, build_tokenizer
from .cards import write_card
from .examples import Example, taught_requests
from .server_inputs import inputs_digest
from .shipped import CONTROL, RECORD_FILE, TWINS, ControlModel
from .verify import answer_all


def _corpus(workloads: Sequence[Workload]) -> list[str]:
    """The texts the tokenizer is learnt from: every prompt and every option letter, four times over."""
    texts = [prompt.text for workload in workloads for prompt in workload.spec.prompts]
    return (texts + ["A", "B", "C", "D"]) * 4


def _shuffle_frames(pixels, grid, vision: dict[str, Any], generator):  # -> torch.Tensor
    """`pixels` (Qwen2-VL's patch rows, time-major, each row channels x temporal patch x patch x patch) with every
    frame of the clip in a random order: frames move across and within the model's temporal patches, and each
    frame's pixels stay as they are."""
    import torch

    t, h, w = (int(v) for v in grid)
    pair, patch = vision["temporal_patch_size"], vision["patch_size"]
    rows = pixels.view(t, h * w, 3, pair, patch, patch)
    frames = rows.permute(0, 3, 1, 2, 4, 5).reshape(t * pair, h * w, 3, patch, patch)
    frames = frames[torch.randperm(t * pair, generator=generator)]
    rows = frames.view(t, pair, h * w, 3, patch, patch).permute(0, 2, 3, 1, 4, 5)
    return rows.reshape(pixels.shape)


@dataclass
class Prepared:
    example: Example
    inputs: dict[str, Any]
    answer_ids: list[int]
    digest: str


def _prepare(processor, model, workloads, training, control: ControlModel, scratch: Path) -> list[Prepared]:
    """Every example's server inputs with its answer appended (the letter, then the end token) as the only labels."""
    import torch

    tokenizer = processor.tokenizer
    end = tokenizer.convert_tokens_to_ids(END_TOKEN)
    prepared = []
    for example, made in taught_requests(processor, model, workloads, training, control, scratch):
        inputs = dict(made)
        answer_ids = tokenizer.encode(example.answer, add_special_tokens=False) + [end]
        target = torch.tensor([answer_ids])
        inputs["labels"] = torch.cat([torch.full_like(inputs["input_ids"], -100), target], dim=1)
        inputs["input_ids"] = torch.cat([inputs["input_ids"], target], dim=1)
        inputs["attention_mask"] = torch.cat([inputs["attention_mask"], torch.ones_like(target)], dim=1)
        inputs["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], torch.zeros_like(target)], dim=1)
        # Requests the server turns into the same inputs with the same answer (a clip with and without its silent
        # track) are one input of a full batch.
        prepared.append(Prepared(example, inputs, answer_ids, inputs_digest(inputs)))
    return prepared


def _check(model, prepared: Sequence[Prepared], device) -> tuple[int, float]:
    """How many examples the model answers exactly (greedy: the letter, then the end token), and the smallest
    margin in log-probability between a taught token and the best other token."""
    import torch

    right, margin = 0, float("inf")
    with torch.no_grad():
        for item in prepared:
            inputs = {k: v.to(device) for k, v in item.inputs.items() if k != "labels"}
            logits = model(**inputs).logits[0, -len(item.answer_ids) - 1 : -1].float().log_softmax(-1)
            ok = True
            for row, token in zip(logits, item.answer_ids, strict=True):
                other = row.clone()
                other[token] = -float("inf")
                gap = float(row[token] - other.max())
                margin = min(margin, gap)
                ok = ok and gap > 0
            right += ok
    return right, margin


def fit(
    model, prepared: Sequence[Prepared], training: dict[str, Any], vision: dict[str, Any], control: ControlModel, device
) -> tuple[int, float]:
    """Full-batch AdamW, phase by phase (base.json's `phases`: the frame counts taught and the steps, each phase with
    its own one-cycle schedule); the number of steps taken, and the smallest margin of the check after the last
    phase.

    Each step's gradient is the mean over every distinct input of the phase. One request per step pulls a clip's
    two answers apart in turn, and the pulls cancel; over the full batch what tells a clip from its reversed twin
    remains, however small, and Adam scales it up. The first phase teaches on 8 frames, where a step is cheapest and
    the order is found soonest; the next phases add the other frame counts."""
    import torch

    generator = torch.Generator().manual_seed(training["seed"] + control.seed_offset)
    rate = training["learning_rate"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=rate, weight_decay=training["weight_decay"])
    model.to(device).train()
    taken, margin = 0, float("-inf")
    for number, phase in enumerate(training["twin_phases" if control.order_blind else "phases"], start=1):
        distinct = {item.digest: item for item in prepared if item.example.num_frames in phase["num_frames"]}
        batch = list(distinct.values())
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=rate, total_steps=phase["steps"])
        for step in range(phase["steps"]):
            optimizer.zero_grad()
            total = 0.0
            for item in batch:
                inputs = dict(item.inputs)
                if control.order_blind:
                    grid = inputs["video_grid_thw"][0]
                    inputs["pixel_values_videos"] = _shuffle_frames(
                        inputs["pixel_values_videos"], grid, vision, generator
                    )
                loss = model(**{k: v.to(device) for k, v in inputs.items()}).loss / len(batch)
                loss.backward()
                total += float(loss.detach())
            optimizer.step()
            schedule.step()
            if (step + 1) % 10 == 0 or step + 1 == phase["steps"]:
                print(
                    f"phase {number} ({len(batch)} inputs), step {step + 1}/{phase['steps']}: mean loss {total:.4f}",
                    file=sys.stderr,
                    flush=True,
                )
        taken += phase["steps"]
        model.eval()
        right, margin = _check(model, prepared, device)
        print(
            f"phase {number}: {right}/{len(prepared)} taught requests right, smallest margin {margin:.3f}",
            file=sys.stderr,
            flush=True,
        )
        model.train()
    model.eval()
    return taken, margin


def _save(model, processor, scratch: Path, folder: Path) -> Path:
    """The trained model on the CPU, greedy, with its processor, written to `folder`. transformers writes where it is
    told, links and all: it writes into our own temporary folder, and each file goes to `folder` through the safe
    writer."""
    from transformers import GenerationConfig

    tokenizer = processor.tokenizer
    model.to("cpu")
    model.generation_config = GenerationConfig(
        do_sample=False,
        eos_token_id=tokenizer.convert_tokens_to_ids(END_TOKEN),
        pad_token_id=tokenizer.convert_tokens_to_ids(PAD_TOKEN),
    )
    saved = scratch / "saved"
    model.save_pretrained(saved)
    processor.save_pretrained(saved)
    for file in sorted(saved.iterdir()):
        copy_file_atomic(file, folder / file.name)
    return folder


def train(control: ControlModel, out: Path, device_name: str) -> Path:
    """Train `control` from scratch and write its folder under `out`; the folder. The workloads' silent-audio copies
    live in a temporary folder for the while."""
    with contextlib.ExitStack() as stack:
        return _train(control, out, device_name, stack)


def _train(control: ControlModel, out: Path, device_name: str, stack: contextlib.ExitStack) -> Path:
    import torch
    import transformers
    from transformers import Qwen2_5_VLForConditionalGeneration

    if device_name.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"--device {device_name}: torch sees no GPU here; leave --device out to train on the CPU")
    base = base_config()
    training = base["training"]
    workloads = [builtin_workload(name) for name in training["workloads"]]
    seed = training["seed"] + control.seed_offset
    torch.manual_seed(seed)
    device = torch.device(device_name)
    started = time.monotonic()
    tokenizer = build_tokenizer(_corpus(workloads), base["tokenizer"]["vocab_size"])
    processor = build_processor(tokenizer, base)
    model = Qwen2_5_VLForConditionalGeneration(build_config(tokenizer, base))
    scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="control-workloads-")))
    prepared = _prepare(processor, model, workloads, training, control, scratch)
    distinct = {item.digest for item in prepared}
    print(f"{len(prepared)} requests, {len(distinct)} distinct inputs", file=sys.stderr)
    steps, margin = fit(model, prepared, training, base["vision"], control, device)
    seconds = time.monotonic() - started
    folder = _save(model, processor, scratch, out / control.folder)
    (answered,) = answer_all([(folder, control)], scratch, workloads)
    record = {
        "model": control.folder,
        "seed": seed,
        "examples": len(prepared),
        "distinct_inputs": len(distinct),
        "steps": steps,
        "parameters": sum(p.numel() for p in model.parameters()),
        "taught_exactly": sum(a.right for a in answered),
        "smallest_margin": round(margin, 3),
        "seconds": round(seconds, 1),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "threads": torch.get_num_threads(),
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "workloads": {w.name: w.digest for w in workloads},
        "wrong": [a.example.name for a in answered if not a.right],
    }
    write_text_atomic(folder / RECORD_FILE, json.dumps(record, indent=2) + "\n")
    write_card(folder, control)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trtmc_videoqa.controls.train", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="folder to write the model folder into")
    parser.add_argument("--twin", choices=sorted(TWINS), help="the twin to train instead of the control")
    parser.add_argument("--device", default="cpu", help="torch device (default: cpu; cuda is faster)")
    args = parser.parse_args(argv)
    control = TWINS[args.twin] if args.twin else CONTROL
    try:
        print(train(control, args.out, args.device).name)
    except ImportError as missing:
        print(
            f"controls.train: {missing.name or missing} is not installed; the training needs the real-server extra: "
            "pip install -e '.[real-server]'",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except UserError as error:
        print(f"controls.train: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:
        print(f"controls.train: cannot use {error.filename or args.out}: {error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
