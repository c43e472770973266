"""The checkout's own names for a clip in a Task request: the members of the C API's video view struct.

The semantic Task API defines one clip as ``trtmc_video_view_v1``: its frames, in order, and one time in seconds
per frame. A video-to-text Task's HTTP request has no wire format of its own in TRTMC yet, so where a task adapter
builds one, the tool finds its frame list and its times by these names, read from the headers (as text, never
compiled), and hard-codes none of them. The frames member is the view's first pointer member; the times member is
the one of a double (or ``f64``) type; a ``*_count`` member is neither.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .task_registry import API_HEADERS, MAX_HEADER_BYTES

VIEW_STRUCT = "trtmc_video_view_v1"
_TYPEDEF = re.compile(r"typedef\s+struct\s*\w*\s*\{(?P<body>[^{}]*)\}\s*" + VIEW_STRUCT + r"\s*;", re.S)
_STRUCT = re.compile(r"struct\s+" + VIEW_STRUCT + r"\s*\{(?P<body>[^{}]*)\}\s*;", re.S)
_MEMBER = re.compile(r"^\s*(?P<type>[\w\s\*]+?)\s*(?P<name>\w+)\s*;", re.M)
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_TIME_TYPES = re.compile(r"\b(double|f64|\w*_f64_\w*)\b")


@dataclass(frozen=True)
class VideoView:
    frames: str
    times: str | None
    file: str  # relative to the checkout
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def read_video_view(checkout: Path) -> VideoView | None:
    """The view's frames and times member names, where a header of the C API defines the struct; else None."""
    folder = checkout / API_HEADERS
    try:
        headers = sorted(path for path in folder.glob("*.h") if path.is_file())
    except OSError:
        return None
    for path in headers:
        try:
            if path.stat().st_size > MAX_HEADER_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        match = _TYPEDEF.search(text) or _STRUCT.search(text)
        if match is not None:
            view = _members(match.group("body"))
            if view is not None:
                line = text.count("\n", 0, match.start()) + 1
                return VideoView(view[0], view[1], f"{API_HEADERS}/{path.name}", line)
    return None


def _members(body: str) -> tuple[str, str | None] | None:
    frames: str | None = None
    times: str | None = None
    for member in _MEMBER.finditer(_COMMENT.sub(" ", body)):
        kind, name = member.group("type"), member.group("name")
        if name.endswith("_count"):
            continue
        if times is None and _TIME_TYPES.search(kind):
            times = name
        elif frames is None and "*" in kind:
            frames = name
    return None if frames is None else (frames, times)
