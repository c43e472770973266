"""A workload's prepared artifacts (clip manifests, sampling, strips) survive the publish step: a re-run on the same
--out finds them made, though publishing moved the clip paths they record to the published copy."""

from __future__ import annotations

import json
from pathlib import Path

from trtmc_videoqa.results.layout import PREPARED_STAMP
from trtmc_videoqa.workloads import artifacts, builtin_workload
from trtmc_videoqa.workloads.artifacts import prepare_workload_artifacts, restamp_prepared


def _published(directory: Path) -> None:
    """What publishing does to a manifest: its clip path rewritten to the published copy."""
    for manifest in directory.glob("*.json"):
        if manifest.name != PREPARED_STAMP and "path" in (data := json.loads(manifest.read_text())):
            data["path"] = f"workload/synthetic/files/{Path(data['path']).name}"
            manifest.write_text(json.dumps(data, indent=2) + "\n")


def test_a_published_workload_folder_is_reused_and_an_edited_one_made_again(tmp_path: Path, monkeypatch) -> None:
    workload = builtin_workload("synthetic")
    first = prepare_workload_artifacts(tmp_path, workload)
    _published(first.directory)
    restamp_prepared(first.directory)
    stamp = json.loads((first.directory / PREPARED_STAMP).read_text())
    assert "clips" not in stamp["identity"]  # no path of this machine: the workload's digest names its clips

    def no_probe(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a reused folder is not probed again")

    monkeypatch.setattr(artifacts, "_prepare_clip", no_probe)
    again = prepare_workload_artifacts(tmp_path, workload)
    assert again.clips["forward"].path == "workload/synthetic/files/" + Path(first.clips["forward"].path).name

    _published(first.directory)  # edited after the stamp (as publishing did before restamping): made again
    (first.directory / "forward.json").write_text((first.directory / "forward.json").read_text() + " ")
    monkeypatch.undo()
    remade = prepare_workload_artifacts(tmp_path, workload)
    assert remade.clips["forward"].path == first.clips["forward"].path  # probed again, from the clip itself


# --- a stamp an earlier run (or anyone) left in --out is not trusted ----------------------------------------------

_HASH_IN_A_CHILD = """
import sys, time
from pathlib import Path
from trtmc_videoqa.workloads import builtin_workload
from trtmc_videoqa.workloads.artifacts import prepare_workload_artifacts, restamp_prepared
out = Path(sys.argv[1])
restamp_prepared(out / "workload" / "synthetic")
prepare_workload_artifacts(out, builtin_workload("synthetic"))
print("done")
"""


def _planted(tmp_path: Path, files: dict[str, str]) -> Path:
    """A real prepared folder whose stamp keeps its real identity (easy to copy) and lists `files`."""
    directory = prepare_workload_artifacts(tmp_path, builtin_workload("synthetic")).directory
    stamp = json.loads((directory / PREPARED_STAMP).read_text())
    (directory / PREPARED_STAMP).write_text(json.dumps({"identity": stamp["identity"], "files": files}))
    return directory


def test_a_stamp_listing_a_device_is_neither_hashed_nor_trusted(tmp_path: Path) -> None:
    import subprocess
    import sys

    directory = _planted(tmp_path, {"/dev/zero": "0"})
    done = subprocess.run(  # a process: the old reader hashed /dev/zero without end
        [sys.executable, "-c", _HASH_IN_A_CHILD, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
    assert "/dev/zero" not in json.loads((directory / PREPARED_STAMP).read_text())["files"]  # made again


def test_a_stamp_naming_a_file_outside_its_folder_makes_the_artifacts_again(tmp_path: Path, monkeypatch) -> None:
    from trtmc_videoqa.common.digests import file_sha256

    outside = tmp_path / "outside.txt"
    outside.write_text("not the tool's\n")
    directory = prepare_workload_artifacts(tmp_path / "out", builtin_workload("synthetic")).directory
    stamp = json.loads((directory / PREPARED_STAMP).read_text())
    stamp["files"]["../../../outside.txt"] = file_sha256(outside)  # every digest right, one name leads out
    (directory / PREPARED_STAMP).write_text(json.dumps(stamp))
    made: list[str] = []
    original = artifacts._prepare_clip
    monkeypatch.setattr(artifacts, "_prepare_clip", lambda *a: made.append(a[2].id) or original(*a))
    prepare_workload_artifacts(tmp_path / "out", builtin_workload("synthetic"))
    assert made  # the stamp was not believed (before: read outside the folder, and the folder taken as made)
    assert set(json.loads((directory / PREPARED_STAMP).read_text())["files"]) == artifacts._prepared_names(
        builtin_workload("synthetic")
    )


def test_a_stamp_nested_deep_or_too_large_is_made_again_not_a_crash(tmp_path: Path) -> None:
    directory = prepare_workload_artifacts(tmp_path, builtin_workload("synthetic")).directory
    for planted in ("[" * 100_000 + "]" * 100_000, json.dumps({"identity": {}, "files": {}, "pad": "x" * 70_000})):
        (directory / PREPARED_STAMP).write_text(planted)
        restamp_prepared(directory)  # left as it is
        assert (directory / PREPARED_STAMP).read_text() == planted
        prepare_workload_artifacts(tmp_path, builtin_workload("synthetic"))  # before: RecursionError
        assert json.loads((directory / PREPARED_STAMP).read_text())["files"]
