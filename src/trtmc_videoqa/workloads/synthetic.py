"""The synthetic self-test scene: a red square crossing left to right, a blue square appearing halfway.

A contract shared with the reference endpoint, which answers ``SYNTHETIC_QUESTION_IDS`` by computing on the
decoded frames; this module says where everything is on every frame. Coordinates are pixels of the top-left
corner of a square, x to the right and y down. The committed clips (``data/synthetic/``) were made by
``make_clip``; regenerating them is a check that they decode to this scene, never a byte-for-byte rebuild.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .encode import H264Settings, write_h264_mp4

RGB = tuple[int, int, int]
Box = tuple[int, int, int, int]  # x0, y0, x1, y1 with x1, y1 exclusive

SYNTHETIC_QUESTION_IDS: tuple[str, ...] = (
    "synthetic-direction",
    "synthetic-appearance",
    "synthetic-first-visible",
)

# Flat colours and sharp edges survive a lower crf better; the clip is a few KB either way.
SYNTHETIC_ENCODE = H264Settings(crf=18, preset="medium", threads=1)


@dataclass(frozen=True)
class SyntheticScene:
    width: int = 160
    height: int = 120
    fps: int = 24
    frames: int = 48
    background: RGB = (32, 32, 32)
    square_size: int = 16
    red: RGB = (230, 30, 30)
    red_y: int = 40
    red_x_start: int = 8  # frame 0
    red_x_end: int = 136  # last frame: width - 24, the same 8 px margin as on the left
    blue: RGB = (30, 60, 230)
    blue_x: int = 72
    blue_y: int = 88
    blue_first_frame: int = 24  # halfway; visible from here to the last frame

    def source_frame(self, index: int, *, reversed: bool = False) -> int:
        """The forward frame shown at ``index`` of the clip (the reversed clip shows them last to first)."""
        if not 0 <= index < self.frames:
            raise IndexError(f"frame {index} outside 0..{self.frames - 1}")
        return self.frames - 1 - index if reversed else index

    def red_x(self, index: int, *, reversed: bool = False) -> int:
        """Constant speed: a straight line from red_x_start to red_x_end over the clip, rounded to a pixel."""
        forward = self.source_frame(index, reversed=reversed)
        return self.red_x_start + round(forward * (self.red_x_end - self.red_x_start) / (self.frames - 1))

    def red_box(self, index: int, *, reversed: bool = False) -> Box:
        x = self.red_x(index, reversed=reversed)
        return (x, self.red_y, x + self.square_size, self.red_y + self.square_size)

    def blue_visible(self, index: int, *, reversed: bool = False) -> bool:
        return self.source_frame(index, reversed=reversed) >= self.blue_first_frame

    def blue_box(self) -> Box:
        return (self.blue_x, self.blue_y, self.blue_x + self.square_size, self.blue_y + self.square_size)

    def horizontal_third(self, x_centre: float) -> str:
        """'left', 'middle' or 'right': the answer vocabulary of synthetic-first-visible."""
        third = self.width / 3
        return "left" if x_centre < third else "middle" if x_centre < 2 * third else "right"

    def render(self, index: int, *, reversed: bool = False) -> np.ndarray:
        """Frame ``index`` as an RGB array of shape (height, width, 3)."""
        pixels = np.empty((self.height, self.width, 3), dtype=np.uint8)
        pixels[:] = self.background
        x0, y0, x1, y1 = self.red_box(index, reversed=reversed)
        pixels[y0:y1, x0:x1] = self.red
        if self.blue_visible(index, reversed=reversed):
            x0, y0, x1, y1 = self.blue_box()
            pixels[y0:y1, x0:x1] = self.blue
        return pixels

    def fingerprint(self) -> str:
        """sha256 of the scene's definition: the "source" the synthetic clips derive from."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


SCENE = SyntheticScene()


def make_clip(path: str | Path, *, reversed: bool = False, scene: SyntheticScene = SCENE) -> Path:
    """Write the scene as libx264/yuv420p mp4; ``reversed`` writes the same frames last to first."""
    frames = (scene.render(index, reversed=reversed) for index in range(scene.frames))
    return write_h264_mp4(
        Path(path), frames, width=scene.width, height=scene.height, fps=scene.fps, settings=SYNTHETIC_ENCODE
    )
