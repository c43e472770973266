"""Issue 27's watch through the real `trtmc-videoqa refresh` and real git (no network): a video-to-text Task new in
TRTMC's API headers, and a family newly declaring and binding one, are what refresh reports first, on stdout and
on the first line of reconciliation.md; only a newly capable checkpoint turns `--fail-on-new-capable` red.

Each repository is built once per module: a "pinned" commit, a clone of it as the pinned checkout (--trtmc), and a
next commit on main. The trees come from tests/test_task_declarations.py, which tests the same news at function
level."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
from helpers import git, no_traceback, run_main
from test_task_declarations import FIXTURE, capable_tree

from trtmc_videoqa.inventory.refresh import EXIT_NEW_CAPABLE
from trtmc_videoqa.results import GroupReconciliation

LANGUAGE_H = "core/api/include/trtmc/language.h"
NO_VIDQA_DECLARATION = 'SUPPORT = family_support(model_types=("vidqa",), tasks=("vision_language_generation",))\n'


class Repo(NamedTuple):
    source: Path  # the repository, branch main at the next commit
    checkout: Path  # a clone at the pinned commit, given with --trtmc
    pinned: str
    main: str


def _replace_worktree(repo: Path, tree: Path) -> None:
    """The repository's files become exactly `tree`'s (its .git kept)."""
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    shutil.copytree(tree, repo, dirs_exist_ok=True)


def _two_commits(where: Path, pinned_tree: Path, main_tree: Path) -> Repo:
    source = where / "TensorRT-Model-Connect"
    source.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True, timeout=60)
    _replace_worktree(source, pinned_tree)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "pinned")
    checkout = where / "pinned"
    subprocess.run(["git", "clone", "-q", str(source), str(checkout)], check=True, timeout=60)
    _replace_worktree(source, main_tree)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "main")
    return Repo(source, checkout, git(checkout, "rev-parse", "HEAD"), git(source, "rev-parse", "HEAD"))


@pytest.fixture(scope="module")
def headers_added(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """Pinned: the fixture tree without core/ (no Task API headers). Main: the same tree with core/ back, nothing
    else changed."""
    where = tmp_path_factory.mktemp("headers-added")
    without = where / "without-core"
    shutil.copytree(FIXTURE, without)
    shutil.rmtree(without / "core")
    return _two_commits(where, without, FIXTURE)


@pytest.fixture(scope="module")
def family_declares(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """Pinned: the capable tree with vidqa's support.py declaring only vision_language_generation and no runtime
    bindings file. Main: the capable tree (support.py declares video_text_to_text, bindings.cpp binds
    IVideoTextToText); the Task API headers on both."""
    where = tmp_path_factory.mktemp("family-declares")
    pinned = capable_tree(where / "pinned-tree", NO_VIDQA_DECLARATION)
    (pinned / "families/vidqa/runtime/bindings.cpp").unlink()
    return _two_commits(where, pinned, capable_tree(where / "main-tree"))


def _refresh(
    capsys: pytest.CaptureFixture[str], repo: Repo, tmp_path: Path, *flags: str
) -> tuple[subprocess.CompletedProcess[str], GroupReconciliation]:
    """refresh of main against the pinned checkout: the run and its reconciliation.json, whose line is checked to be
    the first line of stdout and of reconciliation.md."""
    out = tmp_path / "refresh"
    done = run_main(
        capsys, "refresh", "--trtmc", str(repo.checkout), "--main", str(repo.source), "--ref", "main", *flags,
        "--out", str(out), "--cache", str(tmp_path / "cache"),
    )  # fmt: skip
    no_traceback(done)  # stdout and stderr
    reconciliation = GroupReconciliation.model_validate_json((out / "reconciliation.json").read_text())
    assert (reconciliation.pinned_commit, reconciliation.main_commit) == (repo.pinned, repo.main)
    md_first = (out / "reconciliation.md").read_text().splitlines()[0]
    assert done.stdout.splitlines()[0] == reconciliation.line  # the line is the first thing refresh prints
    assert md_first == f"**{reconciliation.line}**"
    return done, reconciliation


def _line_of(header: Path, text: str) -> int:
    return next(n for n, line in enumerate(header.read_text().splitlines(), start=1) if text in line)


def test_new_video_task_in_the_headers_is_reported_first_and_is_no_failure(
    capsys: pytest.CaptureFixture[str], headers_added: Repo, tmp_path: Path
) -> None:
    done, r = _refresh(capsys, headers_added, tmp_path, "--fail-on-new-capable")
    line = r.line
    assert done.returncode == 0, done.stderr  # a Task in the API alone makes no checkpoint capable
    declared_at = _line_of(FIXTURE / LANGUAGE_H, '#define TRTMC_TASK_VIDEO_TEXT_TO_TEXT "video_text_to_text"')
    first = line.split("; ")[0]
    assert first.startswith("NEW VIDEO TASK in the API: ")
    assert f" video_text_to_text ({LANGUAGE_H}:{declared_at})" in first
    assert "video_text_to_text" in r.new_video_tasks and r.new_video_families == []
    assert r.new_capable == [] and r.changes == []
    assert line.split("; ")[1] == f"No in-group change between {headers_added.pinned} and main {headers_added.main}"


def test_family_newly_declaring_and_binding_names_the_new_capable_checkpoint(
    capsys: pytest.CaptureFixture[str], family_declares: Repo, tmp_path: Path
) -> None:
    done, r = _refresh(capsys, family_declares, tmp_path / "failing", "--fail-on-new-capable")
    line = r.line
    assert done.returncode == EXIT_NEW_CAPABLE == 3, done.stderr
    assert line.startswith(
        "newly declared or bound by family vidqa: video_text_to_text; NEW CAPABLE: vidqa-2b-native; "
    )
    assert r.new_video_tasks == [] and r.new_video_families == ["vidqa: video_text_to_text"]
    assert r.new_capable == ["vidqa-2b-native"]
    changed = next(c for c in r.changes if c.profile == "vidqa-2b-native")
    assert (changed.kind, changed.new, changed.new_capable) == ("verdict", "temporal-video-qa", True)

    plain, again = _refresh(capsys, family_declares, tmp_path / "plain")
    assert plain.returncode == 0, plain.stderr  # without the flag a new capable checkpoint is news, not failure
    assert again.line == line and again.new_capable == r.new_capable
