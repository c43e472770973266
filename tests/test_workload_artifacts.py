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
