"""Recognise the synthetic workload's questions in a prompt and answer them from the tracked squares.

The question is matched on its sentence; the options are read from the prompt's "A. ..." lines and each is
classified by its wording, so the answer is the letter the prompt itself gave that outcome. Anything not
computable (another clip, an unknown question, frames whose order tells no single story, an outcome no option
names) gets CANNOT_TELL. Direction and appearance read the whole sequence of sampled frames, not just its ends, so
a shuffled or spliced clip cannot pass for the forward one.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass

from .labels import CANNOT_TELL
from .tracking import SceneTrack

# Ids shared with workloads/synthetic.py (SYNTHETIC_QUESTION_IDS), so records name the question as the workload does.
DIRECTION = "synthetic-direction"
APPEARANCE = "synthetic-appearance"
FIRST_VISIBLE = "synthetic-first-visible"

_QUESTION_SENTENCES = {
    DIRECTION: "in which direction does the red square move",
    APPEARANCE: "what happens to the blue square during the clip",
    FIRST_VISIBLE: "where is the red square when the blue square is first visible",
}

# Per question: (outcome, wording) in order; an option takes the first outcome whose wording it contains.
_OUTCOME_WORDING: dict[str, tuple[tuple[str, str], ...]] = {
    DIRECTION: (
        ("left-to-right", r"\bleft to right\b|\brightwards?\b|\bto the right\b"),
        ("right-to-left", r"\bright to left\b|\bleftwards?\b|\bto the left\b"),
        ("still", r"\bnot move|\bdoesn t move|\bnot moving\b|\bstationary\b|\bstays still\b"),
        ("vertical", r"\bup and down\b|\bvertically\b"),
    ),
    APPEARANCE: (
        ("never", r"\bnever\b"),
        ("disappears", r"\bdisappears?\b|\bvanish|\bgoes away\b"),
        ("whole-time", r"\bwhole time\b|\balways\b|\bthroughout\b|\bentire\b"),
        ("appears", r"\bappears?\b|\bshows up\b"),
    ),
    FIRST_VISIBLE: (
        ("left", r"\bleft\b"),
        ("middle", r"\bmiddle\b|\bcentre\b|\bcenter\b"),
        ("right", r"\bright\b"),
    ),
}

_OPTION_LINE = re.compile(r"^\s*\(?([A-Z])[.):]\s+(\S.*?)\s*$")
# Below this share of sampled frames with a red square, the clip is not the synthetic scene.
MIN_RED_FOUND_SHARE = 0.5
# Movement smaller than this share of the frame's width is "not moving".
STILL_FRACTION = 0.1
# How far (pixels) a tracked x may step back against the overall direction and still count as monotonic.
# Tracked centres of the synthetic clip err by <= 0.25 px (measured at crf 18-35), so two frames disagree by
# <= 0.5 px; one frame of the scene's travel is >= 2 px, so 1.5 px still catches two neighbouring frames swapped.
JITTER_PX = 1.5


@dataclass(frozen=True)
class Answer:
    text: str
    question_id: str | None  # None: not a question this endpoint knows
    outcome: str | None  # what the frames showed, in the outcome vocabulary above; None: cannot tell
    reason: str | None = None  # why it cannot tell


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def recognise_question(prompt: str) -> str | None:
    normalised = _normalise(prompt)
    for question_id, sentence in _QUESTION_SENTENCES.items():
        if sentence in normalised:
            return question_id
    return None


def parse_options(prompt: str) -> dict[str, str]:
    """Letter -> option text, from lines like "A. left to right" (also "A) ..." and "(A) ...")."""
    options: dict[str, str] = {}
    for line in prompt.splitlines():
        match = _OPTION_LINE.match(line)
        if match:
            options.setdefault(match.group(1), match.group(2))
    return options


def classify_option(question_id: str, option_text: str) -> str | None:
    normalised = _normalise(option_text)
    for outcome, wording in _OUTCOME_WORDING[question_id]:
        if re.search(wording, normalised):
            return outcome
    return None


@dataclass(frozen=True)
class Unclear:
    """The frames do not support any one outcome, and why."""

    reason: str


def _monotonic(xs: list[float], sign: int, tolerance: float) -> bool:
    """True when no x falls back more than ``tolerance`` behind the furthest one so far in direction ``sign``.

    Against the running extreme rather than the previous x, so many small steps back cannot add up unnoticed.
    """
    furthest = sign * xs[0]
    for x in xs[1:]:
        if sign * x < furthest - tolerance:
            return False
        furthest = max(furthest, sign * x)
    return True


def _direction(track: SceneTrack) -> str | Unclear:
    found = [blob for blob in track.red if blob is not None]
    xs, ys = [blob.x for blob in found], [blob.y for blob in found]
    still = STILL_FRACTION * track.width
    x_span, y_span = max(xs) - min(xs), max(ys) - min(ys)
    if x_span < still and y_span < still:
        return "still"
    if y_span > x_span:
        return "vertical"
    net = xs[-1] - xs[0]
    if abs(net) < still:
        return Unclear("the red square went and came back: no single direction")
    sign = 1 if net > 0 else -1
    # A shuffled or spliced clip can share the forward clip's ends; only the order in between tells them apart.
    if not _monotonic(xs, sign, JITTER_PX):
        return Unclear("the red square's x positions are not monotonic over the sampled frames")
    return "left-to-right" if sign > 0 else "right-to-left"


def _appearance(track: SceneTrack) -> str | Unclear:
    visible = [blob is not None for blob in track.blue]
    if not any(visible):
        return "never"
    if all(visible):
        return "whole-time"
    # Exactly one change of visibility: it comes and stays, or goes and stays gone; anything else is no story.
    changes = sum(before != after for before, after in itertools.pairwise(visible))
    if changes != 1:
        return Unclear(f"the blue square's visibility changes {changes} times over the sampled frames")
    return "disappears" if visible[0] else "appears"


def _first_visible(track: SceneTrack) -> str | Unclear:
    first = next((i for i, blob in enumerate(track.blue) if blob is not None), None)
    if first is None:
        return Unclear("the blue square is never visible")
    red = track.red[first]
    if red is None:
        return Unclear("no red square on the frame where the blue square is first visible")
    third = track.width / 3
    return "left" if red.x < third else "middle" if red.x < 2 * third else "right"


_COMPUTE: dict[str, Callable[[SceneTrack], str | Unclear]] = {
    DIRECTION: _direction,
    APPEARANCE: _appearance,
    FIRST_VISIBLE: _first_visible,
}


def answer_question(prompt: str, track: SceneTrack) -> Answer:
    question_id = recognise_question(prompt)
    if question_id is None:
        return Answer(CANNOT_TELL, None, None, "not a question this endpoint recognises")
    if track.red_found_share <= MIN_RED_FOUND_SHARE:
        return Answer(
            CANNOT_TELL,
            question_id,
            None,
            f"red square found in {track.red_found_share:.0%} of sampled frames: not the synthetic scene",
        )
    outcome = _COMPUTE[question_id](track)
    if isinstance(outcome, Unclear):
        return Answer(CANNOT_TELL, question_id, None, outcome.reason)
    letters = [
        letter for letter, text in parse_options(prompt).items() if classify_option(question_id, text) == outcome
    ]
    if len(letters) != 1:
        return Answer(CANNOT_TELL, question_id, outcome, f"{len(letters)} of the prompt's options say {outcome!r}")
    return Answer(letters[0], question_id, outcome)
