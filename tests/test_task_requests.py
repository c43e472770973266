"""The native request each Task takes, read from a task adapter with `ast` (never imported)."""

from __future__ import annotations

import textwrap
import threading
import time
from pathlib import Path

import pytest

from trtmc_videoqa.inventory.catalog import TASK_ADAPTERS
from trtmc_videoqa.inventory.task_requests import native_request_for, native_requests, task_of

# A small adapter in the style of TRTMC's: one `if` per Task in `_request`, each building a dict its own way.
# Importing it would fail (the names it calls do not exist), which is the point: it is only ever read.
ADAPTER = """
from typing import Any
import not_a_module_here

_DEFAULTS: dict[str, tuple[str, int, int]] = {
    "clip_answering": ("generate", 1, 10),
    "picture_answering": ("generate", 1, 10),
    "clip_or_picture": ("generate", 1, 10),
    "mask_tracking_a": ("track_masks", 1, 5),
    "mask_tracking_b": ("track_masks", 1, 5),
    "scoring_one": ("classify", 50, 500),
    "scoring_two": ("classify", 50, 500),
    "speech_a": ("transcribe", 1, 10),
    "copier": ("encode", 50, 500),
    "looped": ("generate", 5, 50),
    "deep": ("generate", 5, 50),
}

_TRACKERS = frozenset({"mask_tracking_a", "mask_tracking_b"})
_SCORERS = frozenset(("scoring_one",)) | {"scoring_two"}


def _text_part(case, root):
    return {"prompt": case["q"], "max_new_tokens": 64, "temperature": 0.7}


def _speech_part(task, case, root):
    request = {"audio_path": case["a"]}
    if task == "speech_a":
        request["language"] = "en"
    else:
        request["never_for_speech_a"] = 1
    return request


def _level1(case):
    return {"one": 1, **_level2(case)}


def _level2(case):
    return {"two": 2, **_level3(case)}


def _level3(case):
    return {"three": 3, **_level4(case)}


def _level4(case):
    return {"four": 4}


def _request(task, case, root):
    if task == "clip_answering":
        return {**_text_part(case, root), "video_path": case["v"]}
    if task == "picture_answering":
        return {**_text_part(case, root), "image_path": case["i"]}
    if task in {"clip_or_picture"}:
        request = {**_text_part(case, root)}
        if "v" in case:
            request["video_path"] = case["v"]
        else:
            request["image_path"] = case["i"]
        return request
    if task in _TRACKERS:
        request: dict[str, Any] = {"frame_paths": list(case["f"])}
        _copy_explicit(request, case, "timestamps", "device_masks")
        if task == "mask_tracking_a":
            request["threshold"] = 0.5
        else:
            request.update(text="a red square", box_hint=None)
        return request
    if task in _SCORERS:
        return _score_part(case)
    if task == "speech_a":
        return _speech_part(task, case, root)
    if task == "copier":
        request = {}
        request.update({"question": case["q"]})
        return dict(request, batch_size=1)
    if task == "looped":
        request = {"prompt": case["q"]}
        controls = (("top_k", 1), ("top_p", 1.0))
        for name, default in controls:
            request[name] = case.get(name, default)
        for name in ("seed", "stop"):
            if name in case:
                request[name] = case[name]
        return request
    if task == "deep":
        return _level1(case)
    raise ValueError(task)


def _score_part(case):
    request = {"image_path": case["i"]}
    request["batch_size"] = 1
    return request
"""


def checkout_with(tmp_path: Path, text: str) -> Path:
    path = tmp_path / TASK_ADAPTERS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return checkout_with(tmp_path, ADAPTER)


def test_every_task_and_its_operation(checkout: Path) -> None:
    requests = native_requests(checkout)
    assert sorted(requests) == [
        "clip_answering",
        "clip_or_picture",
        "copier",
        "deep",
        "looped",
        "mask_tracking_a",
        "mask_tracking_b",
        "picture_answering",
        "scoring_one",
        "scoring_two",
        "speech_a",
    ]
    assert requests["mask_tracking_a"].operation == "track_masks"
    assert requests["scoring_two"].operation == "classify"


def test_a_spread_helper_and_a_clip(checkout: Path) -> None:
    request = native_requests(checkout)["clip_answering"]
    assert request.fields == ["max_new_tokens", "prompt", "temperature", "video_path"]
    assert request.clip_field == "video_path"
    assert request.prompt_field == "prompt"


def test_an_image_task_has_no_clip_field(checkout: Path) -> None:
    """Like TRTMC's real vision_language_generation: the text helper spread, plus one image_path."""
    request = native_request_for(checkout, "picture_answering", "generate")
    assert request is not None
    assert request.fields == ["image_path", "max_new_tokens", "prompt", "temperature"]
    assert request.clip_field is None
    assert request.prompt_field == "prompt"


def test_a_branch_that_can_build_either(checkout: Path) -> None:
    request = native_requests(checkout)["clip_or_picture"]
    assert request.fields == ["image_path", "max_new_tokens", "prompt", "temperature", "video_path"]
    assert request.clip_field == "video_path"


def test_set_constants_copy_helper_update_and_task_narrowing(checkout: Path) -> None:
    requests = native_requests(checkout)
    assert requests["mask_tracking_a"].fields == ["device_masks", "frame_paths", "threshold", "timestamps"]
    assert requests["mask_tracking_b"].fields == ["box_hint", "device_masks", "frame_paths", "text", "timestamps"]
    assert requests["mask_tracking_b"].prompt_field == "text"
    assert requests["mask_tracking_a"].prompt_field is None
    assert requests["scoring_one"].fields == ["batch_size", "image_path"]  # `|` of sets, a returned helper
    assert requests["scoring_two"].fields == ["batch_size", "image_path"]


def test_a_helper_gets_the_task(checkout: Path) -> None:
    assert native_requests(checkout)["speech_a"].fields == ["audio_path", "language"]


def test_update_with_a_dict_and_dict_call(checkout: Path) -> None:
    request = native_requests(checkout)["copier"]
    assert request.fields == ["batch_size", "question"]
    assert request.prompt_field == "question"


def test_loops_over_names(checkout: Path) -> None:
    assert native_requests(checkout)["looped"].fields == ["prompt", "seed", "stop", "top_k", "top_p"]


def test_spreads_are_followed_three_deep(checkout: Path) -> None:
    assert native_requests(checkout)["deep"].fields == ["one", "three", "two"]


def test_evidence_is_the_matching_if(checkout: Path) -> None:
    request = native_requests(checkout)["mask_tracking_b"]
    evidence = request.evidence
    assert evidence is not None
    assert evidence.file == "apps/benchmark/trtmc_benchmark/task_adapters.py"
    assert evidence.excerpt == "if task in _TRACKERS:"
    lines = (checkout / TASK_ADAPTERS).read_text().splitlines()
    assert evidence.line is not None and lines[evidence.line - 1].strip() == evidence.excerpt
    assert task_of(request) == "mask_tracking_b"


def test_an_unknown_task_has_none(checkout: Path) -> None:
    assert native_request_for(checkout, "no_such_task", "generate") is None


@pytest.mark.parametrize(
    "text",
    [
        None,  # no file
        "def _request(task, case, root):\n    if task == 'x':\n        return {'a': \n",  # syntax error
        "def _other(task, case, root):\n    if task == 'x':\n        return {'a': 1}\n",  # no _request
        b"\xff\xfe\x00 not utf-8",
    ],
)
def test_nothing_to_read_is_empty_never_an_error(tmp_path: Path, text: str | bytes | None) -> None:
    if isinstance(text, str):
        checkout_with(tmp_path, text)
    elif isinstance(text, bytes):
        (tmp_path / TASK_ADAPTERS).parent.mkdir(parents=True)
        (tmp_path / TASK_ADAPTERS).write_bytes(text)
    assert native_requests(tmp_path) == {}
    assert native_request_for(tmp_path, "x", "generate") is None


def test_an_edited_file_is_read_again(tmp_path: Path) -> None:
    checkout_with(tmp_path, "def _request(task, case, root):\n    if task == 'x':\n        return {'a': 1}\n")
    assert native_requests(tmp_path)["x"].fields == ["a"]
    time.sleep(0.01)
    checkout_with(tmp_path, "def _request(task, case, root):\n    if task == 'x':\n        return {'a': 1, 'bb': 2}\n")
    assert native_requests(tmp_path)["x"].fields == ["a", "bb"]


def test_a_large_adapter_is_read_quickly(tmp_path: Path) -> None:
    branches = "".join(
        f"    if task == 'task_{n}':\n        return {{**_text_part(case, root), 'field_{n}': 1}}\n" for n in range(300)
    )
    helper = "def _text_part(case, root):\n    return {'prompt': 1}\n\n\n"
    checkout_with(tmp_path, helper + "def _request(task, case, root):\n" + branches)
    found: dict = {}
    reader = threading.Thread(target=lambda: found.update(native_requests(tmp_path)), daemon=True)
    reader.start()
    # Read in well under a second; the bound only ends a read that follows the helper's spread without end.
    reader.join(timeout=120)
    assert not reader.is_alive(), "reading 300 branches that spread one helper did not finish in 120 s"
    assert len(found) == 300
    assert found["task_7"].fields == ["field_7", "prompt"]
