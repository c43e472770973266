"""Decoded pixels: the frames at chosen indices, every frame with its time, a frame as PNG, and a hash of every
frame's RGB pixels.

Clips are a few seconds long, so each call decodes the clip once from the start and picks what it needs
(seeking lands on the previous keyframe anyway, which for a typical x264 clip is frame 0).

NumPy loads only where arrays are asked for: a strip's frames come as Pillow images of the same RGB24 pixels.
"""

from __future__ import annotations

import hashlib
import io
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, TypeVar

import av
import av.error

from .errors import ClipError
from .source import DEFAULT_MAX_BYTES, ClipSource, decode_failure, load_clip, open_video

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

Picked = TypeVar("Picked")
# zlib level 1 for every PNG written of decoded frames: lossless at any level; on the workloads' frames within 2% of
# the size of Pillow's default level 6, and two to four times faster (a 32-frame strip of bigbuckbunny: 125 ms -> 35
# to 58 ms).
PNG_LEVEL = 1


def decode_frames(
    source: ClipSource, indices: Sequence[int], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[np.ndarray]:
    """The frames at ``indices`` (presentation order, 0-based), in the order asked, as HxWx3 uint8 RGB arrays."""
    return _pick(source, indices, max_bytes, lambda frame: frame.to_ndarray())


def decode_images(
    source: ClipSource, indices: Sequence[int], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[Image.Image]:
    """The frames ``decode_frames`` gives, as RGB Pillow images of the same pixels (no NumPy loaded)."""
    return _pick(source, indices, max_bytes, lambda frame: frame.to_image())


def _pick(
    source: ClipSource, indices: Sequence[int], max_bytes: int, convert: Callable[[av.VideoFrame], Picked]
) -> list[Picked]:
    """The frames at ``indices``, in the order asked, each converted; decoding stops after the last one needed."""
    wanted = list(indices)
    for index in wanted:
        if isinstance(index, bool) or not _is_integer(index) or index < 0:
            raise ValueError(f"frame indices must be non-negative integers, got {index!r}")
    data, clip = load_clip(source, max_bytes=max_bytes)
    if not wanted:
        return []
    needed = set(wanted)
    last_needed = max(needed)
    picked: dict[int, Picked] = {}
    seen, rgb24 = 0, _rgb24()
    with closing(_frames(data, clip)) as frames:  # stops decoding (and closes the file) after the last one needed
        for position, frame in enumerate(frames):
            seen = position + 1
            if position in needed:
                picked[position] = convert(rgb24(frame))
            if position == last_needed:
                break
    missing = sorted(needed - picked.keys())
    if missing:
        raise ValueError(f"frame index {missing[0]} is out of range: clip {clip} has {seen} frames")
    return [picked[index] for index in wanted]


def _rgb24() -> Callable[[av.VideoFrame], av.VideoFrame]:
    """Frames as RGB24 through one reformatter for a whole decode: the same pixels as each frame's own
    `to_ndarray(format="rgb24")`, where PyAV gives every frame a reformatter of its own and sets a swscale context up
    anew for each (1.5 to 2.5 ms a 160x120 frame here, against about 0.15 ms through one)."""
    from av.video.reformatter import VideoReformatter

    reformatter = VideoReformatter()
    return lambda frame: reformatter.reformat(frame, format="rgb24")


def _is_integer(value: object) -> bool:
    """An int or a NumPy integer (a NumPy integer exists only once NumPy is loaded, so it is not loaded for this)."""
    numpy = sys.modules.get("numpy")
    return isinstance(value, int) or (numpy is not None and isinstance(value, numpy.integer))


@dataclass(frozen=True)
class TimedFrame:
    rgb: np.ndarray  # HxWx3 uint8
    seconds: float | None  # presentation time (PTS x time base); None where the stream gives the frame none


@dataclass(frozen=True)
class TimedClip:
    frames: list[TimedFrame]
    rate: Fraction  # the stream's average frame rate (1 where it declares none): what an fps policy counts from


def decode_timed_frames(source: ClipSource, *, max_bytes: int = DEFAULT_MAX_BYTES) -> TimedClip:
    """Every frame of the clip, decoded once, in presentation order, each with its time in seconds (every frame
    held at once: for a short clip; `timed_frames` streams them one at a time under a budget)."""
    data, clip = load_clip(source, max_bytes=max_bytes)
    with open_video(data, clip) as (container, stream):
        rate, rgb24 = Fraction(stream.average_rate or stream.guessed_rate or 1), _rgb24()
        try:
            frames = [TimedFrame(rgb24(frame).to_ndarray(), frame.time) for frame in container.decode(stream)]
        except av.error.FFmpegError as error:
            raise decode_failure(clip, error) from None
    return TimedClip(frames, rate)


@dataclass(frozen=True)
class FrameBudget:
    """The most a clip's frames may cost when they are decoded one by one: frames, and frames x width x height; the
    options that set them, named in a refusal."""

    max_frames: int
    max_pixels: int
    frames_option: str = "--max-frames"
    pixels_option: str = "--max-pixels"


class TimedFrames:
    """Every frame of a clip in presentation order, one at a time, as (index, the decoded frame, its time in seconds
    or None), never more than one held; iterating again decodes again. A ClipError, before the frame that would pass
    it, where the clip has more frames or more pixels than the budget allows. `rate` is the stream's average frame
    rate once iteration has begun."""

    def __init__(self, source: ClipSource, budget: FrameBudget, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.source, self.budget, self.max_bytes = source, budget, max_bytes
        self.rate = Fraction(1)

    def __iter__(self) -> Iterator[tuple[int, av.VideoFrame, float | None]]:
        data, clip = load_clip(self.source, max_bytes=self.max_bytes)
        budget, pixels = self.budget, 0
        with open_video(data, clip) as (container, stream):
            self.rate = Fraction(stream.average_rate or stream.guessed_rate or 1)
            try:
                for index, frame in enumerate(container.decode(stream)):
                    pixels += frame.width * frame.height
                    if index >= budget.max_frames:
                        problem, fix = f"has more than {budget.max_frames:,} frames", f"raise {budget.frames_option}"
                        raise ClipError(clip, problem, f"{fix}, or send a shorter clip")
                    if pixels > budget.max_pixels:
                        problem = (
                            f"has more than {budget.max_pixels:,} pixels over its frames (frames x width x height)"
                        )
                        raise ClipError(clip, problem, f"raise {budget.pixels_option}, or send a smaller clip")
                    yield index, frame, frame.time
            except av.error.FFmpegError as error:
                raise decode_failure(clip, error) from None


def png_bytes(rgb: np.ndarray) -> bytes:
    """One RGB frame as a lossless PNG, so the frame a server decodes is the pixels decoded here."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(rgb, mode="RGB").save(out, format="PNG", compress_level=PNG_LEVEL)
    return out.getvalue()


def frame_png(frame: av.VideoFrame) -> bytes:
    """One decoded frame as a lossless PNG of its RGB24 pixels (the pixels `decode_frames` gives), no NumPy."""
    out = io.BytesIO()
    frame.to_image().save(out, format="PNG", compress_level=PNG_LEVEL)
    return out.getvalue()


def rgb_sha256(rgb: np.ndarray) -> str:
    """sha256 of one frame's RGB pixels (rows packed): what a test compares a frame a server received with."""
    import numpy as np

    return hashlib.sha256(np.ascontiguousarray(rgb, dtype=np.uint8).tobytes()).hexdigest()


def decoded_rgb_sha256(source: ClipSource, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """sha256 over every frame's RGB24 pixels (rows packed, frames in presentation order).

    A secondary identity: it survives a re-mux, but RGB conversion may change between FFmpeg versions, so the
    file's sha256 stays the primary one.
    """
    data, clip = load_clip(source, max_bytes=max_bytes)
    digest, rgb24 = hashlib.sha256(), _rgb24()
    for frame in _frames(data, clip):
        digest.update(rgb24(frame).to_ndarray().tobytes())
    return digest.hexdigest()


def _frames(data: bytes, clip: str) -> Generator[av.VideoFrame, None, None]:
    with open_video(data, clip) as (container, stream):
        try:
            yield from container.decode(stream)
        except av.error.FFmpegError as error:
            raise decode_failure(clip, error) from None
