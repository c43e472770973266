"""Clip facts: the probe's manifest of each clip and the frames a sampling policy picks."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import _Model

FrameCountMethod = Literal["packets, first and last frame decoded", "decoded all frames"]
DurationSource = Literal["container", "stream", "last pts + frame duration"]
FpsSource = Literal["average_rate", "guessed_rate", "base_rate", "frames / duration"]
BitRateSource = Literal["stream", "derived: size*8/duration"]
SamplingWhere = Literal["client", "server"]


class CodecInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    decoder: str  # the FFmpeg decoder that read it (AV1 shows libdav1d)
    name: str  # canonical codec name (av1, h264)
    long_name: str
    profile: str | None
    pix_fmt: str | None


class ProbeTool(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    av: str
    ffmpeg: str
    libraries: dict[str, str]  # libavcodec -> "62.28.102", ...


class ClipManifest(BaseModel):
    """The container's claims next to what was counted and decoded; a disagreement is flagged, not hidden."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    sha256: str  # of the file bytes: the clip's primary identity
    bytes: int
    container: str  # FFmpeg demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2"
    container_long_name: str
    codec: CodecInfo
    width: int
    height: int
    fps: str  # exact fraction, "30000/1001"
    fps_float: float
    fps_source: FpsSource
    duration_s: float
    duration_source: DurationSource
    start_time_s: float
    frames_declared: int  # stream.frames; 0 when the container does not say (webm, mkv, MPEG-PS)
    frames_counted: int
    frame_count_method: FrameCountMethod
    frames_mismatch: bool
    frames_mismatch_message: str | None
    first_pts_s: float
    last_pts_s: float
    frames_span_s: float  # last pts + frame duration - first pts: what the frames cover, whatever the header says
    bit_rate: int
    bit_rate_source: BitRateSource
    audio: str | None  # codec of the first audio track, None without one
    decoded_rgb_sha256: str | None = None  # secondary identity, only when asked for
    probe_tool: ProbeTool


class PickedFrames(_Model):
    """The frames a sampling policy picks from one clip."""

    indices: list[int]
    timestamps_s: list[float]
    rule: str


def _absent(value: object) -> bool:
    return value is None


class SamplingFacts(_Model):
    """The workload's declared sampling policy resolved on each clip (workload/<name>/sampling.json); a row of a
    server that states its own policy adds the one it applies, and says so when the two differ."""

    policy: str
    where: SamplingWhere
    clips: dict[str, PickedFrames]
    note: str
    # Left out of the JSON when not stated, as sampling.json has neither.
    applied_by_server: str | None = Field(default=None, exclude_if=_absent)
    mismatch: str | None = Field(default=None, exclude_if=_absent)


# A row that ran nothing (unsupported, held back, crashed before its workload facts) records no sampling: {}.
NoSampling = Annotated[dict[str, Any], Field(max_length=0)]
