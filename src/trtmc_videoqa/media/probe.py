"""Probe one clip: the container's claims, the true frame count, and a decode check of the first and last frame.

Cost: demuxing a short clip's packets takes about a millisecond; decoding is what costs, so by default only the
first frame and the run from the last keyframe to the end are decoded. ``decode_all`` decodes every frame.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction
from os import PathLike
from typing import cast

import av
import av.error

from .errors import ClipError
from .manifest import (
    COUNT_BY_DECODING,
    COUNT_BY_PACKETS,
    BitRateSource,
    ClipManifest,
    CodecInfo,
    DurationSource,
    FpsSource,
    FrameCountMethod,
    ProbeTool,
)
from .source import DEFAULT_MAX_BYTES, REEXPORT, audio_codec, decode_failure, open_video, read_clip_bytes

# The probe checks that the tail decodes, not what it looks like, so the deblocking filter is skipped there.
# That saved 15-25% of H.264 decode time here; decode_frames and decode_all decode at full quality.
_CHECK_ONLY_OPTIONS = {"skip_loop_filter": "all"}
# In a long H.264 GOP the last frame depends on every frame since the keyframe (125 P-frames in a 5 s single-GOP
# clip: ~300 ms of CPU). H.264's own `showall` flag outputs frames whose references it has not seen, so the last
# packets' bitstream is parsed and decoded in full and the last pts must come out, as in a full decode; only the
# pixels are concealed, and the check does not look at them. A cut or undecodable last packet still fails it.
_TAIL_WITHOUT_REFERENCES = {"h264"}
_TAIL_PACKETS = 8  # at least the last packets in decode order, and always from the one with the last pts on
_TAIL_OPTIONS = {**_CHECK_ONLY_OPTIONS, "flags2": "+showall"}


@dataclass(frozen=True)
class _Counted:
    frames: int
    first_pts: int | None  # in stream time_base; None when the packets carry no timestamps (raw streams)
    last_pts: int | None
    tail_from: int | None = None  # the packet the last-frame check started at (None: decoded with the first)


def probe_clip(
    path: str | PathLike[str],
    *,
    decode_all: bool = False,
    hash_pixels: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ClipManifest:
    """Probe a clip file. ``hash_pixels`` also fills ``decoded_rgb_sha256`` (and decodes every frame)."""
    data = read_clip_bytes(path, max_bytes=max_bytes)
    clip = str(path)
    with open_video(data, clip) as (container, stream):
        try:
            packets = [packet for packet in container.demux(stream) if packet.size > 0]
            if not packets:
                raise ClipError(clip, "has a video stream but no frames in it", REEXPORT)
            rgb_sha256 = None
            if decode_all or hash_pixels:
                counted, rgb_sha256 = _decode_every_frame(stream, packets, clip, hash_pixels=hash_pixels)
            else:
                counted = _check_first_and_last(stream, packets, clip)
        except av.error.FFmpegError as error:
            raise decode_failure(clip, error) from None
        return _manifest(
            clip,
            data,
            container,
            stream,
            packets,
            counted,
            method=COUNT_BY_DECODING if (decode_all or hash_pixels) else COUNT_BY_PACKETS,
            rgb_sha256=rgb_sha256,
        )


def _seconds(value: Fraction | float) -> float:
    return round(float(value), 6)  # microseconds: finer than any frame, and stable in JSON


def _timestamp(packet: av.Packet) -> int | None:
    return packet.pts if packet.pts is not None else packet.dts


def _check_first_and_last(stream: av.VideoStream, packets: list[av.Packet], clip: str) -> _Counted:
    """Decode up to the first frame, then the last frames (from the last keyframe, or for a long H.264 GOP the
    last packets alone); count frames from the packets."""
    decoder = stream.codec_context
    decoder.options = dict(_CHECK_ONLY_OPTIONS)
    stopped_at = None
    for position, packet in enumerate(packets):
        if decoder.decode(packet):
            stopped_at = position
            break
    if stopped_at is None and not decoder.decode(None):
        raise ClipError(clip, "has packets but not one of them decodes to a frame", REEXPORT)
    last_keyframe = max((i for i, packet in enumerate(packets) if packet.is_keyframe), default=0)
    if stopped_at is None:
        tail: list[av.Packet] = []  # everything was drained already
        last_frames: list[av.VideoFrame] = []
    else:
        if last_keyframe > stopped_at or stopped_at + 1 < len(packets) - _TAIL_PACKETS:
            start = max(last_keyframe, stopped_at + 1)
            # the tail must hold the packet of the last frame shown, however deep the B-frame reordering
            shown_last = max(range(len(packets)), key=lambda i: _timestamp(packets[i]) or 0)
            shortcut = min(len(packets) - _TAIL_PACKETS, shown_last)
            if decoder.name in _TAIL_WITHOUT_REFERENCES and shortcut > start:
                start = shortcut
                decoder = _decoder_without_references(stream)
            elif start == last_keyframe:
                decoder.flush_buffers()  # as after a seek: restart at the last keyframe
        else:  # the first frame's run already reaches the end: keep going
            start = stopped_at + 1
        tail = packets[start:]
        last_frames = []
        for packet in tail:
            last_frames.extend(decoder.decode(packet))
        last_frames.extend(decoder.decode(None))
    if tail and not last_frames:
        raise ClipError(clip, "is corrupt: its last frames do not decode", REEXPORT)
    timestamps = [ts for ts in map(_timestamp, packets) if ts is not None]
    last_pts = max(timestamps, default=None)
    decoded_pts = [frame.pts for frame in last_frames if frame.pts is not None]
    if tail and last_pts is not None and decoded_pts and max(decoded_pts) != last_pts:
        raise ClipError(
            clip,
            f"is corrupt: its last frame (pts {last_pts}) does not decode; the decoder stops at pts {max(decoded_pts)}",
            REEXPORT,
        )
    return _Counted(len(packets), min(timestamps, default=None), last_pts, tail_from=start if tail else None)


def _decoder_without_references(stream: av.VideoStream) -> av.VideoCodecContext:
    """A second decoder of the stream's codec and parameters that outputs frames whose references it lacks."""
    # A video stream's codec name makes a video decoder; PyAV's stub can only type a name known at run time as the
    # base CodecContext.
    decoder = cast(av.VideoCodecContext, av.CodecContext.create(stream.codec_context.name, "r"))
    decoder.extradata = stream.codec_context.extradata
    decoder.options = dict(_TAIL_OPTIONS)
    return decoder


def _decode_every_frame(
    stream: av.VideoStream, packets: list[av.Packet], clip: str, *, hash_pixels: bool
) -> tuple[_Counted, str | None]:
    decoder = stream.codec_context
    pixels = hashlib.sha256() if hash_pixels else None
    count, first, last = 0, None, None
    for packet in [*packets, None]:
        for frame in decoder.decode(packet):
            count += 1
            if frame.pts is not None:
                first = frame.pts if first is None else min(first, frame.pts)
                last = frame.pts if last is None else max(last, frame.pts)
            if pixels is not None:
                pixels.update(frame.to_ndarray(format="rgb24").tobytes())
    if count == 0:
        raise ClipError(clip, "has packets but not one of them decodes to a frame", REEXPORT)
    return _Counted(count, first, last), (pixels.hexdigest() if pixels is not None else None)


@dataclass(frozen=True)
class _Timeline:
    fps: Fraction
    fps_source: FpsSource
    first_pts_s: float
    last_pts_s: float
    frames_span_s: float  # from the first frame's start to the last frame's end


def _manifest(
    clip: str,
    data: bytes,
    container: av.container.InputContainer,
    stream: av.VideoStream,
    packets: list[av.Packet],
    counted: _Counted,
    *,
    method: FrameCountMethod,
    rgb_sha256: str | None,
) -> ClipManifest:
    timeline = _timeline(container, stream, packets, counted)
    duration_s, duration_source = _duration(container, stream, timeline.frames_span_s)
    bit_rate, bit_rate_source = _bit_rate(stream, len(data), duration_s)
    declared = stream.frames or 0
    mismatch = declared > 0 and declared != counted.frames
    decoder = stream.codec_context
    audio = container.streams.audio
    fps = timeline.fps
    return ClipManifest(
        path=clip,
        sha256=hashlib.sha256(data).hexdigest(),
        bytes=len(data),
        container=container.format.name,
        container_long_name=container.format.long_name,
        codec=_codec_info(decoder),
        width=decoder.width,
        height=decoder.height,
        fps=f"{fps.numerator}/{fps.denominator}",
        fps_float=float(fps),
        fps_source=timeline.fps_source,
        duration_s=duration_s,
        duration_source=duration_source,
        start_time_s=_start_time(container, stream, timeline.first_pts_s),
        frames_declared=declared,
        frames_counted=counted.frames,
        frame_count_method=method,
        frames_mismatch=mismatch,
        frames_mismatch_message=(
            f"the container declares {declared} frames but {counted.frames} were counted ({method}); "
            "its index disagrees with its content: re-export the clip"
            if mismatch
            else None
        ),
        first_pts_s=timeline.first_pts_s,
        last_pts_s=timeline.last_pts_s,
        frames_span_s=timeline.frames_span_s,
        bit_rate=bit_rate,
        bit_rate_source=bit_rate_source,
        audio=audio_codec(audio[0]) if audio else None,
        decoded_rgb_sha256=rgb_sha256,
        probe_tool=probe_tool(),
    )


def _timeline(
    container: av.container.InputContainer, stream: av.VideoStream, packets: list[av.Packet], counted: _Counted
) -> _Timeline:
    """The frame rate and the first and last frames' times, from the timestamps (or from the rate when none)."""
    time_base = stream.time_base or Fraction(1, 1)
    if counted.first_pts is not None and counted.last_pts is not None:
        first_pts_s = _seconds(counted.first_pts * time_base)
        last_pts_s = _seconds(counted.last_pts * time_base)
        fps, fps_source = _frame_rate(stream, counted.frames, last_pts_s - first_pts_s)
        frame_duration = _frame_duration(packets, time_base, fps)
    else:  # no timestamps at all: frames are 1/fps apart from the start
        fps, fps_source = _frame_rate(stream, counted.frames, 0.0)
        first_pts_s = _start_time(container, stream, 0.0)
        last_pts_s = _seconds(first_pts_s + (counted.frames - 1) / fps)
        frame_duration = float(1 / fps)
    frames_span_s = _seconds(last_pts_s + frame_duration - first_pts_s)
    return _Timeline(fps, fps_source, first_pts_s, last_pts_s, frames_span_s)


def _codec_info(decoder: av.VideoCodecContext) -> CodecInfo:
    return CodecInfo(
        decoder=decoder.name,
        name=decoder.codec.canonical_name,
        long_name=decoder.codec.long_name,
        profile=decoder.profile,
        pix_fmt=decoder.pix_fmt,
    )


def _frame_rate(stream: av.VideoStream, frames: int, span_s: float) -> tuple[Fraction, FpsSource]:
    """The container's own rate that the frames' timestamps bear out, else the rate they measure.

    average_rate first (a GIF measured here had base_rate 100 but average_rate 50), but only when the span
    it predicts for the frames is within 1.5 frames of theirs: a GIF whose delays alternate 4 and 5 cs (24 fps)
    reports average_rate 25 and guessed_rate 24, while an MPEG-PS stamp one frame late keeps its 24."""
    measured = (frames - 1) / span_s if frames > 1 and span_s > 0 else None
    candidates: list[tuple[Fraction | None, FpsSource]] = [
        (stream.average_rate, "average_rate"),
        (stream.guessed_rate, "guessed_rate"),
        (stream.base_rate, "base_rate"),
    ]
    rates = [(Fraction(rate), source) for rate, source in candidates if rate]
    for rate, source in rates:
        if measured is None or abs((frames - 1) / float(rate) - span_s) <= 1.5 / float(rate):
            return rate, source
    if measured is not None:
        return Fraction(measured).limit_denominator(1001), "frames / duration"
    return Fraction(1), "frames / duration"


def _frame_duration(packets: list[av.Packet], time_base: Fraction, fps: Fraction) -> float:
    last = max(packets, key=lambda packet: _timestamp(packet) or 0)
    if last.duration:
        return float(last.duration * time_base)
    return float(1 / fps)


def _duration(
    container: av.container.InputContainer, stream: av.VideoStream, frames_span_s: float
) -> tuple[float, DurationSource]:
    if container.duration:
        return _seconds(container.duration / av.time_base), "container"
    if stream.duration and stream.time_base:
        return _seconds(stream.duration * stream.time_base), "stream"
    return frames_span_s, "last pts + frame duration"


def _start_time(container: av.container.InputContainer, stream: av.VideoStream, first_pts_s: float) -> float:
    if stream.start_time is not None and stream.time_base:
        return _seconds(stream.start_time * stream.time_base)
    if container.start_time is not None:
        return _seconds(container.start_time / av.time_base)
    return first_pts_s


def _bit_rate(stream: av.VideoStream, size: int, duration_s: float) -> tuple[int, BitRateSource]:
    if stream.bit_rate:
        return stream.bit_rate, "stream"
    return (round(size * 8 / duration_s) if duration_s > 0 else 0), "derived: size*8/duration"


def probe_tool() -> ProbeTool:
    """The PyAV version and the FFmpeg libraries it carries."""
    return ProbeTool(
        av=av.__version__,
        ffmpeg=av.ffmpeg_version_info,
        libraries={name: ".".join(map(str, version)) for name, version in av.library_versions.items()},
    )
