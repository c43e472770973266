"""A copy of a clip with a silent audio track beside its unchanged video stream.

Some servers read an audio track from every video they are given and fail on a clip that has none (Hugging Face
`transformers serve` 5.19 to 5.24 does, for every vision-language model class). The copy carries the same video
packets, byte for byte (no re-encoding, so the frames a model sees are the same), and a silent mono AAC track of the
clip's duration, which such a server reads and drops.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from ..common.atomic_write import atomic_target
from .errors import ClipError

SILENT_RATE = 16_000
_SAMPLES_PER_FRAME = 1024  # one AAC frame


def with_silent_audio(clip: Path, out: Path) -> Path:
    """Write `out`: `clip`'s video stream copied and a silent AAC track of its length. Returns `out`."""
    import av

    try:
        source = av.open(str(clip))
    except (av.FFmpegError, OSError) as error:
        raise ClipError(clip, f"cannot be opened ({error})", "give a readable video file") from None
    with source:
        if not source.streams.video:
            raise ClipError(clip, "has no video stream", "give a video clip")
        video_in = source.streams.video[0]
        with atomic_target(out) as temporary, av.open(str(temporary), "w", format="mp4") as target:
            video_out = target.add_stream_from_template(video_in)
            audio = target.add_stream("aac", rate=SILENT_RATE, layout="mono")
            last_end = 0.0
            for packet in source.demux(video_in):
                if packet.dts is None:  # the demuxer's flush packet
                    continue
                if packet.pts is not None and packet.duration is not None and packet.time_base is not None:
                    last_end = max(last_end, float((packet.pts + packet.duration) * packet.time_base))
                packet.stream = video_out
                target.mux(packet)
            _mux_silence(target, audio, last_end)
    return out


def _mux_silence(target: Any, audio: Any, duration_s: float) -> None:
    """Silent frames covering `duration_s`, encoded and muxed, then the encoder flushed."""
    import av
    import numpy as np

    frames = max(1, int(duration_s * SILENT_RATE / _SAMPLES_PER_FRAME) + 1)
    silence = np.zeros((1, _SAMPLES_PER_FRAME), dtype=np.float32)
    for index in range(frames):
        frame = av.AudioFrame.from_ndarray(silence, format="fltp", layout="mono")
        frame.sample_rate = SILENT_RATE
        frame.pts = index * _SAMPLES_PER_FRAME
        frame.time_base = Fraction(1, SILENT_RATE)
        for packet in audio.encode(frame):
            target.mux(packet)
    for packet in audio.encode(None):
        target.mux(packet)
