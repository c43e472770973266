"""A contact strip of the frames a policy picks, so a person sees what the model is meant to see."""

from __future__ import annotations

import io
from os import PathLike
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from ..common.atomic_write import write_bytes_atomic
from .errors import ClipError
from .frames import PNG_LEVEL, decode_images
from .sampling import ResolvedSampling
from .source import DEFAULT_MAX_BYTES

_LABEL_COLOUR = (255, 255, 255)
_BAND_COLOUR = (0, 0, 0)
# A strip is for a person to look at: 32 picked frames of 720p is 29.5 million pixels. Past this the strip (and the
# frames decoded for it) would take gigabytes for nothing anyone reads.
MAX_STRIP_PIXELS = 40_000_000


def write_strip(
    clip_path: str | PathLike[str],
    resolved_sampling: ResolvedSampling,
    out_png: str | PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    frame_size: tuple[int, int] | None = None,
    make_parents: bool = True,
) -> Path:
    """Write the picked frames side by side (width = frames x frame width), each labelled with its index and
    timestamp in a band underneath; the PNG is written atomically, as a regular file (a link, device or FIFO in
    its place is refused; its folder must exist unless make_parents). `frame_size` (width, height), where known,
    lets a strip over MAX_STRIP_PIXELS be refused before any frame is decoded. Returns its path."""
    indices = resolved_sampling.indices
    if not indices:
        raise ValueError("the resolved sampling picks no frames; nothing to draw")
    out = Path(out_png)
    if frame_size is not None:
        _check_size(clip_path, len(indices), *frame_size)
    frames = decode_images(clip_path, indices, max_bytes=max_bytes)
    width, height = frames[0].size
    _check_size(clip_path, len(frames), width, height)
    font = _font(width)
    band = _band_height(font)
    strip = Image.new("RGB", (width * len(frames), height + band), _BAND_COLOUR)
    draw = ImageDraw.Draw(strip)
    labels = zip(frames, indices, resolved_sampling.timestamps_s, strict=False)
    for slot, (image, index, seconds) in enumerate(labels):
        strip.paste(image, (slot * width, 0))
        draw.text((slot * width + 2, height + 1), f"#{index} {seconds:.2f}s", fill=_LABEL_COLOUR, font=font)
    png = io.BytesIO()
    strip.save(png, format="PNG", compress_level=PNG_LEVEL)
    return write_bytes_atomic(out, png.getvalue(), make_parents=make_parents)


def _check_size(clip: str | PathLike[str], frames: int, width: int, height: int) -> None:
    pixels = frames * width * height
    if pixels > MAX_STRIP_PIXELS:
        raise ClipError(
            clip,
            f"would make a strip of {frames} frames of {width}x{height}, {pixels / 1e6:.0f} million pixels "
            f"(at most {MAX_STRIP_PIXELS / 1e6:.0f} million)",
            "pick fewer frames with --policy, e.g. uniform:8",
        )


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
