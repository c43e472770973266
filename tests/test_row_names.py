"""A profile that two families' manifests both name (TRTMC allows it: profiles are unique within a family) gets a
row of its own for each, in a folder of its own: `PROFILE.FAMILY`. They shared one folder, each row overwriting
the last."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import QUICK, row, run_main
from shared_runs import FAMILIES

from trtmc_videoqa.inventory import run_inventory
from trtmc_videoqa.plan.trtmc_checks import row_names

VIDQB = "vidqa-2b.families-vidqb-tests-manifests-vidqa-2b"


@pytest.fixture(scope="module")
def twin_families(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture tree with the `vidqa` family copied as `vidqb`: every vidqa profile named by two manifests."""
    tree = tmp_path_factory.mktemp("twins") / "trtmc"
    shutil.copytree(FAMILIES, tree)
    shutil.copytree(tree / "families" / "vidqa", tree / "families" / "vidqb")
    return tree


def test_a_profile_two_families_name_gets_a_row_name_for_each(twin_families: Path) -> None:
    entries = run_inventory(twin_families).entries
    names = row_names(entries)
    twins = sorted(names[e.manifest] for e in entries if e.profile == "vidqa-2b")
    assert twins == [
        "vidqa-2b.families-vidqa-tests-manifests-vidqa-2b",
        "vidqa-2b.families-vidqb-tests-manifests-vidqa-2b",
    ]  # the copy's manifests name family vidqa too: their paths tell them apart
    assert names[next(e.manifest for e in entries if e.profile == "textlm-1b")] == "textlm-1b"  # unique: as it was
    # Where the families differ, the family tells the twins apart.
    told = [e.model_copy(update={"family": "vidqb"}) if "/vidqb/" in e.manifest else e for e in entries]
    twins = sorted(name for manifest, name in row_names(told).items() if manifest.endswith("/vidqa-2b.json"))
    assert twins == ["vidqa-2b.vidqa", "vidqa-2b.vidqb"]


def test_each_twin_row_has_its_own_folder(
    twin_families: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No TRTMC toolchain on PATH: each capable row stops blocked at plan, each in its own folder, and --profile
    takes the profile (both rows) or one row's name."""
    out = tmp_path / "out"
    done = run_main(
        capsys, "qualify", "--trtmc", str(twin_families), "--profile", "vidqa-2b", "--out", str(out), *QUICK
    )
    assert done.returncode == 4, done.stdout + done.stderr  # blocked at plan: nothing failed, nothing qualified
    for name, family in (
        ("vidqa-2b.families-vidqa-tests-manifests-vidqa-2b", "vidqa"),
        ("vidqa-2b.families-vidqb-tests-manifests-vidqa-2b", "vidqa"),
    ):
        written = row(out, name)
        assert written.profile == name and written.family == family, written
    assert not (out / "checkpoints" / "vidqa-2b").exists()
    one = tmp_path / "one"
    done = run_main(capsys, "qualify", "--trtmc", str(twin_families), "--profile", VIDQB, "--out", str(one), *QUICK)
    assert done.returncode == 4, done.stdout + done.stderr  # blocked at plan: nothing failed, nothing qualified
    assert sorted(p.name for p in (one / "checkpoints").iterdir()) == [VIDQB]
    plan = run_main(capsys, "qualify", "--trtmc", str(twin_families), "--profile", "vidqa-2b", "--dry-run")
    assert f"{VIDQB}:" in plan.stdout and "vidqa-2b.families-vidqa-tests-manifests-vidqa-2b:" in plan.stdout
