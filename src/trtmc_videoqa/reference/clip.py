"""From a request's clip (a chat data URL, or a native request's inline file) to the frames the endpoint looks at:
bytes, frame count, its own sampling, RGB frames.

Parsing, decoding and sampling are the media room's; this module only strings them together for one request and
turns their failures into HTTP 400s.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction

import av.error
import numpy as np

from ..media import ClipError, ResolvedSampling, SamplingPolicy, decode_frames, parse_data_url
from ..media.source import open_video
from .errors import RequestRejected


@dataclass(frozen=True)
class RequestClip:
    mime: str
    data: bytes
    sha256: str
    field: str = "video_url"  # the request field it came in, named in a refusal


def clip_from_bytes(data: bytes, mime: str, *, field: str = "video_url") -> RequestClip:
    """The clip both routes answer about: same bytes, same object, so chat and native decode it alike."""
    return RequestClip(mime=mime, data=data, sha256=hashlib.sha256(data).hexdigest(), field=field)


@dataclass(frozen=True)
class SampledClip:
    sampling: ResolvedSampling
    frames: list[np.ndarray]


def clip_from_data_url(url: str) -> RequestClip:
    """The clip carried by a video_url part; a URL that is not a base64 video data URL is a 400."""
    try:
        mime, data = parse_data_url(url)
    except ValueError as error:
        raise RequestRejected(400, f"malformed video_url data URL: {error}") from None
    if not mime.startswith("video/"):
        raise RequestRejected(400, f"video_url data URL has MIME type {mime!r}; expected video/*")
    return clip_from_bytes(data, mime)


def _frame_count_and_rate(data: bytes, name: str) -> tuple[int, Fraction]:
    # Demuxed non-empty packets equal decoded frames for every clip measured (see media/probe.py), at ~1 ms.
    with open_video(data, name) as (container, stream):
        count = sum(1 for packet in container.demux(stream) if packet.size > 0)
        rate = stream.average_rate or stream.guessed_rate or Fraction(1)
    return count, Fraction(rate)


def sample_clip(clip: RequestClip, policy: SamplingPolicy) -> SampledClip:
    """Decode the frames ``policy`` picks; an undecodable clip is a 400 naming what FFmpeg found."""
    what = f"the {clip.field} clip"
    try:
        count, rate = _frame_count_and_rate(clip.data, f"<request {clip.field}>")
        if count == 0:
            raise RequestRejected(400, f"{what} has a video stream but no frames")
        sampling = policy.resolve(count, rate)
        frames = decode_frames(clip.data, sampling.indices, max_bytes=max(len(clip.data), 1))
    except ClipError as error:
        raise RequestRejected(400, f"{what} cannot be decoded: {error}") from None
    except av.error.FFmpegError as error:
        raise RequestRejected(400, f"{what} cannot be decoded: {error}") from None
    except ValueError as error:  # a frame the demuxer counted but the decoder never produced
        raise RequestRejected(400, f"{what} cannot be decoded consistently: {error}") from None
    return SampledClip(sampling=sampling, frames=frames)
