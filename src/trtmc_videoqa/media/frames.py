"""Decoded pixels: the frames at chosen indices, every frame with its time, a frame as PNG, and a hash of every
frame's RGB pixels.

Clips are a few seconds long, so each call decodes the clip once from the start and picks what it needs
(seeking lands on the previous keyframe anyway, which for a typical x264 clip is frame 0).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Generator, Sequence
from contextlib import closing
from dataclasses import dataclass
from fractions import Fraction

import av
import av.error
import numpy as np

from .source import DEFAULT_MAX_BYTES, ClipSource, decode_failure, load_clip, open_video


def decode_frames(
    source: ClipSource, indices: Sequence[int], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[np.ndarray]:
    """The frames at ``indices`` (presentation order, 0-based), in the order asked, as HxWx3 uint8 RGB arrays."""
    wanted = list(indices)
    for index in wanted:
        if isinstance(index, bool) or not isinstance(index, int | np.integer) or index < 0:
            raise ValueError(f"frame indices must be non-negative integers, got {index!r}")
    data, clip = load_clip(source, max_bytes=max_bytes)
    if not wanted:
        return []
    needed = set(wanted)
    last_needed = max(needed)
    picked: dict[int, np.ndarray] = {}
    seen = 0
    with closing(_frames(data, clip)) as frames:  # stops decoding (and closes the file) after the last one needed
        for position, frame in enumerate(frames):
            seen = position + 1
            if position in needed:
                picked[position] = frame.to_ndarray(format="rgb24")
            if position == last_needed:
                break
    missing = sorted(needed - picked.keys())
    if missing:
        raise ValueError(f"frame index {missing[0]} is out of range: clip {clip} has {seen} frames")
    return [picked[index] for index in wanted]


@dataclass(frozen=True)
class TimedFrame:
    rgb: np.ndarray  # HxWx3 uint8
    seconds: float | None  # presentation time (PTS x time base); None where the stream gives the frame none


@dataclass(frozen=True)
class TimedClip:
    frames: list[TimedFrame]
    rate: Fraction  # the stream's average frame rate (1 where it declares none): what an fps policy counts from


def decode_timed_frames(source: ClipSource, *, max_bytes: int = DEFAULT_MAX_BYTES) -> TimedClip:
    """Every frame of the clip, decoded once, in presentation order, each with its time in seconds."""
    data, clip = load_clip(source, max_bytes=max_bytes)
    with open_video(data, clip) as (container, stream):
        rate = Fraction(stream.average_rate or stream.guessed_rate or 1)
        try:
            frames = [TimedFrame(frame.to_ndarray(format="rgb24"), frame.time) for frame in container.decode(stream)]
        except av.error.FFmpegError as error:
            raise decode_failure(clip, error) from None
    return TimedClip(frames, rate)


def png_bytes(rgb: np.ndarray) -> bytes:
    """One RGB frame as a lossless PNG, so the frame a server decodes is the pixels decoded here."""
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(rgb, mode="RGB").save(out, format="PNG")
    return out.getvalue()


def rgb_sha256(rgb: np.ndarray) -> str:
    """sha256 of one frame's RGB pixels (rows packed): what a test compares a frame a server received with."""
    return hashlib.sha256(np.ascontiguousarray(rgb, dtype=np.uint8).tobytes()).hexdigest()


def decoded_rgb_sha256(source: ClipSource, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """sha256 over every frame's RGB24 pixels (rows packed, frames in presentation order).

    A secondary identity: it survives a re-mux, but RGB conversion may change between FFmpeg versions, so the
    file's sha256 stays the primary one.
    """
    data, clip = load_clip(source, max_bytes=max_bytes)
    digest = hashlib.sha256()
    for frame in _frames(data, clip):
        digest.update(frame.to_ndarray(format="rgb24").tobytes())
    return digest.hexdigest()


def _frames(data: bytes, clip: str) -> Generator[av.VideoFrame, None, None]:
    with open_video(data, clip) as (container, stream):
        try:
            yield from container.decode(stream)
        except av.error.FFmpegError as error:
            raise decode_failure(clip, error) from None
