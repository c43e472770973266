"""The family's media path, read as text: does video enter the model with a time axis?

Markers are searched in the family's model code (not its tests). Every hit is kept as evidence with file and line;
a search with no hits is kept too, with the patterns and the files searched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..results import Evidence, GapEvidence, Layout
from .bounded_source import Unreadable, read_text
from .marker_scan import (
    FRAME_INDEX_TIMESTAMP,
    PYTHON_FRAME_TIMESTAMP,
    STRUCT_FRAME_TIMESTAMP,
    Markers,
    markers,
)
from .tree import CheckoutTree

SOURCE_SUFFIXES = frozenset({".py", ".cpp", ".cc", ".h", ".hpp", ".cu", ".cuh", ".toml", ".json"})
_SKIPPED_DIRS = ("tests", "test", "fixtures", "data", "docs")
MAX_SOURCE_BYTES = 8 * 1024 * 1024  # of one file searched for markers; a family's model code is far smaller


@dataclass(frozen=True)
class MarkerGroup:
    name: str
    patterns: tuple[str, ...]
    # Substrings one of which every match contains: a file without any is skipped without running the regex
    # (most of the audit's time on a real checkout was this alternation tried at every position of every file).
    needles: tuple[str, ...]

    @property
    def regex(self) -> Markers:
        """The patterns as one matcher, linear in the text (marker_scan.py); `search` and `finditer` as re's."""
        return markers(self.patterns)


# Video reaches the model as video, not as an image: a video token or frame objects.
VIDEO_INPUT = MarkerGroup(
    "video input (video token or frame objects)",
    (
        r"video_token",
        r"<\|video_pad\|>",
        r"video_frame_paths",
        r"VisionFrame",
        r"\bbool video\b",
        r"video_frames",
    ),
    needles=("video", "VisionFrame"),
)
# Frames carry time: a timestamp tied to a frame or video, a temporal grid, or temporal position ids. A bare
# `timestamp` (logging, a request record) is no evidence, nor is `temporal_patch_size` alone: image-only Qwen-VL
# families have it as patch layout (one image duplicated into a two-frame patch).
TIME_AXIS = MarkerGroup(
    "a time axis (frame timestamps, a temporal grid or temporal positions)",
    (
        r"timestamps_seconds",
        r"\b(?:frame|video|clip)s?_timestamps?\b",  # frame_timestamps, video_timestamp
        FRAME_INDEX_TIMESTAMP,  # frame.timestamp, frames[i]->timestamp
        STRUCT_FRAME_TIMESTAMP,  # a timestamp field of a C++ frame struct
        PYTHON_FRAME_TIMESTAMP,  # ... of a Python frame class (a field line in its indented block)
        r"\bvideo_grid_thw\b",
        r"\bgrid_thw\b",
        r"second_per_grid",
        r"seconds_per_grid",
        r"temporal_position",
    ),
    needles=("timestamp", "grid_thw", "_per_grid", "temporal_position"),
)
# The media path handles one image.
SINGLE_IMAGE = MarkerGroup(
    "a single-image media path",
    (
        r"image_grid_hws",
        r"[Ss]ingle image",
        r"fixed_image_size",
        r"image_token_id",
    ),
    needles=("image_grid_hws", "ingle image", "fixed_image_size", "image_token_id"),
)
GROUPS = (VIDEO_INPUT, TIME_AXIS, SINGLE_IMAGE)
_MAX_HITS_KEPT = 3


@dataclass
class FamilyScan:
    family: str
    directories: list[str]
    files: list[str] = field(default_factory=list)
    hits: dict[str, list[Evidence]] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        return bool(self.files)

    def has(self, group: MarkerGroup) -> bool:
        return bool(self.hits.get(group.name))

    @property
    def temporal(self) -> bool:
        """Frames enter as video and carry time: both marker groups have hits."""
        return self.has(VIDEO_INPUT) and self.has(TIME_AXIS)

    def evidence(self, group: MarkerGroup) -> list[Evidence]:
        return self.hits.get(group.name, [])

    def gap(self, group: MarkerGroup) -> GapEvidence:
        return GapEvidence(
            searched_for=f"{group.name} in the {self.family} family's model code",
            patterns=list(group.patterns),
            files_without_hits=list(self.files),
        )


def family_directories(layout: Layout, family: str) -> list[str]:
    if layout == "families":
        return [f"families/{family}"]
    return [f"python/tensorrt_model_connect/families/{family}", f"src/runtime/models/{family}"]


def scan_family(tree: CheckoutTree, layout: Layout, family: str) -> FamilyScan:
    directories = family_directories(layout, family)
    scan = FamilyScan(family, directories)
    for directory in directories:
        base = tree.root / directory
        for path in tree.files_under(base, SOURCE_SUFFIXES):
            if any(part in _SKIPPED_DIRS for part in path.relative_to(base).parts[:-1]):
                continue
            if path.parent == base and path.name == "support.py":  # a declaration (family_declarations.py), no code
                continue
            _scan_file(tree, path, scan)
    return scan


def _scan_file(tree: CheckoutTree, path: Path, scan: FamilyScan) -> None:
    rel = tree.rel(path)
    scan.files.append(rel)
    try:  # a regular file inside the checkout, within budget (bounded_source.py); a refusal is named in `skipped`
        text = read_text(tree.root, rel, MAX_SOURCE_BYTES, "its media markers were not searched", exact=False)
    except Unreadable:
        return
    for group in GROUPS:
        kept = scan.hits.setdefault(group.name, [])
        if not any(needle in text for needle in group.needles):
            continue
        last_line, counted_to, number = 0, 0, 1
        for match in group.regex.finditer(text):
            if len(kept) >= _MAX_HITS_KEPT:
                break
            # a match may span lines (a frame struct); cite the line where it ends, once per line
            end = match.end() - 1
            number += text.count("\n", counted_to, end)  # counted on from the last hit: once over the text
            counted_to = end
            if number == last_line:
                continue
            last_line = number
            start, stop = text.rfind("\n", 0, end) + 1, text.find("\n", end)
            line = text[start : stop if stop >= 0 else len(text)]
            matched = " ".join(match.group(0).split())
            if len(matched) > 60:
                matched = f"{matched[:24]} ... {matched[-28:]}"
            kept.append(Evidence(file=rel, line=number, excerpt=line.strip()[:160], shows=f"{group.name}: {matched!r}"))
