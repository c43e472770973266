"""Small synthetic clips for the media tests, made with PyAV once per test session.

A red 8x8 square moves left to right over a dark background (64x48, 24 fps, 48 frames), so a test can read
the square's position back from any decoded frame and check frame order. Fresh frames carry pts = index and
time_base = 1/fps: re-using the timestamps of decoded frames when encoding them again breaks the file.
The session fixture that builds them all is `clips` in conftest.py.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image

WIDTH, HEIGHT, FPS, FRAMES = 64, 48, 24, 48
SQUARE = 8
TRAVEL = WIDTH - SQUARE


def square_x(index: int, frames: int = FRAMES) -> int:
    """Left edge of the square in frame ``index``."""
    return round(index * TRAVEL / (frames - 1))


def frame_pixels(index: int, frames: int = FRAMES) -> np.ndarray:
    pixels = np.full((HEIGHT, WIDTH, 3), 24, np.uint8)
    x = square_x(index, frames)
    pixels[HEIGHT // 2 - SQUARE // 2 : HEIGHT // 2 + SQUARE // 2, x : x + SQUARE] = (255, 0, 0)
    return pixels


def measured_square_x(pixels: np.ndarray) -> int:
    """The left edge of the red square found in a decoded RGB frame."""
    red = (pixels[..., 0] > 160) & (pixels[..., 1] < 100)
    columns = np.flatnonzero(red.any(axis=0))
    return int(columns[0]) if columns.size else -1


def write_clip(
    path: Path,
    container_format: str,
    codec: str,
    pix_fmt: str,
    *,
    audio: bool = False,
    options: dict[str, str] | None = None,
    frames: int = FRAMES,
) -> Path:
    time_base = Fraction(1, FPS)
    with av.open(str(path), "w", format=container_format, options=options or {}) as container:
        video = container.add_stream(codec, rate=FPS)
        video.width, video.height, video.pix_fmt = WIDTH, HEIGHT, pix_fmt
        sound = container.add_stream("aac", rate=8000) if audio else None
        for index in range(frames):
            frame = av.VideoFrame.from_ndarray(frame_pixels(index, frames), format="rgb24")
            frame.pts, frame.time_base = index, time_base
            container.mux(video.encode(frame))
        container.mux(video.encode())
        if sound is not None:
            samples = 1024
            for block in range(frames * 8000 // FPS // samples):
                chunk = av.AudioFrame.from_ndarray(np.zeros((1, samples), np.float32), format="fltp", layout="mono")
                chunk.sample_rate, chunk.pts = 8000, block * samples
                container.mux(sound.encode(chunk))
            container.mux(sound.encode())
    return path


def remux(source: Path, path: Path, container_format: str) -> Path:
    """The same coded video in another container, every packet copied (no encoder runs, so the pixels are the very
    same: two encodes of the same frames are not promised to be)."""
    with av.open(str(source)) as given, av.open(str(path), "w", format=container_format) as container:
        (video,) = given.streams.video
        copy = container.add_stream_from_template(video)
        for packet in given.demux(video):
            if packet.dts is not None:  # the demuxer's empty flush packet is not data
                packet.stream = copy
                container.mux(packet)
    return path


def write_audio_only(path: Path) -> Path:
    with av.open(str(path), "w", format="mp4") as container:
        sound = container.add_stream("aac", rate=8000)
        for block in range(8):
            chunk = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            chunk.sample_rate, chunk.pts = 8000, block * 1024
            container.mux(sound.encode(chunk))
        container.mux(sound.encode())
    return path


def overstate_avi_frames(source: Path, target: Path, declared: int) -> Path:
    """A copy of an AVI whose video stream header claims ``declared`` frames (the strh dwLength field)."""
    data = bytearray(source.read_bytes())
    header = data.find(b"strh")
    assert data[header + 8 : header + 12] == b"vids"
    struct.pack_into("<I", data, header + 8 + 32, declared)
    target.write_bytes(bytes(data))
    return target


@dataclass(frozen=True)
class Clips:
    root: Path
    mp4: Path
    mp4_faststart: Path
    mp4_audio: Path
    webm: Path
    mkv: Path
    avi: Path
    mpg: Path
    gif: Path
    m4v: Path  # raw MPEG-4 elementary stream: neither container nor stream knows its duration
    avi_overstated: Path
    png: Path
    text_as_mp4: Path
    audio_only: Path
    empty: Path


def build_clips(root: Path) -> Clips:
    def clip(name: str, *args: str, **kwargs: object) -> Path:
        return write_clip(root / name, *args, **kwargs)  # type: ignore[arg-type]

    avi = clip("square.avi", "avi", "mpeg4", "yuv420p")
    mp4 = clip("square.mp4", "mp4", "libx264", "yuv420p")
    png = root / "still.png"
    Image.fromarray(frame_pixels(0)).save(png)
    text = root / "notes.mp4"
    text.write_text("these are meeting notes, not a video\n" * 20)
    empty = root / "empty.mp4"
    empty.write_bytes(b"")
    return Clips(
        root=root,
        mp4=mp4,
        mp4_faststart=clip("square-faststart.mp4", "mp4", "libx264", "yuv420p", options={"movflags": "faststart"}),
        mp4_audio=clip("square-audio.mp4", "mp4", "libx264", "yuv420p", audio=True),
        webm=clip("square.webm", "webm", "libvpx-vp9", "yuv420p"),
        mkv=remux(mp4, root / "square.mkv", "matroska"),
        avi=avi,
        mpg=clip("square.mpg", "mpeg", "mpeg2video", "yuv420p"),
        gif=clip("square.gif", "gif", "gif", "rgb8"),
        m4v=clip("square.m4v", "m4v", "mpeg4", "yuv420p"),
        avi_overstated=overstate_avi_frames(avi, root / "overstated.avi", declared=60),
        png=png,
        text_as_mp4=text,
        audio_only=write_audio_only(root / "speech.m4a"),
        empty=empty,
    )
