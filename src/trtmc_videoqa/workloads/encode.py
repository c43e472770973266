"""Write frames as an H.264/yuv420p mp4 with fixed settings, the one way every committed clip is made."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from ..common.atomic_write import atomic_target


@dataclass(frozen=True)
class H264Settings:
    """Encode settings, recorded in each clip's ``derived_from.settings``."""

    crf: int = 23
    preset: str = "medium"
    # x264's output depends on its thread count; one thread gives the same bytes on any machine.
    threads: int = 1

    def record(self) -> dict[str, str | int]:
        return {"codec": "libx264", "pix_fmt": "yuv420p", "container": "mp4", **asdict(self)}


def encoder_versions() -> dict[str, str]:
    """The library versions that shape the bytes (a different PyAV/FFmpeg gives different bytes)."""
    libavcodec = av.library_versions.get("libavcodec", ())
    return {"pyav": av.__version__, "libavcodec": ".".join(str(part) for part in libavcodec)}


def write_h264_mp4(
    path: Path,
    frames: Iterable[np.ndarray],
    *,
    width: int,
    height: int,
    fps: int,
    frame_format: str = "rgb24",
    settings: H264Settings = H264Settings(),
) -> Path:
    """Encode ``frames`` (arrays in ``frame_format``) in the given order, video only.

    Every frame is a fresh VideoFrame with pts = its index in a 1/fps time base: reusing decoded frames with
    their old timestamps, or none, gives a broken file (the muxer gets pts that repeat or are missing).
    """
    path = Path(path)
    time_base = Fraction(1, fps)
    # bitexact keeps the muxer from writing its version string into the file.
    with (
        atomic_target(path) as temporary,
        av.open(str(temporary), mode="w", format="mp4", options={"fflags": "+bitexact"}) as container,
    ):
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.time_base = time_base
        stream.codec_context.thread_count = settings.threads
        stream.options = {"crf": str(settings.crf), "preset": settings.preset}
        for index, pixels in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(pixels, format=frame_format)
            frame.pts, frame.time_base = index, time_base
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return path
