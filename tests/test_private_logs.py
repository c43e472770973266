"""AIPerf's own log folder leaves its exports for the row's private/ folder: an earlier one is replaced, and a link
is moved or removed as the link itself, never followed."""

from __future__ import annotations

from pathlib import Path

from trtmc_videoqa.stages.aiperf import _keep_private


def test_the_log_folder_moves_to_private_and_replaces_an_earlier_one(tmp_path: Path) -> None:
    logs = tmp_path / "aiperf" / "export" / "logs"
    logs.mkdir(parents=True)
    (logs / "aiperf.log").write_text("this run\n")
    kept = tmp_path / "private" / "aiperf-logs"
    kept.mkdir(parents=True)
    (kept / "aiperf.log").write_text("an earlier run\n")
    (kept / "stale.log").write_text("gone\n")
    _keep_private(logs, kept)
    assert not logs.exists()
    assert sorted(p.name for p in kept.iterdir()) == ["aiperf.log"]
    assert (kept / "aiperf.log").read_text() == "this run\n"


def test_a_link_in_the_way_is_removed_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not ours\n")
    logs = tmp_path / "export" / "logs"
    logs.mkdir(parents=True)
    (logs / "aiperf.log").write_text("this run\n")
    kept = tmp_path / "private" / "aiperf-logs"
    kept.parent.mkdir()
    kept.symlink_to(elsewhere, target_is_directory=True)
    _keep_private(logs, kept)
    assert not kept.is_symlink() and (kept / "aiperf.log").read_text() == "this run\n"
    assert (elsewhere / "keep.txt").read_text() == "not ours\n"  # what the link pointed to is untouched


def test_no_log_folder_leaves_nothing_to_move(tmp_path: Path) -> None:
    _keep_private(tmp_path / "export" / "logs", tmp_path / "private" / "aiperf-logs")
    assert not (tmp_path / "private").exists()
