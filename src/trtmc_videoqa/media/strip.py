"""A contact strip of the frames a policy picks, so a person sees what the model is meant to see."""

from __future__ import annotations

import os
import tempfile
from os import PathLike
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from .frames import decode_frames
from .sampling import ResolvedSampling
from .source import DEFAULT_MAX_BYTES

_LABEL_COLOUR = (255, 255, 255)
_BAND_COLOUR = (0, 0, 0)


def write_strip(
    clip_path: str | PathLike[str],
    resolved_sampling: ResolvedSampling,
    out_png: str | PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Path:
    """Write the picked frames side by side (width = frames x frame width), each labelled with its index and
    timestamp in a band underneath; the PNG is written atomically. Returns its path."""
    indices = resolved_sampling.indices
    if not indices:
        raise ValueError("the resolved sampling picks no frames; nothing to draw")
    frames = decode_frames(clip_path, indices, max_bytes=max_bytes)
    height, width = frames[0].shape[:2]
    font = _font(width)
    band = _band_height(font)
    strip = Image.new("RGB", (width * len(frames), height + band), _BAND_COLOUR)
    draw = ImageDraw.Draw(strip)
    labels = zip(frames, indices, resolved_sampling.timestamps_s, strict=False)
    for slot, (pixels, index, seconds) in enumerate(labels):
        strip.paste(Image.fromarray(pixels, "RGB"), (slot * width, 0))
        draw.text((slot * width + 2, height + 1), f"#{index} {seconds:.2f}s", fill=_LABEL_COLOUR, font=font)
    out = Path(out_png)
    _save_atomically(strip, out)
    return out


def _font(frame_width: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    # Pillow's built-in font scales when FreeType is present; keep the label readable on small and large frames.
    size = max(8, min(frame_width // 8, 24))
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):
        return ImageFont.load_default()


def _band_height(font: ImageFont.ImageFont | ImageFont.FreeTypeFont) -> int:
    bottom = font.getbbox("#0 0.00s")[3]
    return int(bottom) + 4


def _save_atomically(image: Image.Image, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            image.save(stream, format="PNG")
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
