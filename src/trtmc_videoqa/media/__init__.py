"""The media room: clip probing, frame sampling, decoded frames, chat payloads and body-size checks.

It knows nothing of TRTMC. Every bad clip raises ClipError; nothing here prints.
"""

from .errors import ClipError
from .frames import decode_frames, decoded_rgb_sha256
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
from .sampling import ResolvedSampling, SamplingPolicy
from .source import DEFAULT_MAX_BYTES, read_clip_bytes
from .strip import write_strip

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
    "base64_size",
    "chat_request_body",
    "check_body_limit",
    "clip_mime",
    "data_url",
    "decode_frames",
    "decoded_rgb_sha256",
    "encode_body",
    "encoded_body_size",
    "parse_data_url",
    "predicted_body_size",
    "probe_clip",
    "probe_tool",
    "read_clip_bytes",
    "video_data_url",
    "write_strip",
]
