"""Where the test run's scratch folders go (scratch_root.py): this user's private folder in /dev/shm, or nowhere new."""

from __future__ import annotations

import os
from pathlib import Path

from scratch_root import memory_root


def test_a_private_folder_of_this_users_is_made_once_and_chosen(tmp_path: Path) -> None:
    root = memory_root(tmp_path)
    assert root == tmp_path / f"videoqa-tests-{os.getuid()}"
    assert root.is_dir() and root.stat().st_mode & 0o777 == 0o700
    assert memory_root(tmp_path) == root  # the next run finds it


def test_a_folder_others_may_write_in_or_a_link_in_its_place_is_not_used(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / f"videoqa-tests-{os.getuid()}").mkdir(parents=True, mode=0o777)
    (shared / f"videoqa-tests-{os.getuid()}").chmod(0o777)
    assert memory_root(shared) is None
    linked = tmp_path / "linked"
    linked.mkdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (linked / f"videoqa-tests-{os.getuid()}").symlink_to(tmp_path / "elsewhere")
    assert memory_root(linked) is None


def test_no_memory_file_system_leaves_the_scratch_where_it_is(tmp_path: Path) -> None:
    assert memory_root(tmp_path / "no-such-shm") is None
    assert not (tmp_path / "no-such-shm").exists()
