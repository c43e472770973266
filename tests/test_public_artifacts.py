"""The README's main job leaves public artifacts that name nothing of the machine.

One self-test runs with values no artifact may carry: a host name set in its own UTS namespace (`unshare -u`, as
root: CI runs as root), an output folder and a $HOME whose paths hold a space and a sentinel, and a secret in the
environment. It is the self-test that test_qualify.py checks too, made once per test run (shared_runs.self_test).
Then: the public check passes, a plain search of every public file finds none of those values, a value
planted afterwards fails the check naming file:line. The recorded commands, run from a copy of the artifacts in
another folder, are test_reproduce_commands.py's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import cli, no_traceback
from shared_runs import HOST, SharedRun, in_namespace
from shared_runs import HUB_TOKEN as TOKEN

from trtmc_videoqa.publish.check import PRIVATE_DIR, public_files

pytestmark = pytest.mark.e2e

PROFILE = "reference-self-test.synthetic"


@dataclass(frozen=True)
class Run:
    out: Path
    home: Path
    done: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def run(self_test_run: SharedRun) -> Run:
    problem = self_test_run.facts["namespace_problem"]
    if problem:  # the run was made without a host name of its own: what it shows about the host proves nothing
        if os.environ.get("CI"):
            pytest.fail(f"{problem}: CI runs as root, where the host-name sentinel must be set")
        pytest.skip(problem)
    return Run(self_test_run.out, self_test_run.folder / self_test_run.facts["home"], self_test_run.done())


def _public_text(out: Path) -> dict[str, str]:
    return {
        path.relative_to(out).as_posix(): path.read_bytes().decode("utf-8", errors="replace")
        for path in public_files(out)
        if path.suffix not in {".mp4", ".png"}
    }


def test_the_run_passes_its_own_public_check(run: Run) -> None:
    assert run.done.returncode == 0, run.done.stderr
    no_traceback(run.done)
    checked = cli("report", "--check-public", str(run.out))
    assert checked.returncode == 0, checked.stderr
    assert "public check passed" in checked.stdout


def test_no_public_file_names_the_folder_home_host_or_secret(run: Run) -> None:
    assert run.done.returncode == 0, run.done.stderr
    texts = _public_text(run.out)
    assert "report.md" in texts and f"checkpoints/{PROFILE}/result.json" in texts
    # "SENTINEL" stands in every rendering of both folders' names, escaped or not (`SENTINEL&amp;q&#x27;`, ...)
    for value in ("SENTINEL", str(run.out.parent), HOST, TOKEN):
        leaks = [name for name, text in texts.items() if value in text]
        assert leaks == [], f"{value!r} in {leaks}"
    user = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(os.environ.get("USER") or "root") + r"(?![A-Za-z0-9_])")
    assert [name for name, text in texts.items() if user.search(text)] == []
    # The raw logs did see them: they are kept, privately.
    private = [p for p in run.out.rglob("*") if PRIVATE_DIR in p.relative_to(run.out).parts and p.is_file()]
    assert any("SENTINEL&q'[1]out" in p.read_text(errors="replace") for p in private)


@pytest.mark.parametrize(
    ("planted", "kind"),
    [(HOST, "user-or-host"), ("{out}/checkpoints", "path"), (TOKEN, "secret")],
)
def test_a_value_planted_after_the_run_fails_the_check_naming_its_line(
    run: Run, planted: str, kind: str, tmp_path: Path
) -> None:
    assert run.done.returncode == 0, run.done.stderr
    copy = tmp_path / f"planted {kind}"  # the shared run itself is never changed
    shutil.copytree(run.out, copy)
    value = planted.format(out=copy)
    report = copy / "report.md"
    lines = report.read_text().splitlines()
    report.write_text("\n".join([*lines[:2], f"served from {value} today", *lines[2:]]) + "\n")
    (copy / "checkpoints" / PROFILE / PRIVATE_DIR / "note.log").write_text(f"{value}\n")  # private: never a hit
    env = {**os.environ, "HF_TOKEN": TOKEN}
    # The check runs where the planted host name is the machine's own, as after the run.
    checked = subprocess.run(
        [*in_namespace(), sys.executable, "-m", "trtmc_videoqa", "report", "--check-public", str(copy)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert checked.returncode == 3, checked.stdout + checked.stderr  # a hit: the check's verdict
    no_traceback(checked)
    assert "report.md:3" in checked.stderr and "note.log" not in checked.stderr
