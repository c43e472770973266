"""A hostile checkout (issue 33, item 10): every file the audit reads is read within a size and a nesting budget,
scanned in linear time, and one it cannot read is named in the inventory while the audit goes on.

Each case copies a fixture tree, plants one file, and runs `inventory` as a user does, in this process. pytest's
timeout, by its thread method, is a hang guard, never a measure of speed: `re` and Python's parser hold the
interpreter, which no signal interrupts, so the worker is ended and the test fails. Before these budgets each case
ended the audit (RecursionError, MemoryError, a serialization error: exit 1 and no inventory.json) or stalled it
for minutes to hours (a pattern trying every start against the rest of the text).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import run_main

from trtmc_videoqa.inventory import run_inventory
from trtmc_videoqa.results import CheckpointEntry, Inventory

FIXTURES = Path(__file__).parent / "fixtures"
NEWER, OLDER = FIXTURES / "trtmc_families", FIXTURES / "trtmc_e2e"
HANG_GUARD_S = 240  # the audit of each tree below takes a few seconds; before the fix, minutes to hours
ADAPTERS = "apps/benchmark/trtmc_benchmark/task_adapters.py"
CATALOG_FIELDS = {"operation", "catalog_status", "catalog_reason", "evidence", "native_request"}
VLM_3B = json.loads((NEWER / "families/vlm/tests/manifests/vlm-3b.json").read_text())


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def _audit(tree: Path, out: Path) -> tuple[subprocess.CompletedProcess[str], Inventory]:
    """`trtmc-videoqa inventory` on the tree, in this process (`main(argv)`, its output captured)."""
    done = run_main(None, "inventory", "--trtmc", str(tree), "--out", str(out))
    assert done.returncode == 0 and "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done, Inventory.model_validate_json((out / "inventory.json").read_text())


def _rows(inventory: Inventory, skip_families: set[str], skip_fields: set[str]) -> dict[str, dict[str, object]]:
    def kept(entry: CheckpointEntry) -> dict[str, object]:
        return {key: value for key, value in entry.model_dump().items() if key not in skip_fields}

    return {entry.manifest: kept(entry) for entry in inventory.entries if entry.family not in skip_families}


@functools.cache
def _untouched(source: Path) -> Inventory:
    """The audit of the fixture tree as it is, which every case compares its planted copy with (made once)."""
    return run_inventory(source)


def _copy(source: Path, tmp_path: Path) -> Path:
    tree = tmp_path / "trtmc"
    shutil.copytree(source, tree, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


# Python files the audit parses with `ast`: each unreadable, named in `skipped` with why, the rest as before.
UNPARSABLE = {
    # Python's parser runs out of stack: RecursionError (10 KB), MemoryError (200 KB)
    "support.py, 5,000 additions": ("families/clefish/support.py", "X = 1" + "+1" * 5000, "RecursionError"),
    "task_adapters.py, 5,000 additions": (ADAPTERS, "X = 1" + "+1" * 5000, "RecursionError"),
    "support.py, 200,000 minus signs": ("families/clefish/support.py", "X = " + "-" * 200_000 + "1", "MemoryError"),
    # parsed, but deeper than any reader may walk (its visitor ran out of stack): the nesting budget
    "support.py, 900 additions": ("families/clefish/support.py", "X = 1" + "+1" * 900, "more than 100 levels"),
}


@pytest.mark.timeout(HANG_GUARD_S, method="thread")
@pytest.mark.parametrize(("rel", "text", "why"), UNPARSABLE.values(), ids=UNPARSABLE.keys())
def test_python_past_the_nesting_budget_is_named_and_the_audit_goes_on(
    tmp_path: Path, rel: str, text: str, why: str
) -> None:
    tree = _copy(NEWER, tmp_path)
    before = _untouched(NEWER)
    (tree / rel).write_text(text + "\n")
    done, inventory = _audit(tree, tmp_path / "out")
    skipped = {item.path: item.reason for item in inventory.skipped}
    assert why in skipped[rel], skipped
    assert "skipped 1 other path(s)" in done.stdout
    adapters = rel == ADAPTERS  # the catalog needs it: every row's catalog status is unknown, and said so
    assert _rows(inventory, {"clefish"}, CATALOG_FIELDS if adapters else set()) == _rows(
        before, {"clefish"}, CATALOG_FIELDS if adapters else set()
    )
    assert [e.profile for e in inventory.entries] == [e.profile for e in before.entries]
    if adapters:
        assert {entry.catalog_status for entry in inventory.entries if entry.verdict != "invalid"} == {"unknown"}
        assert any(why in item and "catalog status is unknown" in item for item in inventory.lacking)
    else:
        (clefish,) = [entry for entry in inventory.entries if entry.family == "clefish"]
        assert clefish.declaration is not None and why in clefish.declaration


# Text the old patterns took minutes to hours on; each is read in linear time now, and changes no row.
SLOW = {
    # a runtime source: the class-head pattern tried each `class` against the rest (42 s at 200 KB; this is 2 MB)
    "runtime class heads": ("families/vidqa/runtime/hostile.cpp", "class A : " * 200_000),
    # an API header sorted first: the view's comment pattern on unclosed comments (13.6 s at 100 KB)
    "video view comments": (
        "core/api/include/trtmc/aa.h",
        "typedef struct {\n" + "/* " * 300_000 + "\n} trtmc_video_view_v1;",
    ),
    # ... and its member pattern on lines with no `;` (25 s at 80 KB)
    "video view members": (
        "core/api/include/trtmc/aa.h",
        "typedef struct {\n" + "a b c d e f g h\n" * 50_000 + "} trtmc_video_view_v1;\n",
    ),
    # a runtime header: the kTask pattern's two adjacent `\s*` on a run of spaces
    "kTask and spaces": ("core/runtime/include/trtmc/internal/aa.h", "kTask" + " " * 200_000 + "x;\n"),
    # model code: the C++ frame struct pattern on one long name (`\w*Frame\w*[^{};\n]*` backtracks three ways)
    "frame struct name": ("families/vidqa/hostile.py", "timestamp\nstruct " + "Frame" * 400_000),
}


@pytest.mark.timeout(HANG_GUARD_S, method="thread")
@pytest.mark.parametrize(("rel", "text"), SLOW.values(), ids=SLOW.keys())
def test_hostile_text_is_scanned_in_linear_time_and_changes_no_row(tmp_path: Path, rel: str, text: str) -> None:
    tree = _copy(NEWER, tmp_path)
    before = _untouched(NEWER)
    (tree / rel).write_text(text)
    _, inventory = _audit(tree, tmp_path / "out")
    assert inventory.skipped == before.skipped and inventory.lacking == before.lacking
    assert _rows(inventory, set(), set()) == _rows(before, set(), set())
    assert inventory.declared_tasks == before.declared_tasks and inventory.serving == before.serving


@pytest.mark.timeout(HANG_GUARD_S, method="thread")
def test_the_server_schemas_are_scanned_in_linear_time(tmp_path: Path) -> None:
    tree = _copy(NEWER, tmp_path)
    before = _untouched(NEWER)
    schemas = tree / "apps/server/python/trtmc_server/schemas.py"
    schemas.write_text(schemas.read_text() + "\n\nclass ContentPart:\n    " + "type: Literal[" * 200_000 + "\n")
    _, inventory = _audit(tree, tmp_path / "out")
    assert inventory.serving == before.serving and inventory.serving.chat_content_types


MANIFESTS: dict[str, tuple[Callable[[], str], str | None]] = {
    # json.loads gave RecursionError; a nesting it took (800) failed later, writing inventory.json
    "5,000 brackets": (lambda: "[" * 5000, "nests more than 64 levels deep"),
    "build_args 800 deep": (lambda: json.dumps({**VLM_3B, "build_args": _nested(800)}), "nests more than 64 levels"),
    # 20,000 testcases (3 MB): each testcase's keys were looked up from the first line on (about 15 minutes)
    "20,000 testcases": (
        lambda: json.dumps(
            {**VLM_3B, "testcases": [dict(VLM_3B["testcases"][0], name=f"case-{n}") for n in range(20_000)]}, indent=1
        ),
        None,
    ),
}


@pytest.mark.timeout(HANG_GUARD_S, method="thread")
@pytest.mark.parametrize(("make", "error"), MANIFESTS.values(), ids=MANIFESTS.keys())
def test_a_manifest_past_its_budget_is_an_invalid_row_and_a_long_one_is_read(
    tmp_path: Path, make: Callable[[], str], error: str | None
) -> None:
    tree = _copy(NEWER, tmp_path)
    before = _untouched(NEWER)
    manifest = tree / "families/vlm/tests/manifests/vlm-3b.json"
    manifest.write_text(make())
    _, inventory = _audit(tree, tmp_path / "out")
    assert _rows(inventory, {"vlm"}, set()) == _rows(before, {"vlm"}, set())
    (row,) = [entry for entry in inventory.entries if entry.manifest.endswith("/vlm-3b.json")]
    if error is not None:
        assert row.verdict == "invalid" and row.error is not None and error in row.error, row.error
    else:
        assert row.verdict == "image-only" and len(row.testcases) == 20_000 and row.error is None


@pytest.mark.timeout(HANG_GUARD_S, method="thread")
def test_folders_nested_past_the_depth_budget_are_named(tmp_path: Path) -> None:
    tree = _copy(NEWER, tmp_path)
    before = _untouched(NEWER)
    runtime = tree / "families/vidqa/runtime"
    deep = runtime
    for _ in range(1100):  # os.walk and rglob recursed once per folder: RecursionError (so does mkdir -p)
        deep = deep / "d"
        deep.mkdir()
    (deep / "x.cpp").write_text("class A : public IVideoTextToText {};\n")
    try:
        _, inventory = _audit(tree, tmp_path / "out")
    finally:
        _remove_chain(runtime / "d")  # shutil.rmtree (and pytest's clean-up) recurse once per folder too
    skipped = {item.path: item.reason for item in inventory.skipped}
    named = "families/vidqa/runtime/" + "/".join(["d"] * 32)
    assert "nested more than 32 levels" in skipped[named], skipped
    assert _rows(inventory, set(), set()) == _rows(before, set(), set())


def _remove_chain(top: Path) -> None:
    """A chain of single folders, removed from the bottom up without recursion."""
    chain = [top]
    while (chain[-1] / "d").is_dir():
        chain.append(chain[-1] / "d")
    for folder in reversed(chain):
        for entry in folder.iterdir():
            if not entry.is_dir():
                entry.unlink()
        os.rmdir(folder)


@pytest.mark.timeout(HANG_GUARD_S, method="thread")
def test_an_older_layout_model_toml_nested_too_deep_is_named(tmp_path: Path) -> None:
    tree = _copy(OLDER, tmp_path)
    before = _untouched(OLDER)
    rel = "tests/e2e/models/oldvideo/MODEL.toml"
    (tree / rel).write_text("a = " + "[" * 5000 + "\n")  # tomllib recursed once per array: RecursionError
    _, inventory = _audit(tree, tmp_path / "out")
    assert "RecursionError" in {item.path: item.reason for item in inventory.skipped}[rel]
    assert any(item.startswith(rel) and "RecursionError" in item for item in inventory.lacking)
    assert _rows(inventory, {"oldvideo"}, set()) == _rows(before, {"oldvideo"}, set())
    assert [e.profile for e in inventory.entries] == [e.profile for e in before.entries]
