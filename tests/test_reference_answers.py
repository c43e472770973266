"""The reference endpoint answers the synthetic questions by computing on the frames it decodes, over real HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest

from trtmc_videoqa.media import chat_request_body, video_data_url
from trtmc_videoqa.reference import CANNOT_TELL, OBSERVATION_FIELD, ReferenceConfig, ReferenceServer
from trtmc_videoqa.workloads import builtin_workload
from trtmc_videoqa.workloads.encode import write_h264_mp4
from trtmc_videoqa.workloads.synthetic import SCENE, SYNTHETIC_QUESTION_IDS, make_clip

DIRECTION, APPEARANCE, FIRST_VISIBLE = SYNTHETIC_QUESTION_IDS
WORKLOAD = builtin_workload("synthetic")


def _write(path: Path, frames: list[np.ndarray]) -> Path:
    return write_h264_mp4(path, frames, width=SCENE.width, height=SCENE.height, fps=SCENE.fps)


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Data URLs of: the scene forward and reversed, its first half, noise, and a flat colour."""
    root = tmp_path_factory.mktemp("reference-clips")
    rng = np.random.default_rng(7)
    paths = {
        "forward": make_clip(root / "forward.mp4"),
        "reversed": make_clip(root / "reversed.mp4", reversed=True),
        "first-half": _write(root / "first-half.mp4", [SCENE.render(i) for i in range(SCENE.frames // 2)]),
        "noise": _write(root / "noise.mp4", [rng.integers(0, 256, (SCENE.height, SCENE.width, 3), np.uint8)
                                            for _ in range(SCENE.frames)]),
        "flat": _write(root / "flat.mp4", [np.full((SCENE.height, SCENE.width, 3), 128, np.uint8)] * SCENE.frames),
    }
    return {name: video_data_url(path) for name, path in paths.items()}


@pytest.fixture(scope="module")
def server():
    with ReferenceServer(ReferenceConfig()) as running:
        yield running


def ask(server: ReferenceServer, prompt: str, url: str, **extra) -> dict:
    body = chat_request_body("trtmc-videoqa-reference", prompt, url, max_tokens=16, extra=extra or None)
    response = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30)
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
