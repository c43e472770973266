"""The media room: clip probing, frame sampling, decoded frames, chat payloads and body-size checks.

It knows nothing of TRTMC. Every bad clip raises ClipError; nothing here prints.

PyAV, NumPy and Pillow load on first use of what needs them (PEP 562), so importing the room, its ClipError or its
sampling policies stays quick: the CLI's parser and a re-run that reuses every result never pay for a decoder. The
clip manifest's models load the same way: they live with the result rows (results/), whose models cost a process
that needs none of them, such as the reference endpoint at its start, about 70 ms of CPU.
"""

from typing import TYPE_CHECKING

from ..common.lazy import lazy_getattr
from .errors import ClipError
from .sampling import ResolvedSampling, SamplingPolicy

if TYPE_CHECKING:
    from .frames import (
        TimedClip,
        TimedFrame,
        decode_frames,
        decode_timed_frames,
        decoded_rgb_sha256,
        png_bytes,
        rgb_sha256,
    )
    from .manifest import COUNT_BY_DECODING, COUNT_BY_PACKETS, ClipManifest, CodecInfo, ProbeTool
    from .payload import (
        TRTMC_SERVER_BODY_LIMIT,
        base64_size,
        chat_request_body,
        check_body_limit,
        clip_mime,
        data_url,
        encode_body,
        encoded_body_size,
        parse_data_url,
        predicted_body_size,
        video_data_url,
    )
    from .probe import probe_clip, probe_tool
    from .source import DEFAULT_MAX_BYTES, read_clip_bytes
    from .strip import write_strip

_LAZY = {
    "COUNT_BY_DECODING": "manifest",
    "COUNT_BY_PACKETS": "manifest",
    "ClipManifest": "manifest",
    "CodecInfo": "manifest",
    "ProbeTool": "manifest",
    "decode_frames": "frames",
    "decoded_rgb_sha256": "frames",
    "TimedClip": "frames",
    "TimedFrame": "frames",
    "decode_timed_frames": "frames",
    "png_bytes": "frames",
    "rgb_sha256": "frames",
    "TRTMC_SERVER_BODY_LIMIT": "payload",
    "base64_size": "payload",
    "chat_request_body": "payload",
    "check_body_limit": "payload",
    "clip_mime": "payload",
    "data_url": "payload",
    "encode_body": "payload",
    "encoded_body_size": "payload",
    "parse_data_url": "payload",
    "predicted_body_size": "payload",
    "video_data_url": "payload",
    "probe_clip": "probe",
    "probe_tool": "probe",
    "DEFAULT_MAX_BYTES": "source",
    "read_clip_bytes": "source",
    "write_strip": "strip",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "COUNT_BY_DECODING",
    "COUNT_BY_PACKETS",
    "DEFAULT_MAX_BYTES",
    "TRTMC_SERVER_BODY_LIMIT",
    "ClipError",
    "ClipManifest",
    "CodecInfo",
    "ProbeTool",
    "ResolvedSampling",
    "SamplingPolicy",
    "TimedClip",
    "TimedFrame",
    "base64_size",
    "chat_request_body",
    "check_body_limit",
    "clip_mime",
    "data_url",
    "decode_frames",
    "decode_timed_frames",
    "decoded_rgb_sha256",
    "encode_body",
    "encoded_body_size",
    "parse_data_url",
    "png_bytes",
    "predicted_body_size",
    "probe_clip",
    "probe_tool",
    "read_clip_bytes",
    "rgb_sha256",
    "video_data_url",
    "write_strip",
]
