"""Malformed and missing manifests: each becomes an `invalid` row (or a recorded skip) with its own message, and the
audit goes on with every other row. (tests/test_inventory.py covers malformed JSON and missing fields.)"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from helpers import run_main

from trtmc_videoqa.inventory import run_inventory, skipped_manifests
from trtmc_videoqa.inventory.manifest import MAX_MANIFEST_BYTES
from trtmc_videoqa.inventory.markdown import render_inventory_markdown

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = json.loads(
    (FIXTURES / "trtmc_families" / "families" / "vlm" / "tests" / "manifests" / "vlm-3b.json").read_text()
)

BROKEN = {  # file stem -> (bytes, the message its row must carry)
    "not-utf8": (b'\xff\xfe{"name": "x"}', "not UTF-8 text"),
    "an-array": (b"[1, 2, 3]", "must be a JSON object, not list"),
    "empty": (b"", "malformed JSON at line 1 column 1"),
    "no-testcases": (
        json.dumps({**GOOD, "name": "no-testcases", "testcases": []}).encode(),
        "testcases must be a non-empty list of objects",
    ),
    "numeric-name": (json.dumps({**GOOD, "name": 5}).encode(), "name must be a non-empty string"),
    "huge": (
        json.dumps({**GOOD, "name": "huge", "padding": "x" * (MAX_MANIFEST_BYTES + 1)}).encode(),
        f"over the {MAX_MANIFEST_BYTES} byte limit",
    ),
}


def test_every_broken_manifest_is_an_invalid_row_and_the_audit_goes_on(tmp_path: Path) -> None:
    tree = tmp_path / "trtmc"
    shutil.copytree(FIXTURES / "trtmc_families", tree)
    before = run_inventory(tree)
    manifests = tree / "families" / "vlm" / "tests" / "manifests"
    for stem, (data, _) in BROKEN.items():
        (manifests / f"{stem}.json").write_bytes(data)
    (manifests / "gone.json").symlink_to(manifests / "deleted-long-ago.json")  # a manifest that is missing

    inventory = run_inventory(tree)
    rows = {entry.manifest.rsplit("/", 1)[-1][: -len(".json")]: entry for entry in inventory.entries}
    for stem, (_, message) in BROKEN.items():
        entry = rows[stem]
        assert entry.verdict == "invalid" and entry.catalog_status == "invalid" and not entry.in_group, stem
        assert message in entry.error, (stem, entry.error)
    # nothing else changed: every other row is still there, judged as before
    assert len(inventory.entries) == len(before.entries) + len(BROKEN)
    assert {e.profile: e.verdict for e in before.entries}.items() <= {
        e.profile: e.verdict for e in inventory.entries
    }.items()
    assert inventory.summary.capable == before.summary.capable
    # the missing one is not silently dropped
    skipped = {item.path: item.reason for item in inventory.skipped}
    assert "broken symlink" in skipped["families/vlm/tests/manifests/gone.json"]

    done = run_main(None, "inventory", "--trtmc", str(tree), "--out", str(tmp_path / "inventory"))
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "invalid" in done.stdout and (tmp_path / "inventory" / "inventory.json").is_file()


def test_a_manifest_path_that_is_not_a_regular_file_is_recorded_never_dropped(tmp_path: Path) -> None:
    tree = tmp_path / "trtmc"
    shutil.copytree(FIXTURES / "trtmc_families", tree)
    before = run_inventory(tree)
    manifests = tree / "families" / "vlm" / "tests" / "manifests"
    (manifests / "a-directory.json").mkdir()
    (manifests / "dir-link.json").symlink_to(manifests / "a-directory.json")
    os.mkfifo(manifests / "a-fifo.json")  # reading it would block: it must never be opened
    (manifests / "loop-a.json").symlink_to(manifests / "loop-b.json")
    (manifests / "loop-b.json").symlink_to(manifests / "loop-a.json")
    os.mkfifo(tree / "families" / "vlm" / "runtime" / "pipe.cpp")  # family code, not a manifest

    inventory = run_inventory(tree)
    assert [e.manifest for e in inventory.entries] == [e.manifest for e in before.entries]
    skipped = {item.path: item.reason for item in inventory.skipped}
    prefix = "families/vlm/tests/manifests/"
    assert "not a regular file (a directory)" in skipped[prefix + "a-directory.json"]
    assert "not a regular file (symlink to a directory)" in skipped[prefix + "dir-link.json"]
    assert "named pipe (FIFO)" in skipped[prefix + "a-fifo.json"]
    assert "cannot be resolved" in skipped[prefix + "loop-a.json"] and prefix + "loop-b.json" in skipped
    assert "named pipe (FIFO)" in skipped["families/vlm/runtime/pipe.cpp"]
    assert [item.path for item in skipped_manifests(inventory)] == [
        prefix + name for name in ("a-directory.json", "a-fifo.json", "dir-link.json", "loop-a.json", "loop-b.json")
    ]
    assert "- Skipped: 5 manifest(s) without a row, 1 other path(s)" in render_inventory_markdown(inventory)

    done = run_main(None, "inventory", "--trtmc", str(tree), "--out", str(tmp_path / "inventory"))
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "skipped 5 manifest(s), so no row" in done.stdout
    assert "skipped 1 other path(s)" in done.stdout
