"""Sampling policies against frame picks measured on the reference loaders (Qwen's rounding, vLLM's OpenCV loader
truncating, the Qwen fps defaults on real clips: the expected values below) and their edge cases."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from pydantic import BaseModel

from trtmc_videoqa.media import ResolvedSampling, SamplingPolicy

QWEN_FPS = "fps:2,min=4,max=768,even"


def picks(spec: str, frame_count: int = 48, fps: Fraction | str | int = 24, start: float = 0.0) -> list[int]:
    return SamplingPolicy.parse(spec).resolve(frame_count, fps, start).indices


def test_uniform_8_rounded_as_qwen_does() -> None:
    assert picks("uniform:8") == picks("uniform:8,round") == [0, 7, 13, 20, 27, 34, 40, 47]


def test_uniform_8_truncated_as_vllm_opencv_loader_does() -> None:
    assert picks("uniform:8,floor") == [0, 6, 13, 20, 26, 33, 40, 47]


def test_fps_2_on_the_48_frame_24_fps_clip() -> None:
    assert picks("fps:2") == [0, 16, 31, 47]
    assert picks(QWEN_FPS) == [0, 16, 31, 47]


@pytest.mark.parametrize(
    ("clip", "frame_count", "fps", "expected_count"),
    [
        ("bigbuckbunny.mp4", 132, 25, 10),  # 10.56 floored to even
        ("synthetic 2 s clip", 48, 24, 4),
        ("cockatoo.mp4", 280, 20, 28),
    ],
)
def test_qwen_defaults_give_measured_frame_counts(clip: str, frame_count: int, fps: int, expected_count: int) -> None:
    resolved = SamplingPolicy.parse(QWEN_FPS).resolve(frame_count, fps)
    assert len(resolved.indices) == expected_count, clip
    assert resolved.indices[0] == 0 and resolved.indices[-1] == frame_count - 1


def test_fps_count_is_clamped_to_min_frames() -> None:
    # 1 fps on 2 s is 2 frames; Qwen's min_frames 4 lifts it
    resolved = SamplingPolicy.parse("fps:1,min=4,max=768,even").resolve(48, 24)
    assert resolved.indices == [0, 16, 31, 47]
    assert "= 2 frames" not in resolved.rule and "48 / 24 x 1 = 2; clamped to [4, 48]" in resolved.rule
    assert picks("fps:1") == [0, 47]


def test_fps_count_is_floored_to_even() -> None:
    assert len(picks("fps:2.5")) == 5  # 48 / 24 x 2.5 = 5
    resolved = SamplingPolicy.parse("fps:2.5,min=4,max=768,even").resolve(48, 24)
    assert len(resolved.indices) == 4
    assert "floored to a multiple of 2 -> 4 frames" in resolved.rule


def test_fps_count_is_clamped_to_max_frames_and_even() -> None:
    assert len(picks("fps:24,max=10")) == 10
    assert len(picks("fps:24,max=11,even")) == 10
    assert len(picks("fps:24,max=11")) == 11


def test_fps_above_the_source_rate_takes_every_frame_once() -> None:
    assert picks("fps:48") == list(range(48))
    assert picks("fps:48,even", frame_count=47) == [int(i) for i in np.rint(np.linspace(0, 46, 46))]
    assert len(picks("fps:48,even", frame_count=47)) == 46


def test_more_frames_asked_than_the_clip_has() -> None:
    resolved = SamplingPolicy.parse("uniform:100").resolve(48, 24)
    assert resolved.indices == list(range(48))
    assert "clamped to the clip's 48 frames" in resolved.rule
    assert len(picks("uniform:100,even", frame_count=47)) == 46


def test_one_frame() -> None:
    assert picks("uniform:1") == [0]
    assert picks("uniform:1,floor", frame_count=1) == [0]
    assert picks("uniform:8", frame_count=1) == [0]


def test_odd_uniform_count_with_even_rounds_like_qwen() -> None:
    # Qwen rounds an explicit count to the nearest multiple of 2 with Python's round(): 5 -> 4, 7 -> 8, 3 -> 4
    assert [len(picks(f"uniform:{n},even")) for n in (3, 5, 7, 8)] == [4, 4, 8, 8]


def test_all_frames() -> None:
    resolved = SamplingPolicy.parse("all").resolve(48, 24)
    assert resolved.indices == list(range(48)) and resolved.rule == "all 48 frames"


@pytest.mark.parametrize("spec", ["uniform:8", "fps:2", QWEN_FPS, "all"])
def test_zero_frames_is_a_clear_value_error(spec: str) -> None:
    with pytest.raises(ValueError, match="from a clip with 0 frames; probe the clip and check it has frames"):
        SamplingPolicy.parse(spec).resolve(0, 24)


def test_even_count_from_a_one_frame_clip_is_refused() -> None:
    with pytest.raises(ValueError, match="picks no frames from a clip with 1 frame"):
        SamplingPolicy.parse(QWEN_FPS).resolve(1, 24)
    with pytest.raises(ValueError, match="even number of frames from a clip with 1 frame"):
        SamplingPolicy.parse("uniform:4,even").resolve(1, 24)


def test_non_positive_source_fps_is_refused() -> None:
    with pytest.raises(ValueError, match="frame rate must be positive"):
        SamplingPolicy.parse("uniform:8").resolve(48, 0)


def test_timestamps_follow_the_indices_and_the_start_time() -> None:
    resolved = SamplingPolicy.parse("uniform:8").resolve(48, Fraction(24), start_time_s=0.541667)
    assert resolved.timestamps_s == [round(0.541667 + i / 24, 6) for i in [0, 7, 13, 20, 27, 34, 40, 47]]
    assert resolved.source_fps == "24/1" and resolved.start_time_s == 0.541667


def test_source_fps_as_a_fraction_string() -> None:
    resolved = SamplingPolicy.parse("fps:2").resolve(300, "30000/1001")
    assert resolved.source_fps == "30000/1001"
    assert len(resolved.indices) == 20  # 300 / 29.97 x 2 = 20.02
    assert resolved.timestamps_s[-1] == round(299 * 1001 / 30000, 6)


def test_resolved_sampling_records_policy_rule_and_where() -> None:
    resolved = SamplingPolicy.parse("uniform:8,floor,where=client").resolve(48, 24)
    assert isinstance(resolved, ResolvedSampling)
    assert resolved.where == "client" and resolved.policy.rounding == "floor"
    assert resolved.spec == "uniform:8,floor,where=client"
    assert resolved.rule == (
        "uniform 8 of 48 frames; indices = linspace(0, 47, 8) truncated toward zero (as vLLM's OpenCV loader does)"
    )
    assert ResolvedSampling.model_validate_json(resolved.model_dump_json()) == resolved


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("uniform:8", "uniform:8,round,where=server"),
        (" uniform:16 , floor ", "uniform:16,floor,where=server"),
        (QWEN_FPS, "fps:2,round,min=4,max=768,even,where=server"),
        ("fps:0.5,where=client", "fps:0.5,round,min=1,where=client"),
        ("all", "all,where=server"),
        ("all,where=client", "all,where=client"),
    ],
)
def test_spec_round_trip(spec: str, canonical: str) -> None:
    policy = SamplingPolicy.parse(spec)
    assert policy.spec == canonical
    assert SamplingPolicy.parse(policy.spec) == policy


def test_policy_fields_describe_the_rule() -> None:
    policy = SamplingPolicy.parse(QWEN_FPS)
    assert (
        policy.mode,
        policy.fps,
        policy.rounding,
        policy.min_frames,
        policy.max_frames,
        policy.frame_factor,
        policy.where,
    ) == ("fps", 2.0, "round", 4, 768, 2, "server")


def test_a_pydantic_field_accepts_the_spec_string() -> None:
    class Run(BaseModel):
        policy: SamplingPolicy

    assert Run.model_validate({"policy": "uniform:8,floor"}).policy == SamplingPolicy.parse("uniform:8,floor")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("uniform", "needs a value after the colon"),
        ("uniform:x", "expected a whole number, got 'x'"),
        ("uniform:0", "greater than or equal to 1"),
        ("fps:0", "greater than 0"),
        ("fps:two", "fps needs a number"),
        ("sideways:3", "unknown sampling mode"),
        ("uniform:8,sideways", "unknown sampling option 'sideways'"),
        ("uniform:8,where=edge", "unknown sampling option 'where=edge'"),
        ("uniform:8,min=3", "uniform sampling takes a frame count (uniform:N) and no fps, min or max"),
        ("all:3", "'all' takes no argument"),
        ("all,even", "'all' takes no count, rate, rounding, min, max or even"),
        ("uniform:1,even", "uniform:1 cannot be even"),
        ("fps:2,min=10,max=4", "max=4 is below min=10"),
    ],
)
def test_bad_specs_are_value_errors_that_say_why(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SamplingPolicy.parse(spec)


def test_floor_rule_matches_numpy_integer_linspace_as_vllm_computes_it() -> None:
    for frame_count in range(1, 400, 7):
        for count in range(1, 40):
            if count > frame_count:
                continue
            expected = np.linspace(0, frame_count - 1, count, dtype=int).tolist()
            assert picks(f"uniform:{count},floor", frame_count=frame_count) == expected, (frame_count, count)


def test_positions_are_numpys_linspace_rint_and_trunc_bit_for_bit() -> None:
    """The spread runs without NumPy; every position, and every index either rounding picks, is NumPy's own."""
    from trtmc_videoqa.media.sampling import _spread, linspace

    for frame_count in [*range(1, 400), 719, 1000, 1799, 7201, 86_401, 2**31 + 1]:
        for count in [*range(2, 70), 128, 257, 768]:
            expected = np.linspace(0, frame_count - 1, count)
            assert np.array(linspace(frame_count - 1, count)).tobytes() == expected.tobytes(), (frame_count, count)
            # compared as int64 arrays: a list of NumPy's values made one by one cost more than the spread itself
            if count <= frame_count:
                assert np.array_equal(_spread(frame_count, count, "round"), np.rint(expected).astype(np.int64))
                assert np.array_equal(_spread(frame_count, count, "floor"), np.trunc(expected).astype(np.int64))
    assert linspace(0, 3) == list(np.linspace(0, 0, 3))  # numpy's zero-step path
