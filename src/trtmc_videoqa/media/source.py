"""The thin I/O edge: read a clip's bytes under a size limit and open its video stream with PyAV.

Every bad input becomes a ClipError here, so the rest of the room deals only with readable video.
"""

from __future__ import annotations

import io
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from os import PathLike
from pathlib import Path

import av
import av.error

from .errors import ClipError
from .sniff import find_truncation

DEFAULT_MAX_BYTES = 64 * 1024 * 1024

ClipSource = str | PathLike[str] | bytes | bytearray | memoryview

REEXPORT = "re-export or re-download it"
_NOT_A_VIDEO_FIX = "check that it really is a video and not another kind of file renamed to a video extension"


def read_clip_bytes(path: str | PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The file's bytes, refusing a missing, non-regular, empty or over-limit file."""
    clip = Path(path)
    try:
        info = clip.stat()
    except FileNotFoundError:
        raise ClipError(clip, "does not exist", "check the path") from None
    except OSError as error:
        raise ClipError(clip, f"cannot be read ({error.strerror})", "check the path and its permissions") from None
    if stat.S_ISDIR(info.st_mode):
        raise ClipError(clip, "is a directory, not a file", "pass the path of a video file")
    if not stat.S_ISREG(info.st_mode):
        raise ClipError(clip, "is not a regular file", "pass the path of a video file")
    _check_size(clip, info.st_size, max_bytes)
    try:
        data = clip.read_bytes()
    except OSError as error:
        raise ClipError(clip, f"cannot be read ({error.strerror})", "check its permissions") from None
    _check_size(clip, len(data), max_bytes)  # it may have changed since stat
    return data


def load_clip(source: ClipSource, *, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[bytes, str]:
    """(bytes, the name used in messages) for a path or for bytes already in memory."""
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        _check_size("<bytes>", len(data), max_bytes)
        return data, "<bytes>"
    return read_clip_bytes(source, max_bytes=max_bytes), str(source)


def _check_size(clip: str | Path, size: int, max_bytes: int) -> None:
    if size == 0:
        raise ClipError(clip, "is empty (0 bytes)", REEXPORT)
    if size > max_bytes:
        raise ClipError(
            clip,
            f"is {size:,} bytes, over the {max_bytes:,}-byte limit",
            "use a shorter or smaller clip (for example re-encoded at 320x180), or raise the limit (probe --max-bytes)",
        )


@contextmanager
def open_video(data: bytes, clip: str) -> Iterator[tuple[av.container.InputContainer, av.VideoStream]]:
    """The demuxer and its first video stream; a cut, unreadable, still-image or audio-only file is refused."""
    truncation = find_truncation(data)
    if truncation is not None:
        raise ClipError(clip, truncation, REEXPORT)
    try:
        container = av.open(io.BytesIO(data), mode="r", metadata_errors="replace")
    except av.error.FFmpegError as error:
        raise ClipError(clip, f"is not a video file FFmpeg can read ({error.strerror})", _NOT_A_VIDEO_FIX) from None
    try:
        yield container, _video_stream(container, clip)
    finally:
        container.close()


def _video_stream(container: av.container.InputContainer, clip: str) -> av.VideoStream:
    demuxer = container.format.name
    if demuxer.endswith("_pipe") or demuxer in {"image2", "image2pipe"}:
        raise ClipError(clip, f"is a still image ({demuxer}), not a video", "pass a video clip")
    if container.streams.video:
        stream = container.streams.video[0]
        if stream.codec_context is None:
            raise ClipError(
                clip,
                "has a video stream with no decoder in this FFmpeg build (unknown or damaged codec)",
                "re-encode it as H.264 in mp4",
            )
        return stream
    audio = [audio_codec(stream) for stream in container.streams.audio]
    if audio:
        raise ClipError(
            clip, f"has no video stream (it holds audio only: {', '.join(audio)})", "pass a clip that has a video track"
        )
    raise ClipError(
        clip, f"has no video stream (demuxer {demuxer}, {len(container.streams)} other streams)", _NOT_A_VIDEO_FIX
    )


def audio_codec(stream: av.AudioStream) -> str:
    """The audio track's codec name, also for a track FFmpeg cannot decode."""
    return stream.codec_context.name if stream.codec_context is not None else "unknown codec"


def decode_failure(clip: str, error: Exception) -> ClipError:
    """The ClipError for FFmpeg failing part-way through a file it opened."""
    detail = getattr(error, "strerror", None) or str(error)
    return ClipError(clip, f"is corrupt or truncated: FFmpeg fails while reading its frames ({detail})", REEXPORT)
