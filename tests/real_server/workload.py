"""The test's own workload for `transformers serve` 5.24.0: the Big Buck Bunny workload, with two changes that step
around two defects of that server (its code is never patched; the committed workloads stay as they are).

1. It reads an audio track from every video given to a model class it counts as multimodal (Qwen2.5-VL is one:
   `load_audio_from_video` in cli/serving/chat_completion.py), and torchcodec fails on a clip without an audio
   stream ("The best audio stream is unknown"), so every request is HTTP 500. The clips here are copies with a
   silent AAC track beside the video stream, which is copied packet for packet (media/silent_audio.py): the model
   sees the same frames.
2. It asks the processor for 32 frames of every video unless the request's `chat_template_kwargs` say otherwise,
   and a clip shorter than 32 frames then fails ("The inferred `num_frames=32` exceeds `total_num_frames=20`",
   HTTP 500). The 132-frame clip would survive it, but every request would then carry 32 frames, not the
   workload's own `uniform:8`: `generation.extra_body` sends `{"chat_template_kwargs": {"num_frames": 8}}` with
   every chat request (AIPerf's rows and the capability check alike).

The file is sealed with the repository's own seal tool (workloads/seal.py), so its digest and clip identities are
what loading checks.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from trtmc_videoqa.media.silent_audio import SILENT_RATE, with_silent_audio
from trtmc_videoqa.workloads.loading import load_workload_file
from trtmc_videoqa.workloads.seal import seal_workload_file

BBB = Path(__file__).resolve().parents[2] / "src" / "trtmc_videoqa" / "workloads" / "data" / "bigbuckbunny"
NUM_FRAMES = 8  # the workload's first sampling policy, uniform:8
EXTRA_BODY = {"chat_template_kwargs": {"num_frames": NUM_FRAMES}}
NAME = "bigbuckbunny-silent-audio"


def audio_workload(folder: Path) -> Path:
    """Write the workload into `folder` (its clips, ATTRIBUTION.md, workload.json), seal it, check it loads, and
    return the workload file."""
    folder.mkdir(parents=True, exist_ok=True)
    raw = json.loads((BBB / "workload.json").read_text(encoding="utf-8"))
    shutil.copyfile(BBB / "ATTRIBUTION.md", folder / "ATTRIBUTION.md")
    for clip in raw["clips"]:
        committed = BBB / clip["file"]
        copy = folder / committed.name.replace(".mp4", "-silent-audio.mp4")
        with_silent_audio(committed, copy)
        clip["file"] = copy.name
        clip["video"]["audio"] = True
        clip["derived_from"]["recipe"] += (
            f"; then trtmc_videoqa.media.silent_audio.with_silent_audio on {committed.name} (tests/real_server)"
        )
        clip["derived_from"]["settings"]["audio"] = f"silent aac, mono, {SILENT_RATE} Hz; video packets copied"
    raw["name"] = NAME
    raw["description"] += (
        " This copy, for Hugging Face transformers serve 5.24.0 in tests/real_server: each clip carries a silent AAC"
        f" track, and every request asks for {NUM_FRAMES} frames (chat_template_kwargs)."
    )
    raw.setdefault("generation", {})["extra_body"] = EXTRA_BODY
    file = folder / "workload.json"
    file.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    seal_workload_file(file)
    load_workload_file(file)  # what qualify will check: digest, prompts, clip bytes
    return file
