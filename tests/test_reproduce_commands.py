"""The recorded commands run as written from a copy of the artifacts folder on another machine, offline.

As a user who downloaded the artifacts would (docs/public-evidence.md, "Reproducing one row by hand"): copy the
public part of the README's self-test (made with a relative `--out`, as the README's default `artifacts` is) to a
folder whose path holds spaces, pick each section of the row's command.txt with the sed line its own header gives,
start the `# serve` command there and run the `# aiperf` command through `bash -c`, both verbatim, from the copy,
with the hub switched off (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE, and a hub address that answers nothing). Then
AIPerf's export holds every profiling request of the row, answered as the run's were.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import row
from shared_runs import SharedRun

from trtmc_videoqa.aiperf.exports import read_client_records
from trtmc_videoqa.publish.check import PRIVATE_DIR
from trtmc_videoqa.rows.finish import COMMAND_FILE_HEADER
from trtmc_videoqa.serving.process import ServerProcess

PROFILE = "reference-self-test.synthetic"
VENV_BIN = str(Path(sys.executable).parent)
# No hub: the offline switches a user may have set, and an address where nothing answers should anything ask.
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}


def pick(artifacts: Path, section: str) -> str:
    """One section's command line, picked as command.txt's own header says, from the artifacts folder."""
    found = re.search(r"sed -n '[^']*' command\.txt", COMMAND_FILE_HEADER)
    assert found, COMMAND_FILE_HEADER
    sed = found.group().replace("NAME", section).replace("command.txt", f"checkpoints/{PROFILE}/command.txt")
    picked = subprocess.run(["bash", "-c", sed], cwd=artifacts, capture_output=True, text=True, check=True).stdout
    assert len(picked.splitlines()) == 1, picked
    return picked.strip("\n")


def _environment() -> dict[str, str]:
    """A user's shell with `pip install aiperf==0.13.0` and this package on PATH (the test's own venv, or the aiperf
    configured for this test run: conftest.py's launch counter puts one there), and the hub off."""
    configured = os.environ.get("TRTMC_VIDEOQA_AIPERF")
    aiperf_bin = str(Path(configured).parent) if configured else VENV_BIN
    return {**os.environ, "PATH": os.pathsep.join([aiperf_bin, VENV_BIN, os.environ["PATH"]]), **OFFLINE}


@pytest.mark.e2e
def test_the_recorded_serve_and_aiperf_commands_run_from_a_copy_offline(
    self_test_run: SharedRun, tmp_path: Path
) -> None:
    assert self_test_run.done().returncode == 0, self_test_run.done().stderr
    copy = tmp_path / "another machine" / "qualification artifacts"
    shutil.copytree(self_test_run.out, copy, ignore=shutil.ignore_patterns(PRIVATE_DIR))
    export = copy / "checkpoints" / PROFILE / "aiperf" / "export"
    shutil.rmtree(export)  # what the command writes, and nothing older
    serve, aiperf = pick(copy, "serve"), pick(copy, "aiperf")
    # The run's own folders are nowhere in them (its --out was relative: `../out dir SENTINELout/tokenizer` once).
    assert "SENTINEL" not in serve + aiperf
    port = shlex.split(serve)[shlex.split(serve).index("--port") + 1]  # read to wait for it, never changed
    # AIPerf leaves its dataset's aiperf_mmap_* folder in the temporary folder it is given: one of the test's own
    # (short: AIPerf's socket paths go inside it), removed after.
    scratch = tempfile.mkdtemp(prefix="tv-replay-")
    env = {**_environment(), "TMPDIR": scratch}
    try:
        with ServerProcess(
            ["bash", "-c", serve], url=f"http://127.0.0.1:{port}", log_path=tmp_path / "serve.log",
            startup_timeout_s=60, env=env, cwd=copy,
        ):  # fmt: skip
            again = subprocess.run(
                ["bash", "-c", aiperf], cwd=copy, env=env, capture_output=True, text=True, timeout=300
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert (export / "profile_export.jsonl").is_file()
    measured = row(self_test_run.out, PROFILE)
    original = {r.session_id: r.answer for r in measured.requests if r.phase == "profiling"}
    replayed = {r.session_id: r.answer for r in read_client_records(export) if r.phase == "profiling"}
    requested = int(shlex.split(aiperf)[shlex.split(aiperf).index("--request-count") + 1])
    assert len(replayed) == len(original) == requested == 30
    assert replayed == original  # same questions, same clips, same answers


@pytest.mark.e2e
def test_our_own_recorded_command_names_the_artifacts_folder_itself(self_test_run: SharedRun) -> None:
    """The `# trtmc-videoqa` line runs the same job in the copy it is read from: `--out .`, whatever --out was."""
    assert self_test_run.done().returncode == 0, self_test_run.done().stderr
    line = pick(self_test_run.out, "trtmc-videoqa")
    assert shlex.split(line) == ["trtmc-videoqa", "qualify", "--out", "."]


def test_path_options_are_recorded_absolute_for_the_publish_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each path value made absolute (then written from the artifacts folder or by placeholder); names as typed."""
    (tmp_path / "my workload.json").write_text("{}")
    typed = [
        "qualify", "--out", "artifacts", "--tokenizer=tok", "--workload", "my workload.json", "--model", "m",
        "--bundle-cache", "../bundles", "--", "--out",
    ]  # fmt: skip
    from trtmc_videoqa.common.recorded_paths import with_absolute_paths  # here: the e2e tests run on older code too

    monkeypatch.chdir(tmp_path)
    recorded = with_absolute_paths(typed, {"--out", "--tokenizer", "--bundle-cache"}, {"--workload"})
    assert recorded == [
        "qualify", "--out", str(tmp_path / "artifacts"), f"--tokenizer={tmp_path / 'tok'}",
        "--workload", str(tmp_path / "my workload.json"), "--model", "m",
        "--bundle-cache", str(tmp_path.parent / "bundles"), "--", "--out",
    ]  # fmt: skip
    assert with_absolute_paths(["--workload", "synthetic"], (), {"--workload"}) == ["--workload", "synthetic"]


def test_a_local_checkpoints_serve_command_says_where_it_runs(tmp_path: Path) -> None:
    """`transformers serve` of a local folder is started in its parent, by the bare name the requests carry: the
    recorded command says so; a hub id's needs no note."""
    from trtmc_videoqa.serving.transformers_serve import serve_notes, serve_target

    (tmp_path / "my-control").mkdir()
    notes = serve_notes(serve_target(str(tmp_path / "my-control")))
    assert len(notes) == 1 and "folder that holds the checkpoint folder my-control" in notes[0]
    assert str(tmp_path) not in notes[0]  # a path of this machine never reaches a note
    assert serve_notes(serve_target("org/name", "main")) == []


def test_a_placeholder_for_a_path_with_a_space_is_one_the_shell_expands(tmp_path: Path) -> None:
    """The publish step names a path outside the artifacts by placeholder; where the path held a space (a $HOME
    with one, say), the placeholder must not end up inside the quotes that space needed."""
    from trtmc_videoqa.publish.rewrite import public_map
    from trtmc_videoqa.results import RecordedCommand
    from trtmc_videoqa.rows.finish import command_file_text

    out, hub = tmp_path / "out dir", tmp_path / "home dir" / "hub"
    snapshot = hub / "models--org--name" / "snapshots" / "abc"
    argv = ["aiperf", "profile", "--tokenizer", str(snapshot), "--input-file", str(out / "checkpoints/p/in.jsonl")]
    text = command_file_text({"aiperf": RecordedCommand(argv=[*argv, f"--artifact-dir={out}/x"], notes=[str(hub)])})
    published = public_map(out, named={"$HF_HUB_CACHE": hub}).rewrite_file("checkpoints/p/command.txt", text)
    assert str(tmp_path) not in published and "# $HF_HUB_CACHE" in published  # a note is text: rewritten as such
    line = pick_line(published, "aiperf")
    echoed = subprocess.run(
        ["bash", "-c", f'printf "%s\\n" {line}'],
        env={**os.environ, "HF_HUB_CACHE": "/elsewhere/hub"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert echoed == [
        "aiperf", "profile", "--tokenizer", "/elsewhere/hub/models--org--name/snapshots/abc",
        "--input-file", "checkpoints/p/in.jsonl", "--artifact-dir=x",
    ]  # fmt: skip


def pick_line(text: str, section: str) -> str:
    lines = text.splitlines()
    start = lines.index(f"# {section}")
    return next(line for line in lines[start + 1 :] if not line.startswith("#"))
