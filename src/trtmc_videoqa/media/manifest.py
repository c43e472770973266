"""The clip manifest: what a probe found in one clip file (media.md §2.4, §7.2)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

COUNT_BY_PACKETS = "packets, first and last frame decoded"
COUNT_BY_DECODING = "decoded all frames"

FrameCountMethod = Literal["packets, first and last frame decoded", "decoded all frames"]
DurationSource = Literal["container", "stream", "last pts + frame duration"]
FpsSource = Literal["average_rate", "guessed_rate", "base_rate", "frames / duration"]
BitRateSource = Literal["stream", "derived: size*8/duration"]


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
