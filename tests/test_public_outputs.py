"""Issue 26, item 9: every public output is public-safe, and the public check finds any path of this machine.

The attacks: `inventory` wrote the absolute checkout path into inventory.json and inventory.md; `refresh` wrote the
absolute checkout paths into inventory.pinned.json and inventory.main.json (its own output failed `report
--check-public`, and refresh.yml uploads that folder every week); and `report --check-public` found a local absolute
path only when it was one of the run's own, so an inventory of a checkout in another folder passed. Now the check
flags any absolute path that exists on this machine (system locations aside), naming file and line, so such an
inventory fails it; and `inventory` and `refresh` name checkouts by a relative path or a placeholder, so theirs pass.
No AIPerf: real git for refresh, against a repository made from the fixture tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from helpers import git, no_traceback, run_main

from trtmc_videoqa.inventory import run_inventory
from trtmc_videoqa.inventory.refresh import shown_repository
from trtmc_videoqa.publish.check import PublicSentinels, check_public, scan_public
from trtmc_videoqa.publish.evidence import forget_machine_paths, machine_prefix
from trtmc_videoqa.results import Inventory

FIXTURE = Path(__file__).parent / "fixtures" / "trtmc_families"
REPO = Path(__file__).resolve().parents[1]
NOTHING = PublicSentinels(paths=[], words=[], secrets=[])


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _elsewhere(tmp_path: Path) -> Path:
    """The fixture checkout, copied to a folder of its own outside any output folder."""
    checkout = tmp_path / "elsewhere" / "TensorRT-Model-Connect"
    shutil.copytree(FIXTURE, checkout)
    return checkout


# --- the check: any path of this machine -------------------------------------------------------------------------


def test_any_existing_path_of_this_machine_fails_the_check_naming_file_and_line(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "folder"
    elsewhere.mkdir(parents=True)
    out = tmp_path / "out"
    _write(out, "notes.md", f"line one\nread from {elsewhere}/data.json today\n")  # data.json need not exist
    _write(out, "a.json", json.dumps({"where": str(tmp_path / "elsewhere")}) + "\n")
    hits = scan_public(out, NOTHING)  # no sentinel at all: the path is found because it exists
    assert [(hit.file, hit.line, hit.kind) for hit in hits] == [("a.json", 1, "path"), ("notes.md", 2, "path")]
    assert str(elsewhere) in hits[1].excerpt


@pytest.mark.parametrize(
    "text",
    [
        "/usr/bin/ffmpeg and /usr/local/cuda",
        "/etc/passwd, /dev/null, /proc/self/status, /sys/class",
        "/bin/sh -c x; /lib/x86_64-linux-gnu",
        "POST /v1/chat/completions and /health/ready",
        "http://127.0.0.1:8000/tmp/x and https://example.com/home/x",
        "video/mp4 and/or 3/4",
        "/tmp and /home alone",
        "/var/tmp alone",
        "/no-such-folder-q7/at/all",
        "relative/path/to/x and ./x/y",
    ],
)
def test_system_locations_urls_and_paths_that_do_not_exist_here_pass(tmp_path: Path, text: str) -> None:
    _write(tmp_path, "a.txt", text + "\n")
    assert scan_public(tmp_path, NOTHING) == []


def test_a_path_below_a_shared_folder_counts_only_where_it_exists(tmp_path: Path) -> None:
    assert machine_prefix("/var/tmp") is None and machine_prefix("/var/tmp/no-such-q7/x") is None
    assert machine_prefix(f"{tmp_path}/x/y") is not None  # the test's own folder exists
    made = tmp_path / "later"
    assert machine_prefix(f"{made}/z") is not None  # its parent exists: a path of this machine either way


def test_a_folder_of_someones_in_memory_scratch_counts_as_one_in_tmp_does() -> None:
    """/dev and /run are system locations, but what is below /dev/shm and /run/user is someone's (the tests' own
    scratch folders are in /dev/shm where it has room: tests/scratch_root.py)."""
    forget_machine_paths()
    assert machine_prefix("/dev/shm") is None and machine_prefix("/dev/null") is None
    assert machine_prefix("/run/user/no-such-q7/x") is None and machine_prefix("/run/lock/x") is None
    with tempfile.TemporaryDirectory(dir="/dev/shm") as mine:
        assert machine_prefix(f"{mine}/report.json") == mine
        hits = scan_public(Path(mine), NOTHING)
        assert hits == []  # the folder scanned holds no file yet
        (Path(mine) / "a.md").write_text(f"read from {mine}/clip.mp4\n")
        assert [(hit.file, hit.line, hit.kind) for hit in scan_public(Path(mine), NOTHING)] == [("a.md", 1, "path")]


def test_the_cache_of_what_exists_can_be_forgotten(tmp_path: Path) -> None:
    forget_machine_paths()
    assert machine_prefix(str(tmp_path)) is not None


# --- inventory -----------------------------------------------------------------------------------------------------


def test_an_inventory_naming_a_checkout_elsewhere_by_absolute_path_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `inventory` wrote before the fix, planted: the check (not only the run's own paths) refuses it."""
    checkout = _elsewhere(tmp_path)
    inventory = run_inventory(checkout).model_copy(update={"checkout": str(checkout)})
    out = tmp_path / "out"
    _write(out, "inventory.json", inventory.model_dump_json(indent=2))
    done = run_main(capsys, "report", "--check-public", str(out))
    assert done.returncode == 3, done.stdout + done.stderr  # a hit is the check's verdict, not bad input (2)
    no_traceback(done)
    assert "inventory.json:4" in done.stderr


def test_inventory_of_a_checkout_elsewhere_writes_a_placeholder_and_passes_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout = _elsewhere(tmp_path)
    out = tmp_path / "inventory"
    done = run_main(capsys, "inventory", "--trtmc", str(checkout), "--out", str(out))
    assert done.returncode == 0, done.stderr
    inventory = Inventory.model_validate_json((out / "inventory.json").read_text())
    assert inventory.checkout == "$TRTMC_CHECKOUT"
    assert "`$TRTMC_CHECKOUT`" in (out / "inventory.md").read_text()
    for name in ("inventory.json", "inventory.md"):
        assert str(tmp_path) not in (out / name).read_text(), name
    checked = run_main(capsys, "report", "--check-public", str(out))
    assert checked.returncode == 0, checked.stderr
    # --against names the earlier file by its name only.
    earlier = ("--against", str(out / "inventory.json"))
    again = run_main(capsys, "inventory", "--trtmc", str(checkout), "--out", str(tmp_path / "again"), *earlier)
    assert again.returncode == 0, again.stderr
    against = Inventory.model_validate_json((tmp_path / "again" / "inventory.json").read_text()).reconciliation
    assert against is not None and against.against == "inventory.json"
    assert run_main(capsys, "report", "--check-public", str(tmp_path / "again")).returncode == 0


def test_a_checkout_given_by_a_relative_path_is_named_by_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _elsewhere(tmp_path)
    done = run_main(capsys, "inventory", "--trtmc", "elsewhere/TensorRT-Model-Connect", "--out", "inv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    inventory = Inventory.model_validate_json((tmp_path / "inv" / "inventory.json").read_text())
    assert inventory.checkout == "elsewhere/TensorRT-Model-Connect"
    # A relative path that climbs out of the working directory says where it is: the placeholder instead.
    climbing = Path(os.path.relpath(tmp_path / "elsewhere" / "TensorRT-Model-Connect", Path.cwd()))
    assert ".." in climbing.parts and run_inventory(climbing).checkout == "$TRTMC_CHECKOUT"


# --- refresh -------------------------------------------------------------------------------------------------------


def test_refresh_writes_no_path_of_this_machine_and_passes_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "upstream" / "TensorRT-Model-Connect"
    shutil.copytree(FIXTURE, source)
    subprocess.run(["git", "init", "-q", "-b", "main", str(source)], check=True, timeout=60)
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "one")
    pinned = tmp_path / "pinned"
    subprocess.run(["git", "clone", "-q", str(source), str(pinned)], check=True, timeout=60)
    out = tmp_path / "refresh"
    args = ("--trtmc", str(pinned), "--main", str(source), "--ref", "main", "--cache", str(tmp_path / "cache"))
    done = run_main(capsys, "refresh", *args, "--out", str(out))
    assert done.returncode == 0, done.stderr
    files = sorted(path.name for path in out.iterdir())
    assert files == ["inventory.main.json", "inventory.pinned.json", "reconciliation.json", "reconciliation.md"]
    for path in out.iterdir():
        assert str(tmp_path) not in path.read_text(), path.name
    pinned_inventory = Inventory.model_validate_json((out / "inventory.pinned.json").read_text())
    main_inventory = Inventory.model_validate_json((out / "inventory.main.json").read_text())
    assert pinned_inventory.checkout == "$TRTMC_CHECKOUT"
    assert main_inventory.checkout == f"$GIT_CACHE/trees/{main_inventory.commit}"
    checked = run_main(capsys, "report", "--check-public", str(out))
    assert checked.returncode == 0, checked.stderr
    assert check_public(out, NOTHING) == 4


def test_a_repository_is_named_without_a_local_path_or_credentials(tmp_path: Path) -> None:
    assert shown_repository(str(tmp_path)) == "$TRTMC_REPOSITORY"
    assert shown_repository("https://github.com/NVIDIA/x.git") == "https://github.com/NVIDIA/x.git"
    assert shown_repository("https://user:tok@github.com:443/NVIDIA/x.git") == "https://github.com:443/NVIDIA/x.git"


def test_refresh_yml_checks_the_folder_before_the_summary_and_the_upload() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "refresh.yml").read_text())
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    check = next(i for i, step in enumerate(steps) if "--check-public refresh" in step.get("run", ""))
    summary = next(i for i, step in enumerate(steps) if "GITHUB_STEP_SUMMARY" in step.get("run", ""))
    upload = next(i for i, step in enumerate(steps) if step.get("uses", "").startswith("actions/upload-artifact@"))
    audit = next(i for i, step in enumerate(steps) if "trtmc-videoqa refresh" in step.get("run", ""))
    assert audit < check < summary < upload
    assert steps[check]["if"] == "${{ always() }}"  # after exit 3 too: a new capable checkpoint is still uploaded
    assert "rm -rf refresh" in steps[check]["run"]  # a folder that fails is never summarised or uploaded


@pytest.mark.parametrize("given", ["relative", "absolute"])
def test_a_checkout_given_through_a_link_is_named_as_given_or_by_placeholder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    """Neither the link's absolute path nor its target's reaches inventory.json or inventory.md."""
    target = tmp_path / "real" / "TensorRT-Model-Connect"
    shutil.copytree(Path(__file__).parent / "fixtures" / "trtmc_families", target)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "link").symlink_to(target)
    argument = "link" if given == "relative" else str(tmp_path / "work" / "link")
    done = run_main(capsys, "inventory", "--trtmc", argument, "--out", "inv", cwd=tmp_path / "work")
    assert done.returncode == 0, done.stderr
    for name in ("inventory.json", "inventory.md"):
        text = (tmp_path / "work" / "inv" / name).read_text()
        assert str(tmp_path) not in text and str(target.resolve()) not in text, name
    shown = json.loads((tmp_path / "work" / "inv" / "inventory.json").read_text())["checkout"]
    assert shown == ("link" if given == "relative" else "$TRTMC_CHECKOUT")
