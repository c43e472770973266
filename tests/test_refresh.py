"""`trtmc-videoqa refresh` against a local git repository built from the fixture tree: a "pinned" commit and a later
"main" commit that adds a capable family, removes one image-only profile, changes the revision of an in-group row and
adds three text-only profiles. Real git, no network."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import git, no_traceback, run_main

from trtmc_videoqa.common.pins import load_pins
from trtmc_videoqa.results import GroupReconciliation, Inventory

FIXTURE = Path(__file__).parent / "fixtures" / "trtmc_families"
NEW_REVISION = "2" * 40


def _main_changes(repo: Path) -> None:
    families = repo / "families"
    shutil.copytree(families / "vidqa", families / "vidqb")  # a capable family, new on main
    manifests = families / "vidqb" / "tests" / "manifests"
    for extra in manifests.glob("*.json"):
        if extra.name != "vidqa-2b.json":
            extra.unlink()
    data = json.loads((manifests / "vidqa-2b.json").read_text())
    (manifests / "vidqa-2b.json").unlink()
    data |= {"name": "vidqb-7b", "family": "vidqb", "hf_id": "example/VidQB-7B", "bundle": "vidqb-7b.bundle"}
    for case in data.get("testcases", []):
        case["name"] = "vidqb-7b"
    (manifests / "vidqb-7b.json").write_text(json.dumps(data, indent=2))
    (families / "vlm" / "tests" / "manifests" / "vlm-3b.json").unlink()  # an image-only profile, gone
    vidqa = families / "vidqa" / "tests" / "manifests" / "vidqa-2b.json"
    pinned = json.loads(vidqa.read_text())
    vidqa.write_text(json.dumps(pinned | {"hf_revision": NEW_REVISION}, indent=2))  # an in-group revision change
    text = families / "textlm" / "tests" / "manifests"
    base = json.loads((text / "textlm-1b.json").read_text())
    for size in ("3b", "7b", "13b"):  # three text-only profiles, outside the group
        name = f"textlm-{size}"
        (text / f"{name}.json").write_text(json.dumps(base | {"name": name}, indent=2))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The repository (branch main at the later commit) and both commits' SHAs."""
    repo = tmp_path_factory.mktemp("trtmc-git") / "TensorRT-Model-Connect"
    shutil.copytree(FIXTURE, repo)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, timeout=60)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pinned")
    pinned = git(repo, "rev-parse", "HEAD")
    _main_changes(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main moves on")
    return repo, pinned, git(repo, "rev-parse", "HEAD")


def _pinned_checkout(repo: Path, pinned: str, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(repo), str(where)], check=True, timeout=60)
    git(where, "checkout", "-q", pinned)
    return where


def _refresh(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "refresh"
    done = run_main(capsys, "refresh", *args, "--out", str(out), "--cache", str(tmp_path / "cache"))
    return done, out


def test_refresh_lists_the_group_changes_first_and_counts_the_rest(
    capsys: pytest.CaptureFixture[str], repo, tmp_path: Path
) -> None:
    source, pinned, main = repo
    checkout = _pinned_checkout(source, pinned, tmp_path / "pinned")
    done, out = _refresh(capsys, tmp_path, "--trtmc", str(checkout), "--main", str(source), "--ref", "main")
    assert done.returncode == 0, done.stderr  # without --fail-on-new-capable a new capable row is news, not failure
    no_traceback(done)
    r = GroupReconciliation.model_validate_json((out / "reconciliation.json").read_text())
    assert (r.pinned_commit, r.main_commit, r.main_ref) == (pinned, main, "main")  # both as full SHAs
    assert r.pinned_commit_source == "git HEAD of the tree given with --trtmc"
    assert [(c.profile, c.kind) for c in r.changes] == [
        ("vidqa-2b", "revision"),
        ("vidqb-7b", "joined"),
        ("vlm-3b", "left"),
    ]
    revision = r.changes[0]
    assert revision.old == "1" * 40 and revision.new == NEW_REVISION and not revision.new_capable
    assert r.new_capable == ["vidqb-7b"] and r.changes[1].new == "temporal-video-qa"
    assert (r.outside.added, r.outside.removed, r.outside.changed) == (3, 0, 0)  # the text-only profiles, counted
    text = (out / "reconciliation.md").read_text()
    assert text.splitlines()[0] == f"**NEW CAPABLE: vidqb-7b; 3 in-group change(s) between {pinned} and main {main}**"
    assert text.index("## In the group") < text.index("## Outside the group")
    assert r.line in done.stdout
    pinned_inventory = Inventory.model_validate_json((out / "inventory.pinned.json").read_text())
    main_inventory = Inventory.model_validate_json((out / "inventory.main.json").read_text())
    assert (pinned_inventory.commit, main_inventory.commit) == (pinned, main)  # main's tree has no .git: named


def test_fail_on_new_capable_exits_3_and_0_when_main_equals_the_pin(
    capsys: pytest.CaptureFixture[str], repo, tmp_path: Path
) -> None:
    source, pinned, main = repo
    checkout = _pinned_checkout(source, pinned, tmp_path / "pinned")
    args = ("--trtmc", str(checkout), "--main", str(source), "--fail-on-new-capable")
    done, _ = _refresh(capsys, tmp_path / "a", *args)
    assert done.returncode == 3, done.stderr
    same, out = _refresh(capsys, tmp_path / "b", *args[:-1], "--ref", pinned, "--fail-on-new-capable")
    assert same.returncode == 0, same.stderr
    r = GroupReconciliation.model_validate_json((out / "reconciliation.json").read_text())
    assert r.changes == [] and r.line == f"No in-group change between {pinned} and main {pinned}"
    assert (out / "reconciliation.md").read_text().startswith(f"**No in-group change between {pinned}")


def test_a_pinned_tree_without_history_takes_its_commit_from_the_pin_file(
    capsys: pytest.CaptureFixture[str], repo, tmp_path: Path
) -> None:
    source, _, main = repo
    exported = tmp_path / "exported"
    shutil.copytree(FIXTURE, exported)  # no .git: the commit is the pin file's, and the row says so
    done, out = _refresh(capsys, tmp_path, "--trtmc", str(exported), "--main", str(source))
    assert done.returncode == 0, done.stderr
    r = GroupReconciliation.model_validate_json((out / "reconciliation.json").read_text())
    assert r.pinned_commit == load_pins().trtmc.commit and "pin file" in r.pinned_commit_source
    assert r.main_commit == main


def test_a_ref_that_does_not_exist_is_one_clear_message(
    capsys: pytest.CaptureFixture[str], repo, tmp_path: Path
) -> None:
    source, pinned, _ = repo
    checkout = _pinned_checkout(source, pinned, tmp_path / "pinned")
    done, out = _refresh(capsys, tmp_path, "--trtmc", str(checkout), "--main", str(source), "--ref", "no-such-branch")
    assert done.returncode == 2
    no_traceback(done)
    assert "git could not fetch 'no-such-branch'" in done.stderr and "--ref" in done.stderr
    assert not out.exists()


def test_inventory_names_the_commit_it_is_given_for_a_tree_without_git(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = "3" * 40
    done = run_main(capsys, "inventory", "--trtmc", str(FIXTURE), "--out", str(tmp_path / "inv"), "--commit", sha)
    assert done.returncode == 0, done.stderr
    assert Inventory.model_validate_json((tmp_path / "inv" / "inventory.json").read_text()).commit == sha
    bad = run_main(capsys, "inventory", "--trtmc", str(FIXTURE), "--out", str(tmp_path / "x"), "--commit", "abc")
    assert bad.returncode == 2 and "full 40-character commit" in bad.stderr


def test_a_main_or_ref_that_looks_like_an_option_is_refused_and_runs_nothing(
    capsys: pytest.CaptureFixture[str], repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, pinned, _ = repo
    checkout = _pinned_checkout(source, pinned, tmp_path / "pinned")
    monkeypatch.chdir(tmp_path)
    smuggled = "--upload-pack=touch SMUGGLED; git-upload-pack"
    for args in (("--main", smuggled, "--ref", str(source)), ("--main", str(source), "--ref", smuggled)):
        done, out = _refresh(capsys, tmp_path, "--trtmc", str(checkout), *args)
        assert done.returncode == 2, done.stderr
        no_traceback(done)
        option = args[0] if args[1] == smuggled else args[2]
        assert f"{option} '--upload-pack=touch SMUGGLED; git-upl...'" in done.stderr
        assert "begins with '-'" in done.stderr
        assert not out.exists()
    assert not (tmp_path / "SMUGGLED").exists()


def test_git_reads_a_repository_and_ref_after_the_end_of_its_options(repo, tmp_path: Path) -> None:
    """The second defence, below the request's check: git itself is told where its options end."""
    from trtmc_videoqa.inventory.refresh import GitProblem, fetch_commit

    source, _, main = repo
    smuggled = f"--upload-pack=touch {tmp_path / 'SMUGGLED'}; git-upload-pack"
    with pytest.raises(GitProblem):
        fetch_commit(tmp_path / "cache", smuggled, str(source))
    with pytest.raises(GitProblem):
        fetch_commit(tmp_path / "cache", str(source), smuggled)
    assert not (tmp_path / "SMUGGLED").exists()
    assert fetch_commit(tmp_path / "cache", str(source), "main") == main  # the same call with plain values works
