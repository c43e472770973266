"""Find the synthetic scene's coloured squares in decoded RGB frames by colour distance.

H.264's 4:2:0 chroma blurs a square's edges into the background, so a pixel counts when it is near the
colour, and a square counts only where a whole CORE x CORE window is near it (an erosion): scattered noise
pixels that happen to be reddish never fill such a window, and the square's interior always does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RED = (230, 30, 30)
BLUE = (30, 60, 230)
# Euclidean RGB distance. The squares sit ~200 away from the grey background and ~280 from each other;
# measured interiors after crf 18-30 encoding stay within ~40 of their colour.
COLOUR_DISTANCE = 90.0
CORE = 5
MIN_CORE_PIXELS = 9
# A "square" covering more than this share of the frame is a coloured scene, not the synthetic square.
MAX_CORE_FRACTION = 0.05


@dataclass(frozen=True)
class Blob:
    x: float  # centre, pixels from the left
    y: float  # centre, pixels from the top
    core_pixels: int


def colour_mask(frame: np.ndarray, colour: tuple[int, int, int], distance: float = COLOUR_DISTANCE) -> np.ndarray:
    difference = frame.astype(np.int32) - np.asarray(colour, dtype=np.int32)
    return (difference * difference).sum(axis=2) <= distance * distance


def _window_sums(mask: np.ndarray, size: int) -> np.ndarray:
    """Sum of ``mask`` over every size x size window (integral image), shape (H-size+1, W-size+1)."""
    integral = np.pad(mask.astype(np.int32).cumsum(axis=0).cumsum(axis=1), ((1, 0), (1, 0)))
    return integral[size:, size:] - integral[:-size, size:] - integral[size:, :-size] + integral[:-size, :-size]


def find_square(frame: np.ndarray, colour: tuple[int, int, int]) -> Blob | None:
    height, width = frame.shape[:2]
    if height < CORE or width < CORE:
        return None
    core = _window_sums(colour_mask(frame, colour), CORE) == CORE * CORE
    count = int(core.sum())
    if count < MIN_CORE_PIXELS or count > MAX_CORE_FRACTION * height * width:
        return None
    rows, columns = np.nonzero(core)
    offset = CORE // 2  # window index -> the pixel at its centre
    return Blob(x=float(columns.mean()) + offset, y=float(rows.mean()) + offset, core_pixels=count)


@dataclass(frozen=True)
class SceneTrack:
    """Where each square was on each sampled frame (None: not found), in the order the frames were sampled."""

    width: int
    height: int
    red: tuple[Blob | None, ...]
    blue: tuple[Blob | None, ...]

    @property
    def red_found_share(self) -> float:
        return sum(blob is not None for blob in self.red) / len(self.red) if self.red else 0.0


def track_scene(frames: list[np.ndarray]) -> SceneTrack:
    if not frames:
        return SceneTrack(width=0, height=0, red=(), blue=())
    height, width = frames[0].shape[:2]
    return SceneTrack(
        width=width,
        height=height,
        red=tuple(find_square(frame, RED) for frame in frames),
        blue=tuple(find_square(frame, BLUE) for frame in frames),
    )
