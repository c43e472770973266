"""A video-to-text Task's native request, in the Task's own shape: the question and the clip's frames, in
presentation order, with their times in seconds.

The shape is the checkout's: the request tree its task adapter builds for the Task (inventory/request_template.py),
whose slots this module fills, so no field name of the request is written here. Each clip is decoded once with
PyAV; its frames are written as PNG files, in order, with ``times.json`` beside them, and travel as perf_serving
takes files: inline ``{"$file": {"suffix": ".png", "b64": ...}}`` objects.

Sampling belongs to the family. A route that takes the Task's video view gets every frame of the clip and the family
samples; a route that asks the caller to choose frames (a list of frame files without the view's times) gets the
frames the family's own sampling picks, else the workload's policy (frame_choice.py), and the row says which.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...aiperf.dataset import Prompt
from ...common.atomic_write import write_bytes_atomic, write_text_atomic
from ...inventory.request_template import SLOT, slots
from ...media.errors import ClipError
from ...results import NativeRequest, SentClip
from ...results.layout import FRAME_FILE, FRAME_TIMES_FILE

if TYPE_CHECKING:
    from ...media.frames import FrameBudget
    from .frame_choice import FrameChoice


@dataclass(frozen=True)
class ClipFrames:
    clip_id: str
    indices: tuple[int, ...]  # which frames of the clip, in presentation order
    files: tuple[Path, ...]  # each frame's PNG file, in that order: read when a body is made, never all held before
    times: tuple[float, ...]  # empty where the stream gives a frame no time: timing unspecified, never invented

    @property
    def pngs(self) -> tuple[bytes, ...]:
        return tuple(file.read_bytes() for file in self.files)

    def body_bytes(self) -> int:
        """What the frames add to a JSON body: each file's base64, and its `$file` wrapper (about 40 bytes)."""
        return sum(4 * -(-file.stat().st_size // 3) + 40 for file in self.files)


def asks_for_frames(request: NativeRequest) -> bool:
    """Whether the route asks the caller to choose frames (a frame list), rather than taking the whole clip."""
    return any(slot.get("role") == "frame-list" for slot in slots(request.template))


def template_problem(request: NativeRequest) -> str | None:
    """Why this Task's request tree cannot be filled with a question and a clip's frames; None when it can."""
    found = slots(request.template)
    roles = [slot.get("role") for slot in found]
    unread = [slot["unread"] for slot in found if "unread" in slot]
    if unread:
        return f"its request has a value the tool cannot read statically: {unread[0]}"
    framed = roles.count("frames") + roles.count("frame-list")
    if roles.count("question") != 1 or framed != 1:
        return (
            f"its request needs one question and one clip's frames, found {roles.count('question')} question and "
            f"{framed} frame slots"
        )
    unfilled = [slot for slot in found if slot.get("role") is None and "default" not in slot]
    if unfilled:
        keys = ".".join(str(key) for key in unfilled[0]["case"])
        return f"its request takes the testcase's {keys!r}, which the tool has no value for"
    return None


def video_task_body(
    request: NativeRequest, prompt: Prompt, clip: ClipFrames, *, max_tokens: int, body_limit: int | None = None
) -> dict[str, Any]:
    """``{"request": <the Task's request tree, filled>}`` (template_problem must have found nothing); a ValueError,
    before any frame is read into it, where the frames alone would pass `body_limit` (the server's --max-body-bytes:
    --body-limit)."""
    if body_limit is not None and (size := clip.body_bytes()) > body_limit:
        raise ValueError(
            f"the {len(clip.files)} frames of clip {clip.clip_id!r} would make a body of at least {size:,} bytes, "
            f"over --body-limit {body_limit:,}: raise it together with the server's --max-body-bytes"
        )
    from ...inventory.task_requests import GREEDY_FIELDS, TOKEN_LIMIT_FIELD  # the audit's reader, loaded here

    files = [{"$file": {"suffix": ".png", "b64": base64.b64encode(png).decode("ascii")}} for png in clip.pngs]
    values: dict[str, Any] = {
        "question": prompt.text,
        "frames": files,
        "frame-list": files,
        "times": list(clip.times),
        TOKEN_LIMIT_FIELD: max_tokens,
        **GREEDY_FIELDS,
    }
    return {"request": _filled(request.template, values)}


def _filled(tree: Any, values: dict[str, Any]) -> Any:
    if isinstance(tree, dict) and SLOT in tree:
        slot = tree[SLOT]
        role = slot.get("role")
        return values[role] if role in values else slot.get("default")
    if isinstance(tree, dict):
        return {key: _filled(value, values) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_filled(value, values) for value in tree]
    return tree


class FrameFiles:
    """Each clip decoded once, one frame at a time under `budget`: its frames as PNG files under
    ``folder/<clip id>/``, its times in times.json; every frame, or those `choice` picks (a route that asks the
    caller to choose: the clip is counted first, under the same budget)."""

    def __init__(self, folder: Path, row_dir: Path, budget: FrameBudget, choice: FrameChoice | None = None) -> None:
        self.folder = folder
        self.row_dir = row_dir
        self.budget = budget
        self.choice = choice
        self._clips: dict[str, ClipFrames] = {}

    def of(self, prompt: Prompt) -> ClipFrames:
        """The clip's frames (ClipError where it cannot be decoded or its times go back)."""
        if prompt.clip_id not in self._clips:
            self._clips[prompt.clip_id] = self._decoded(prompt)
        return self._clips[prompt.clip_id]

    def _decoded(self, prompt: Prompt) -> ClipFrames:
        from ...media.frames import TimedFrames, frame_png

        frames = TimedFrames(Path(prompt.clip_path), self.budget)
        wanted: set[int] | None = None
        if self.choice is not None:
            count = sum(1 for _ in frames)
            wanted = set(self.choice.policy.resolve(count, frames.rate).indices) if count else set()
        where = self.folder / prompt.clip_id
        indices: list[int] = []
        files: list[Path] = []
        times: list[float | None] = []
        for index, frame, seconds in frames:
            if wanted is not None and index not in wanted:
                continue
            if seconds is not None and times and times[-1] is not None and seconds < times[-1]:
                raise ClipError(
                    prompt.clip_path, f"frame {len(times)}'s time goes back in presentation order", "re-encode it"
                )
            files.append(write_bytes_atomic(where / FRAME_FILE.format(index=len(files)), frame_png(frame)))
            indices.append(index)
            times.append(seconds)
        known = [] if any(time is None for time in times) else [float(time) for time in times if time is not None]
        names = [file.name for file in files]
        listing = {"clip_id": prompt.clip_id, "frames": names, "frame_indices": indices, "timestamps_seconds": known}
        write_text_atomic(where / FRAME_TIMES_FILE, json.dumps(listing, indent=1) + "\n")
        return ClipFrames(prompt.clip_id, tuple(indices), tuple(files), tuple(known))

    def sent(self) -> list[SentClip]:
        return [
            SentClip(
                clip_id=clip.clip_id,
                frame_count=len(clip.files),
                frame_indices=list(clip.indices),
                timestamps_seconds=list(clip.times),
                frames=(self.folder / clip.clip_id).relative_to(self.row_dir).as_posix(),
            )
            for clip in self._clips.values()
        ]


def sampling_source(request: NativeRequest, sent: list[SentClip], choice: FrameChoice | None) -> str:
    """Where the frames sent came from: the frame choice for a route that asks for one; else the whole clip, as the
    Task's video view, and the family samples."""
    counts = ", ".join(f"{clip.clip_id}: {clip.frame_count}" for clip in sent) or "none sent"
    if choice is not None:
        return f"{choice.source}; the route asks the caller to choose frames ({counts} sent)"
    timed = all(clip.timestamps_seconds for clip in sent)
    times = "with its time in seconds" if timed else "with times where the stream gives them (else unspecified)"
    return (
        f"the family's: every frame of each clip ({counts}), in presentation order {times}, sent as the Task's video "
        f"view ({request.video_view or 'the C API'}); the route asks the caller for no frame choice, so the family "
        "samples"
    )
