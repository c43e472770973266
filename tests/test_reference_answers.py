"""The reference endpoint answers the synthetic questions by computing on the frames it decodes, over real HTTP."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from helpers import HTTP

from trtmc_videoqa.media import chat_request_body, video_data_url
from trtmc_videoqa.reference import CANNOT_TELL, OBSERVATION_FIELD, ReferenceConfig, ReferenceServer
from trtmc_videoqa.reference.questions import JITTER_PX, answer_question
from trtmc_videoqa.reference.tracking import Blob, SceneTrack
from trtmc_videoqa.workloads import builtin_workload
from trtmc_videoqa.workloads.encode import write_h264_mp4
from trtmc_videoqa.workloads.synthetic import SCENE, SYNTHETIC_QUESTION_IDS, make_clip

DIRECTION, APPEARANCE, FIRST_VISIBLE = SYNTHETIC_QUESTION_IDS
WORKLOAD = builtin_workload("synthetic")


def _write(path: Path, frames: list[np.ndarray]) -> Path:
    return write_h264_mp4(path, frames, width=SCENE.width, height=SCENE.height, fps=SCENE.fps)


_LAST = SCENE.frames - 1
# Source frame shown at each index of the reordered clips. Each keeps the forward clip's first and last frames
# except "shuffled", so only the order in between can tell them from the forward clip.
REORDERED: dict[str, list[int]] = {
    "shuffled": [int(i) for i in np.random.default_rng(11).permutation(SCENE.frames)],
    "shuffled-inside": [0, *(int(i) + 1 for i in np.random.default_rng(5).permutation(SCENE.frames - 2)), _LAST],
    # 16..31 played backwards: the square runs back ~40 px and the blue square shows, hides, shows again.
    "middle-reversed": [*range(16), *range(31, 15, -1), *range(32, SCENE.frames)],
    # The smallest break: two neighbouring sampled frames (22, 25 under uniform:16) swapped across the blue
    # square's first frame (24); every other frame in place.
    "two-swapped": [*range(22), 25, 23, 24, 22, *range(26, SCENE.frames)],
}


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Data URLs of: the scene forward and reversed, its first half, noise, a flat colour, and REORDERED."""
    root = tmp_path_factory.mktemp("reference-clips")
    rng = np.random.default_rng(7)
    paths = {
        "forward": make_clip(root / "forward.mp4"),
        "reversed": make_clip(root / "reversed.mp4", reversed=True),
        "first-half": _write(root / "first-half.mp4", [SCENE.render(i) for i in range(SCENE.frames // 2)]),
        **{name: _write(root / f"{name}.mp4", [SCENE.render(i) for i in order]) for name, order in REORDERED.items()},
        "noise": _write(
            root / "noise.mp4",
            [rng.integers(0, 256, (SCENE.height, SCENE.width, 3), np.uint8) for _ in range(SCENE.frames)],
        ),
        "flat": _write(root / "flat.mp4", [np.full((SCENE.height, SCENE.width, 3), 128, np.uint8)] * SCENE.frames),
    }
    return {name: video_data_url(path) for name, path in paths.items()}


def ask(server: ReferenceServer, prompt: str, url: str, **extra) -> dict:
    body = chat_request_body("trtmc-videoqa-reference", prompt, url, max_tokens=16, extra=extra or None)
    response = HTTP.post(f"{server.url}/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def answer(server: ReferenceServer, question_id: str, url: str) -> str:
    return ask(server, WORKLOAD.prompt(question_id).text, url)["choices"][0]["message"]["content"]


def answers(server: ReferenceServer, url: str) -> list[str]:
    return [answer(server, question_id, url) for question_id in SYNTHETIC_QUESTION_IDS]


def test_forward_clip_is_answered_by_computation(server, clips):
    assert answers(server, clips["forward"]) == ["A", "A", "B"]


def test_reversed_clip_flips_every_answer(server, clips):
    assert answers(server, clips["reversed"]) == ["B", "B", "C"]


@pytest.mark.parametrize("clip", sorted(REORDERED))
def test_reordered_frames_tell_neither_direction_nor_appearance(server, clips, clip):
    order = REORDERED[clip]
    assert sorted(order) == list(range(SCENE.frames))  # the forward clip's own frames, nothing else
    body = ask(server, WORKLOAD.prompt(DIRECTION).text, clips[clip])
    observation = body[OBSERVATION_FIELD]
    shown = [order[index] for index in observation["frame_indices"]]
    assert shown != sorted(shown)  # the endpoint's own sample is out of order, not only frames it skips
    assert (body["choices"][0]["message"]["content"], observation["outcome"]) == (CANNOT_TELL, None)
    assert "not monotonic" in observation["cannot_tell_because"]
    body = ask(server, WORKLOAD.prompt(APPEARANCE).text, clips[clip])
    assert (body["choices"][0]["message"]["content"], body[OBSERVATION_FIELD]["outcome"]) == (CANNOT_TELL, None)
    assert "visibility changes" in body[OBSERVATION_FIELD]["cannot_tell_because"]


def _track(red_xs: list[float], blue_visible: list[bool] | None = None) -> SceneTrack:
    blue_visible = blue_visible if blue_visible is not None else [False] * len(red_xs)
    return SceneTrack(
        width=SCENE.width,
        height=SCENE.height,
        red=tuple(Blob(x=x, y=48.0, core_pixels=144) for x in red_xs),
        blue=tuple(Blob(x=80.0, y=96.0, core_pixels=144) if seen else None for seen in blue_visible),
    )


def _computed(question_id: str, track: SceneTrack) -> str:
    return answer_question(WORKLOAD.prompt(question_id).text, track).text


@pytest.mark.parametrize(("step_back", "told"), [(0.0, True), (JITTER_PX, True), (JITTER_PX + 0.5, False)])
@pytest.mark.parametrize(("sign", "letter"), [(1, "A"), (-1, "B")])
def test_direction_tolerates_tracking_jitter_but_not_a_step_back(step_back, told, sign, letter):
    # 16 samples ~8.5 px apart, as uniform:16 sees the scene; the ninth falls back behind the eighth.
    travel = [8.5 * i for i in range(16)]
    travel[8] = travel[7] - step_back
    xs = [16.0 + t if sign > 0 else SCENE.width - 16.0 - t for t in travel]
    assert _computed(DIRECTION, _track(xs)) == (letter if told else CANNOT_TELL)


def test_direction_sees_small_steps_back_that_add_up():
    # Each step back is within the jitter tolerance, but together they fall 4 px behind the furthest position.
    xs = [16.0, 30.0, 44.0, 43.0, 42.0, 41.0, 40.0, 60.0, 80.0, 100.0]
    assert max(a - b for a, b in itertools.pairwise(xs)) <= JITTER_PX
    assert _computed(DIRECTION, _track(xs)) == CANNOT_TELL


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        ([False] * 8 + [True] * 8, "A"),
        ([True] * 8 + [False] * 8, "B"),
        ([False] * 7 + [True, False] + [True] * 7, CANNOT_TELL),  # shows, hides, shows again
        ([True] * 5 + [False] * 6 + [True] * 5, CANNOT_TELL),  # goes, then comes back
    ],
)
def test_appearance_needs_exactly_one_change_of_visibility(visible, expected):
    xs = [16.0 + 8.5 * i for i in range(len(visible))]
    assert _computed(APPEARANCE, _track(xs, visible)) == expected


def test_committed_synthetic_clips_get_the_workloads_own_key(server):
    for clip in WORKLOAD.spec.clips:
        url = video_data_url(WORKLOAD.clip_path(clip.id))
        for question in WORKLOAD.spec.questions:
            assert answer(server, question.id, url) == question.answers[clip.id], (clip.id, question.id)


def test_first_half_of_the_clip_never_shows_the_blue_square(server, clips):
    direction, appearance, first_visible = answers(server, clips["first-half"])
    assert direction == "A"  # the red square still moves right
    assert appearance == "D"  # "it never appears"
    assert first_visible == CANNOT_TELL


@pytest.mark.parametrize("clip", ["noise", "flat"])
def test_a_clip_without_the_scene_cannot_be_told(server, clips, clip):
    body = ask(server, WORKLOAD.prompt(DIRECTION).text, clips[clip])
    assert body["choices"][0]["message"]["content"] == CANNOT_TELL
    assert "red square found in 0%" in body[OBSERVATION_FIELD]["cannot_tell_because"]
    assert answer(server, APPEARANCE, clips[clip]) == CANNOT_TELL


def test_an_unknown_question_cannot_be_told(server, clips):
    body = ask(server, "What colour is the sky?\nA. blue\nB. green", clips["forward"])
    assert body["choices"][0]["message"]["content"] == CANNOT_TELL
    assert body[OBSERVATION_FIELD]["question_id"] is None


def test_letters_come_from_the_prompts_own_options(server, clips):
    shuffled = (
        "In which direction does the red square move?\n"
        "A. up and down\nB. it does not move\nC. right to left\nD. left to right\n"
        "Answer with the option's letter only."
    )
    assert ask(server, shuffled, clips["forward"])["choices"][0]["message"]["content"] == "D"
    assert ask(server, shuffled, clips["reversed"])["choices"][0]["message"]["content"] == "C"
    # No option names what the frames show: the endpoint says so rather than guessing a letter.
    lacking = "Where is the red square when the blue square is first visible?\nA. on the left\nB. on the right"
    body = ask(server, lacking, clips["forward"])
    assert body["choices"][0]["message"]["content"] == CANNOT_TELL
    assert body[OBSERVATION_FIELD]["outcome"] == "middle"


def test_observation_records_the_endpoints_own_sampling(server, clips):
    observation = ask(server, WORKLOAD.prompt(DIRECTION).text, clips["forward"])[OBSERVATION_FIELD]
    assert observation["sampling_policy"].startswith("uniform:16")
    assert observation["frame_count"] == SCENE.frames
    assert observation["frame_indices"] == [round(i * 47 / 15) for i in range(16)]
    assert observation["test_double"] is True


def test_sampling_policy_is_configurable(clips):
    with ReferenceServer(ReferenceConfig(sampling_policy="uniform:2")) as coarse:
        body = ask(coarse, WORKLOAD.prompt(FIRST_VISIBLE).text, clips["forward"])
    assert body[OBSERVATION_FIELD]["frame_indices"] == [0, 47]
    # The last frame is the first sampled one with the blue square; the red square has reached the right by then:
    # the answer follows the frames the endpoint itself chose.
    assert body["choices"][0]["message"]["content"] == "C"


def test_max_tokens_cuts_the_answer_with_finish_reason_length(server, clips):
    body = ask(server, "Unrecognised?", clips["noise"], max_tokens=2)
    choice = body["choices"][0]
    assert (choice["message"]["content"], choice["finish_reason"]) == ("I cannot", "length")
    assert body["usage"]["completion_tokens"] == 2
    full = ask(server, WORKLOAD.prompt(DIRECTION).text, clips["forward"], max_completion_tokens=1)
    assert (full["choices"][0]["finish_reason"], full["usage"]["completion_tokens"]) == ("stop", 1)
