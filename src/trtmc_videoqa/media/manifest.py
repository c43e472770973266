"""The clip manifest: what a probe found in one clip file (its claims, what was counted and decoded)."""

from __future__ import annotations

from ..results import (
    BitRateSource,
    ClipManifest,
    CodecInfo,
    DurationSource,
    FpsSource,
    FrameCountMethod,
    ProbeTool,
)

# The models live with the result rows that carry them (results.py imports nothing of ours); the probe names here
# how it counted the frames.
COUNT_BY_PACKETS: FrameCountMethod = "packets, first and last frame decoded"
COUNT_BY_DECODING: FrameCountMethod = "decoded all frames"

__all__ = [
    "COUNT_BY_DECODING",
    "COUNT_BY_PACKETS",
    "BitRateSource",
    "ClipManifest",
    "CodecInfo",
    "DurationSource",
    "FpsSource",
    "FrameCountMethod",
    "ProbeTool",
]
