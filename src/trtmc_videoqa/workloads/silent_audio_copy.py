"""A sealed copy of a workload for servers that read audio from every video and sample a fixed frame count.

Hugging Face `transformers serve` 5.19 to 5.24 has two such habits, and a copy of the workload steps around both
without touching the server:

1. For every vision-language model class it also reads an audio track from each video, and fails on a clip without
   one. Each clip of the copy carries a silent AAC track beside its video stream, which is copied packet for packet
   (media/silent_audio.py): the model sees the same frames.
2. It asks the processor for 32 frames of every video unless the request's `chat_template_kwargs` say otherwise,
   so a shorter clip fails and a longer one is sampled more densely than the workload says. The copy's
   `generation.extra_body` asks for the workload's own frame count (its first policy, `uniform:N`).

The copy has its own name and digest (sealed by workloads/seal.py), and each clip's derivation names the original,
so a row measured on it says what was changed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..common.atomic_write import copy_file_atomic, write_text_atomic
from ..results.layout import WORKLOAD_FILE
from .loading import Workload, WorkloadError, load_workload_file
from .seal import seal_workload_file

SUFFIX = "silent-audio"


def frame_count(workload: Workload) -> int:
    """The N of the workload's first sampling policy, `uniform:N`: the frames the server is asked for."""
    policy = workload.sampling_policies()[0]
    if policy.mode == "uniform" and policy.frames is not None:
        return policy.frames
    raise WorkloadError(
        f"workload {workload.name!r}: its first sampling policy is {policy.spec}, not uniform:N; a server that "
        "samples a fixed frame count needs one (put a uniform:N policy first)"
    )


def adaptation_note(workload: Workload, frames: int) -> str:
    """What the copy changes, in the words a row records."""
    return (
        f"workload copy {workload.name}-{SUFFIX}: each clip with a silent AAC track beside its unchanged video "
        f"packets; every request asks for {frames} frames (chat_template_kwargs.num_frames)"
    )


def silent_audio_workload(workload: Workload, folder: Path, *, why: str = "") -> Workload:
    """Write the copy into `folder` (its clips, attribution files, workload.json), seal it, load it back with every
    check a run makes, and return it. `why` is added to the description (who needs the copy)."""
    from ..media.silent_audio import SILENT_RATE, with_silent_audio

    frames = frame_count(workload)
    folder.mkdir(parents=True, exist_ok=True)
    raw: dict[str, Any] = json.loads(workload.file.read_text(encoding="utf-8"))
    for attribution in {clip["attribution"] for clip in raw["clips"]}:
        copy_file_atomic(workload.root / attribution, folder / attribution)
    for clip in raw["clips"]:
        original = workload.clip_path(clip["id"])
        copy_name = f"{original.stem}-{SUFFIX}{original.suffix}"
        with_silent_audio(original, folder / copy_name)
        clip["file"] = copy_name
        clip["video"]["audio"] = True
        clip["derived_from"]["recipe"] += f"; then {with_silent_audio.__module__}.with_silent_audio on {original.name}"
        clip["derived_from"]["settings"]["audio"] = f"silent aac, mono, {SILENT_RATE} Hz; video packets copied"
    raw["name"] = f"{workload.name}-{SUFFIX}"
    raw["description"] = (
        f"{raw['description']} This copy: each clip carries a silent AAC track, and every request asks for "
        f"{frames} frames (chat_template_kwargs).{' ' + why if why else ''}"
    )
    generation = raw.setdefault("generation", {})
    extra = dict(generation.get("extra_body") or {})
    extra["chat_template_kwargs"] = {**extra.get("chat_template_kwargs", {}), "num_frames": frames}
    generation["extra_body"] = extra
    file = folder / WORKLOAD_FILE
    write_text_atomic(file, json.dumps(raw, indent=2) + "\n")
    seal_workload_file(file)
    return load_workload_file(file)  # what a run checks: digest, prompts, clip bytes
