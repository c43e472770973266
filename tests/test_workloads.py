"""Workloads as data: built-in files load, tampering is refused, the committed clips are what they claim."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import av
import numpy as np
import pytest

from trtmc_videoqa.media.payload import TRTMC_SERVER_BODY_LIMIT, predicted_body_size
from trtmc_videoqa.workloads import (
    BUILTIN_WORKLOADS,
    Question,
    WorkloadError,
    WorkloadFile,
    builtin_workload,
    load_workload,
)
from trtmc_videoqa.workloads.digest import workload_digest
from trtmc_videoqa.workloads.grading import grade_answer
from trtmc_videoqa.workloads.seal import seal_workload_file
from trtmc_videoqa.workloads.synthetic import SCENE, SYNTHETIC_QUESTION_IDS, SyntheticScene, make_clip


def copy_workload(name: str, tmp_path: Path) -> Path:
    """A private copy of a built-in workload directory; returns its workload.json."""
    target = tmp_path / name
    shutil.copytree(BUILTIN_WORKLOADS[name].parent, target)
    return target / "workload.json"


def edit_json(path: Path, change) -> None:
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw, indent=2))


def decode_rgb(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def mean_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(int) - b.astype(int)).mean())


# --- the built-in workloads -------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "kind"), [("bigbuckbunny", "qualification"), ("synthetic", "self-test")])
def test_builtin_workloads_load(name: str, kind: str) -> None:
    workload = load_workload(name)
    assert workload == builtin_workload(name)
    assert workload.spec.kind == kind
    assert workload.reversal_pairs() == [("forward", "reversed")]
    assert workload.digest == workload_digest(workload.spec)
    assert workload.spec.generation.max_tokens == 16 and workload.spec.generation.temperature == 0.0
    for clip in workload.spec.clips:
        data = workload.clip_path(clip.id).read_bytes()
        assert hashlib.sha256(data).hexdigest() == clip.sha256 and len(data) == clip.bytes


def test_bigbuckbunny_has_temporal_questions_with_flipped_keys() -> None:
    workload = builtin_workload("bigbuckbunny")
    assert len(workload.spec.questions) >= 3
    for question in workload.spec.questions:
        assert question.needs in ("order", "direction") and question.why_not_one_frame
        assert question.answers["forward"] != question.answers["reversed"]
    source = workload.clip("forward").derived_from
    assert source.source_sha256 == "f25b31f155970c46300934bda4a76cd2f581acab45c49762832ffdfddbcf9fdd"
    attribution = (workload.root / workload.clip("forward").attribution).read_text()
    assert "Big Buck Bunny © 2008 Blender Foundation | www.bigbuckbunny.org, CC BY 3.0" in attribution


def test_synthetic_questions_are_the_shared_contract() -> None:
    workload = builtin_workload("synthetic")
    assert tuple(question.id for question in workload.spec.questions) == SYNTHETIC_QUESTION_IDS
    answers = {question.id: question.answers for question in workload.spec.questions}
    assert answers == {
        "synthetic-direction": {"forward": "A", "reversed": "B"},
        "synthetic-appearance": {"forward": "A", "reversed": "B"},
        "synthetic-first-visible": {"forward": "B", "reversed": "C"},
    }
    direction = workload.question("synthetic-direction")
    assert direction.prompt == "In which direction does the red square move?"
    assert [option.text for option in direction.options] == [
        "left to right",
        "right to left",
        "it does not move",
        "up and down",
    ]


def test_every_request_fits_the_server_body_limit() -> None:
    for name in BUILTIN_WORKLOADS:
        workload = builtin_workload(name)
        for clip, prompt in itertools.product(workload.spec.clips, workload.spec.prompts):
            size = predicted_body_size(
                "a-model-name-of-sixty-four-characters-is-longer-than-any-we-serve",
                prompt.text,
                clip.bytes,
                clip.mime,
                max_tokens=workload.spec.generation.max_tokens,
            )
            assert size <= TRTMC_SERVER_BODY_LIMIT, (name, clip.id, size)


def test_committed_files_stay_small() -> None:
    total = sum(
        path.stat().st_size for path in BUILTIN_WORKLOADS["bigbuckbunny"].parents[1].rglob("*") if path.is_file()
    )
    assert total < 512 * 1024


def test_recorded_video_facts_match_the_clips() -> None:
    for name in BUILTIN_WORKLOADS:
        workload = builtin_workload(name)
        for clip in workload.spec.clips:
            with av.open(str(workload.clip_path(clip.id))) as container:
                stream = container.streams.video[0]
                frames = sum(1 for _ in container.decode(stream))
                assert (stream.codec_context.width, stream.codec_context.height) == (
                    clip.video.width,
                    clip.video.height,
                )
                assert str(stream.average_rate) == clip.video.fps
                assert frames == clip.video.frames
                assert stream.codec_context.pix_fmt == clip.video.pix_fmt
                assert bool(container.streams.audio) is clip.video.audio


# --- prompts ----------------------------------------------------------------------------------------------


def test_rendered_prompt_lists_the_options_as_letter_lines() -> None:
    workload = builtin_workload("bigbuckbunny")
    for question in workload.spec.questions:
        prompt = workload.prompt(question.id)
        lines = prompt.text.splitlines()
        assert lines[0] == question.prompt
        assert lines[1 : 1 + len(question.options)] == [f"{o.letter}. {o.text}" for o in question.options]
        assert lines[-1] == "Answer with the option's letter only."
        assert prompt.sha256 == hashlib.sha256(prompt.text.encode()).hexdigest()


def test_every_accepted_phrase_grades_to_its_own_option() -> None:
    # Each option's text and aliases, given as the whole answer, must pick that option and no other.
    for name in BUILTIN_WORKLOADS:
        for question in builtin_workload(name).spec.questions:
            for option in question.options:
                for phrase in (option.text, *option.aliases):
                    graded = grade_answer(phrase, question.options, option.letter)
                    assert graded.outcome == "correct", (question.id, option.letter, phrase, graded)


# --- refusing bad files -----------------------------------------------------------------------------------


def test_a_workload_loads_from_any_path(tmp_path: Path) -> None:
    file = copy_workload("synthetic", tmp_path / "elsewhere")
    assert load_workload(file).digest == builtin_workload("synthetic").digest
    assert load_workload(file.parent).file == file  # the directory holding workload.json works too


def test_clip_with_a_different_size_is_refused(tmp_path: Path) -> None:
    file = copy_workload("synthetic", tmp_path)
    with (file.parent / "synthetic-forward.mp4").open("ab") as clip:
        clip.write(b"\0")
    with pytest.raises(WorkloadError, match=r"workload\.json.*clip 'forward'.*records .* bytes.*seal"):
        load_workload(file)


def test_clip_with_a_different_sha256_is_refused(tmp_path: Path) -> None:
    file = copy_workload("synthetic", tmp_path)
    clip = file.parent / "synthetic-forward.mp4"
    data = bytearray(clip.read_bytes())
    data[-1] ^= 0xFF  # same size, other bytes
    clip.write_bytes(bytes(data))
    with pytest.raises(WorkloadError, match="sha256"):
        load_workload(file)


def test_missing_clip_is_refused(tmp_path: Path) -> None:
    file = copy_workload("synthetic", tmp_path)
    (file.parent / "synthetic-reversed.mp4").unlink()
    with pytest.raises(WorkloadError, match=r"clip 'reversed' file .* is missing"):
        load_workload(file)


def test_malformed_json_is_refused(tmp_path: Path) -> None:
    file = copy_workload("synthetic", tmp_path)
    file.write_text(file.read_text()[:-20])
    with pytest.raises(WorkloadError, match=r"workload\.json: not valid JSON"):
        load_workload(file)


def test_file_that_does_not_match_the_schema_is_refused(tmp_path: Path) -> None:
    file = copy_workload("synthetic", tmp_path)
    edit_json(file, lambda raw: raw.pop("questions"))
    with pytest.raises(WorkloadError, match=r"does not match the workload schema \(questions: Field required"):
        load_workload(file)


def test_missing_workload_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="no such workload file"):
        load_workload(tmp_path / "nothing.json")
    with pytest.raises(WorkloadError, match="no built-in workload"):
        builtin_workload("nothing")


@pytest.mark.parametrize("escape", ["../synthetic-forward.mp4", "/etc/hostname"])
def test_clip_path_outside_the_workload_directory_is_refused(tmp_path: Path, escape: str) -> None:
    file = copy_workload("synthetic", tmp_path / "inner")
    shutil.copy(file.parent / "synthetic-forward.mp4", tmp_path / "inner" / "synthetic-forward.mp4")
    edit_json(file, lambda raw: raw["clips"][0].update(file=escape))
    with pytest.raises(WorkloadError, match="leads outside the workload directory"):
        load_workload(file)


def test_clip_link_leading_outside_is_refused(tmp_path: Path) -> None:
    file = copy_workload("synthetic", tmp_path / "inner")
    clip = file.parent / "synthetic-forward.mp4"
    outside = tmp_path / "outside.mp4"
    clip.rename(outside)
    clip.symlink_to(outside)
    with pytest.raises(WorkloadError, match="leads outside the workload directory"):
        load_workload(file)


# --- identity ---------------------------------------------------------------------------------------------


def test_digest_changes_when_a_question_changes() -> None:
    spec = builtin_workload("synthetic").spec
    question = spec.questions[0]
    changed = question.model_copy(update={"prompt": question.prompt + " Look closely."})
    other = spec.model_copy(update={"questions": (changed, *spec.questions[1:])})
    assert workload_digest(other) != spec.digest
    flipped = question.model_copy(update={"answers": {"forward": "B", "reversed": "A"}})
    assert workload_digest(spec.model_copy(update={"questions": (flipped, *spec.questions[1:])})) != spec.digest


def test_digest_changes_when_policies_or_clip_identity_change() -> None:
    spec = builtin_workload("synthetic").spec
    assert workload_digest(spec.model_copy(update={"sampling_policies": ("uniform:16",)})) != spec.digest
    clip = spec.clips[0].model_copy(update={"sha256": "1" * 64})
    assert workload_digest(spec.model_copy(update={"clips": (clip, *spec.clips[1:])})) != spec.digest


def test_an_edited_question_is_refused_until_sealed(tmp_path: Path) -> None:
    file = copy_workload("synthetic", tmp_path)
    edit_json(file, lambda raw: raw["questions"][0].update(prompt="Which way does the red square go?"))
    with pytest.raises(WorkloadError, match="seal"):
        load_workload(file)
    sealed = seal_workload_file(file)
    assert load_workload(file).digest == sealed.digest != builtin_workload("synthetic").digest


def test_a_regenerated_clip_is_a_new_identity_recorded_by_sealing(tmp_path: Path) -> None:
    file = copy_workload("synthetic", tmp_path)
    clip = file.parent / "synthetic-forward.mp4"
    clip.unlink()
    make_clip(clip, scene=SyntheticScene(blue_first_frame=12))  # different frames, different bytes
    with pytest.raises(WorkloadError, match="sha256"):
        load_workload(file)
    seal_workload_file(file)
    reloaded = load_workload(file)
    assert reloaded.clip("forward").sha256 == hashlib.sha256(clip.read_bytes()).hexdigest()
    assert reloaded.clip("forward").sha256 != builtin_workload("synthetic").clip("forward").sha256


def test_reversed_answer_equal_to_forward_is_refused() -> None:
    raw = json.loads(BUILTIN_WORKLOADS["synthetic"].read_text())
    raw["questions"][0]["answers"]["reversed"] = raw["questions"][0]["answers"]["forward"]
    with pytest.raises(ValueError, match="same answer on 'reversed' and on 'forward'"):
        WorkloadFile.model_validate(raw)


def test_a_phrase_shared_by_two_options_is_refused() -> None:
    raw = json.loads(BUILTIN_WORKLOADS["synthetic"].read_text())["questions"][0]
    raw["options"][1]["aliases"].append("Left to right!")
    with pytest.raises(ValueError, match="belongs to both option A and B"):
        Question.model_validate(raw)


def test_option_letters_run_from_a() -> None:
    raw = json.loads(BUILTIN_WORKLOADS["synthetic"].read_text())["questions"][0]
    raw["options"][1]["letter"] = "E"
    with pytest.raises(ValueError, match="option letters must be"):
        Question.model_validate(raw)


def test_importing_the_package_loads_no_pyav() -> None:
    code = "import sys, trtmc_videoqa.workloads; print('av' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_sampling_policies_are_media_sampling_specs(tmp_path: Path) -> None:
    policies = builtin_workload("bigbuckbunny").sampling_policies()
    assert [(policy.mode, policy.frames) for policy in policies] == [("uniform", 8), ("uniform", 16)]
    file = copy_workload("synthetic", tmp_path)
    edit_json(file, lambda raw: raw.update(sampling_policies=["uniform:eight"]))
    with pytest.raises(WorkloadError, match=r"sampling_policies: .*uniform:eight"):
        load_workload(file)


# --- the clips are what they claim ------------------------------------------------------------------------


def test_reversed_bigbuckbunny_is_the_forward_clip_backwards() -> None:
    workload = builtin_workload("bigbuckbunny")
    forward, backward = decode_rgb(workload.clip_path("forward")), decode_rgb(workload.clip_path("reversed"))
    count = len(forward)
    assert count == len(backward) == 132
    # First and last frames differ a lot, so matching ends show the order really is reversed; both clips are
    # lossy encodes of the same frames, hence a tolerance rather than equality.
    assert mean_difference(forward[0], forward[-1]) > 20
    assert mean_difference(forward[0], backward[-1]) < 6
    assert mean_difference(forward[-1], backward[0]) < 6
    assert max(mean_difference(f, b) for f, b in zip(forward, reversed(backward), strict=True)) < 6
    for index in (0, 20, 45, 80, 110, count - 1):
        nearest = min(range(count), key=lambda other: mean_difference(forward[index], backward[other]))
        assert abs(nearest - (count - 1 - index)) <= 2, (index, nearest)


def red_box_and_blue(pixels: np.ndarray) -> tuple[tuple[int, int, int, int], bool]:
    """The red square's box and whether the blue square shows, found by colour in a decoded frame."""
    rgb = pixels.astype(int)
    red = (rgb[..., 0] > 150) & (rgb[..., 1] < 100) & (rgb[..., 2] < 100)
    blue = (rgb[..., 2] > 150) & (rgb[..., 0] < 100) & (rgb[..., 1] < 120)
    ys, xs = np.nonzero(red)
    return (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1), int(
        blue.sum()
    ) > SCENE.square_size**2 // 2


def assert_decodes_to_scene(path: Path, *, reversed_order: bool) -> None:
    frames = decode_rgb(path)
    assert len(frames) == SCENE.frames
    for index, pixels in enumerate(frames):
        assert pixels.shape == (SCENE.height, SCENE.width, 3)
        box, blue = red_box_and_blue(pixels)
        expected = SCENE.red_box(index, reversed=reversed_order)
        assert max(abs(got - want) for got, want in zip(box, expected, strict=True)) <= 1, (index, box, expected)
        assert blue is SCENE.blue_visible(index, reversed=reversed_order), index
        assert mean_difference(pixels, SCENE.render(index, reversed=reversed_order)) < 4


@pytest.mark.parametrize("reversed_order", [False, True])
def test_committed_synthetic_clips_decode_to_the_scene(reversed_order: bool) -> None:
    workload = builtin_workload("synthetic")
    assert_decodes_to_scene(
        workload.clip_path("reversed" if reversed_order else "forward"), reversed_order=reversed_order
    )


@pytest.mark.parametrize("reversed_order", [False, True])
def test_regenerated_synthetic_clips_decode_to_the_same_scene(tmp_path: Path, reversed_order: bool) -> None:
    # Bytes depend on the PyAV version; what must not change is what the frames show.
    path = make_clip(tmp_path / "clip.mp4", reversed=reversed_order)
    assert_decodes_to_scene(path, reversed_order=reversed_order)


def test_scene_answers_by_construction() -> None:
    assert SCENE.red_x(0) < SCENE.red_x(SCENE.frames - 1)
    assert SCENE.red_x(0, reversed=True) > SCENE.red_x(SCENE.frames - 1, reversed=True)
    first_forward = next(i for i in range(SCENE.frames) if SCENE.blue_visible(i))
    first_reversed = next(i for i in range(SCENE.frames) if SCENE.blue_visible(i, reversed=True))
    assert (first_forward, first_reversed) == (24, 0)
    centre = SCENE.square_size / 2
    assert SCENE.horizontal_third(SCENE.red_x(first_forward) + centre) == "middle"
    assert SCENE.horizontal_third(SCENE.red_x(first_reversed, reversed=True) + centre) == "right"


def test_recipe_refuses_another_source(tmp_path: Path) -> None:
    from trtmc_videoqa.workloads.recipe import make_clips

    fake = tmp_path / "bigbuckbunny.mp4"
    fake.write_bytes(b"not the clip")
    with pytest.raises(ValueError, match="is not the expected source"):
        make_clips(fake, tmp_path / "out")
