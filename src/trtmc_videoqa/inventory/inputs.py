"""What a manifest's testcases feed the model (media inputs) and the media controls it sets."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..results import Evidence, MediaControl, TestcaseFacts
from .manifest import Manifest

IMAGE_KEYS = frozenset({"test_image", "image", "image_path", "input_image", "reference_image", "test_image_path"})
IMAGES_KEYS = frozenset({"image_paths", "images", "test_images", "left_image", "right_image"})
FRAME_KEYS = frozenset(
    {
        "video_frame_paths",
        "frame_paths",
        "frames",
        "video",
        "video_path",
        "video_paths",
        "videos",
        "test_video",
        "input_video",
        "timestamps_seconds",
    }
)
AUDIO_KEYS = frozenset({"test_input_audio", "audio", "audio_path", "input_audio"})
CONTROL_KEYS = frozenset(
    {
        "image_height",
        "image_width",
        "image_size",
        "fixed_image_size",
        "video_num_frames",
        "num_frames",
        "video_height",
        "video_width",
        "fps",
        "min_pixels",
        "max_pixels",
        "max_frames",
        "min_frames",
        "media_kwargs",
        "height",
        "width",
        "max_state_tokens",
    }
)
FRAME_COUNT_KEYS = ("video_num_frames", "num_frames")


@dataclass(frozen=True)
class InputFacts:
    kinds: set[str]  # image | images | frames | audio
    evidence: dict[str, Evidence]  # first line showing each kind
    frame_counts: list[tuple[int, Evidence]]  # frame counts asked for (video_num_frames / num_frames)
    empty_keys: frozenset[str] = frozenset()  # media input keys present only with an empty value


def _walk(value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Keys of a testcase, including nested `inputs`-style objects (bounded depth; manifests are small)."""
    if depth > 3 or not isinstance(value, Mapping):
        return
    for key, item in value.items():
        yield str(key), item
        if isinstance(item, Mapping):
            yield from _walk(item, depth + 1)


def _kind(key: str) -> str | None:
    if key in FRAME_KEYS:
        return "frames"
    if key in IMAGES_KEYS:
        return "images"
    if key in IMAGE_KEYS:
        return "image"
    if key in AUDIO_KEYS:
        return "audio"
    return None


def _scopes(manifest: Manifest) -> Iterator[tuple[str, Mapping[str, Any], int]]:
    """(scope name, object, first line) for the manifest itself and each testcase."""
    yield "manifest", {k: v for k, v in manifest.data.items() if k != "testcases"}, 0
    for case in manifest.testcases:
        name = str(case.get("name", "?"))
        yield f"testcase:{name}", case, manifest.text.testcase_start(name)


def media_inputs(manifest: Manifest) -> InputFacts:
    kinds: set[str] = set()
    evidence: dict[str, Evidence] = {}
    counts: list[tuple[int, Evidence]] = []
    filled: set[str] = set()
    empty: set[str] = set()
    for scope, obj, start in _scopes(manifest):
        for key, value in _walk(obj):
            kind = _kind(key)
            if kind and value not in (None, "", [], {}):
                # a list of frame lists or a list of several images is still its kind; one image listed twice is not.
                kinds.add(kind)
                filled.add(key)
                evidence.setdefault(kind, manifest.text.evidence(key, f"{scope} feeds {kind} through {key!r}", start))
            elif kind:
                empty.add(key)
            if key in FRAME_COUNT_KEYS and isinstance(value, int) and not isinstance(value, bool):
                counts.append((value, manifest.text.evidence(key, f"{scope} asks for {value} frames", start)))
    return InputFacts(kinds, evidence, counts, frozenset(empty - filled))


def media_controls(manifest: Manifest) -> list[MediaControl]:
    controls: list[MediaControl] = []
    for scope, obj, start in _scopes(manifest):
        for key, value in _walk(obj):
            if key in CONTROL_KEYS:
                controls.append(
                    MediaControl(
                        name=key,
                        value=value,
                        scope=scope,
                        evidence=manifest.text.evidence(key, f"media control {key}", start),
                    )
                )
    return controls


def testcase_facts(manifest: Manifest) -> list[TestcaseFacts]:
    facts = []
    for case in manifest.testcases:
        kinds = sorted({k for key, _ in _walk(case) if (k := _kind(key))})
        tier = case.get("ci_tier")
        premerge = case.get("premerge")
        facts.append(
            TestcaseFacts(
                name=str(case.get("name", "?")),
                selected_task=case.get("selected_task") if isinstance(case.get("selected_task"), str) else None,
                ci_tier=tier if isinstance(tier, str) else None,
                premerge=premerge if isinstance(premerge, bool) else None,
                l0=is_l0_testcase(case),
                media_inputs=kinds,
            )
        )
    return facts


def is_l0_testcase(case: Mapping[str, Any]) -> bool:
    # `l0_replacement` names the L0 profile that stands in for a full testcase; it does not make this one L0.
    return case.get("ci_tier") == "l0_only"
