"""The README's main job leaves public artifacts that name nothing of the machine, and a recorded command that runs.

One self-test runs with values no artifact may carry: a host name set in its own UTS namespace (`unshare -u`, as
root: CI runs as root), an output folder and a $HOME whose paths hold a space and a sentinel, and a secret in the
environment. It is the self-test that test_qualify.py checks too, made once per test run (shared_runs.self_test).
Then: the public check passes, a plain search of every public file finds none of those values, a value
planted afterwards fails the check naming file:line, and the recorded AIPerf command, run from a copy of the
artifacts in another folder, asks the same questions and gets the same answers.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import cli, no_traceback, row
from shared_runs import HOST, SharedRun, in_namespace
from shared_runs import HUB_TOKEN as TOKEN

from trtmc_videoqa.aiperf.exports import read_client_records
from trtmc_videoqa.publish.check import PRIVATE_DIR, public_files
from trtmc_videoqa.serving.process import ServerProcess

pytestmark = pytest.mark.e2e

PROFILE = "reference-self-test.synthetic"
VENV_BIN = str(Path(sys.executable).parent)


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
    for value in ("SENTINELout", "SENTINELhome", str(run.out.parent), HOST, TOKEN):
        leaks = [name for name, text in texts.items() if value in text]
        assert leaks == [], f"{value!r} in {leaks}"
    user = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(os.environ.get("USER") or "root") + r"(?![A-Za-z0-9_])")
    assert [name for name, text in texts.items() if user.search(text)] == []
    # The raw logs did see them: they are kept, privately.
    private = [p for p in run.out.rglob("*") if PRIVATE_DIR in p.relative_to(run.out).parts and p.is_file()]
    assert any("SENTINELout" in p.read_text(errors="replace") for p in private)


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


def _commands(row_dir: Path) -> dict[str, str]:
    """command.txt's sections: `# name` then the command (a section may open with comment lines of its own)."""
    sections: dict[str, list[str]] = {}
    name = None
    for line in (row_dir / "command.txt").read_text().splitlines():
        if line.startswith("# ") and line[2:] in {"trtmc-videoqa", "serve", "aiperf", "build", "correctness"}:
            name = line[2:]
            sections[name] = []
        elif name is not None and not line.startswith("#"):
            sections[name].append(line)
    return {key: "\n".join(lines) for key, lines in sections.items()}


def test_the_recorded_aiperf_command_reproduces_the_run_from_a_copy(run: Run, tmp_path: Path) -> None:
    """As a user on another machine would: copy the public artifacts, start the recorded server, run the recorded
    aiperf command from the copy with the aiperf of a `pip install aiperf==0.13.0` (here the test's own venv)."""
    assert run.done.returncode == 0, run.done.stderr
    copy = tmp_path / "elsewhere dir" / "artifacts"
    shutil.copytree(run.out, copy, ignore=shutil.ignore_patterns(PRIVATE_DIR))
    row_dir = copy / "checkpoints" / PROFILE
    commands = _commands(row_dir)
    assert commands["aiperf"].startswith("aiperf profile ") and str(run.out) not in commands["aiperf"]
    serve = shlex.split(commands["serve"])
    assert serve[:2] == ["trtmc-videoqa", "serve-reference"]
    port = serve[serve.index("--port") + 1]
    export = row_dir / "aiperf" / "export"
    shutil.rmtree(export)  # what the command writes, and nothing older
    # The venv's aiperf, or the one configured for this test run (conftest.py's launch counter puts one there)
    configured = os.environ.get("TRTMC_VIDEOQA_AIPERF")
    aiperf_bin = str(Path(configured).parent) if configured else VENV_BIN
    env = {**os.environ, "PATH": f"{aiperf_bin}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    url = f"http://127.0.0.1:{port}"
    with ServerProcess(serve, url=url, log_path=tmp_path / "serve.log", startup_timeout_s=60, env=env, cwd=copy):
        again = subprocess.run(
            ["bash", "-c", commands["aiperf"]], cwd=copy, env=env, capture_output=True, text=True, timeout=300
        )
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    measured = row(run.out, PROFILE)
    original = {r.session_id: r.answer for r in measured.requests if r.phase == "profiling"}
    replayed = {r.session_id: r.answer for r in read_client_records(export) if r.phase == "profiling"}
    assert len(replayed) == len(original) == 30
    assert replayed == original  # same questions, same clips, same answers
