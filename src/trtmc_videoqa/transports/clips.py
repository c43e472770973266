"""What carries a clip by each transport of `transports/table.py`: the routes and URLs of the run's loopback clip
server (`serving/clip_server.py` serves them, the run's owner starts it), the video part of a chat body (the
capability check, identity's chat side, the streaming check) and what AIPerf's input rows name as the video."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .table import TRANSPORTS

if TYPE_CHECKING:
    from ..aiperf.dataset import Prompt
    from ..results.transports import VideoTransport
    from ..workloads import Workload


@dataclass(frozen=True)
class ServedFile:
    """One file the clip server serves."""

    path: Path
    mime: str  # the Content-Type it is served with, e.g. video/mp4


def clip_route(workload: Workload, clip_id: str) -> str:
    """`/clips/<workload>/<clip id><suffix>`: both names are lowercase slugs by the workload schema."""
    return f"/clips/{workload.name}/{clip_id}{Path(workload.clip(clip_id).file).suffix}"


def clip_routes(workloads: Iterable[Workload]) -> dict[str, ServedFile]:
    """Every clip of every workload, by its URL path, with the MIME type the workload records for it."""
    return {
        clip_route(workload, clip.id): ServedFile(workload.clip_path(clip.id), clip.mime)
        for workload in workloads
        for clip in workload.spec.clips
    }


def clip_urls(base_url: str, workload: Workload) -> dict[str, str]:
    """Clip id -> the clip's URL on the clip server at `base_url`."""
    return {clip.id: base_url + clip_route(workload, clip.id) for clip in workload.spec.clips}


def chat_video_url(transport: VideoTransport, prompt: Prompt, urls: Mapping[str, str]) -> str:
    """What a chat body's video part carries: the clip as a data URL, or its http URL (ClipError, OSError)."""
    if TRANSPORTS[transport].by_url:
        if prompt.clip_id not in urls:
            raise ValueError(f"no clip server URL for clip {prompt.clip_id!r}: the {transport} transport needs one")
        return urls[prompt.clip_id]
    from ..media.payload import video_data_url  # PyAV comes with it

    return video_data_url(Path(prompt.clip_path))


def aiperf_videos(transport: VideoTransport, urls: Mapping[str, str]) -> dict[str, str]:
    """Clip id -> what AIPerf's `video` field carries instead of the clip's path: the http URLs, or nothing."""
    return dict(urls) if TRANSPORTS[transport].by_url else {}
