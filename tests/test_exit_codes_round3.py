"""Exit codes and messages as documented (issue 26, item 8 of "What to build").

- SIGTERM, SIGINT or SIGHUP before the first row is written exits 143, 130 or 129 with an interrupted report (it
  exited 2, "holds no checkpoints/*/result.json").
- A malformed URL (`http://[::1`, a control character) exits 2 naming the option (it was an internal error, exit 1).
- `python -m trtmc_videoqa.workloads.seal` refuses bad input in one message (it printed a pydantic traceback), and
  re-seals the clip facts it owns (clips[].video.frames after new clips are swapped in).
- A clip AIPerf 0.13.0 will not send (.mpg: it takes mp4 and webm) is refused at sealing and at --dry-run, naming the
  formats AIPerf takes; when AIPerf refuses its input anyway, the row names AIPerf's own reason from its log.
- `inventory --against` reads an inventory.json of this tool past 64 MiB (a 20,000-manifest tree writes 77 MB), and a
  file it cannot take is named in a whole sentence.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import QUICK, no_traceback, one_message, unrecorded_aiperf_stage
from media_clips import write_clip

from trtmc_videoqa.aiperf.runner import run_with_wall_limit
from trtmc_videoqa.cli.inventory import _load_inventory_file
from trtmc_videoqa.cli.main import main
from trtmc_videoqa.common.errors import UserError
from trtmc_videoqa.common.output_lock import LOCK_NAME
from trtmc_videoqa.results import Inventory
from trtmc_videoqa.workloads import load_workload
from trtmc_videoqa.workloads import seal as seal_module
from trtmc_videoqa.workloads.artifacts import prepare_workload_artifacts
from trtmc_videoqa.workloads.loading import load_workload_file

SYNTHETIC = Path(seal_module.__file__).parent / "data" / "synthetic"
FIXTURE = Path(__file__).parent / "fixtures" / "trtmc_families"

# --- a signal before the first row --------------------------------------------------------------------------------


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_a_signal_before_the_first_row_exits_with_its_code_and_an_interrupted_report(
    tmp_path: Path, signum: int, code: int
) -> None:
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "trtmc_videoqa", "qualify", "--out", str(out), *QUICK]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        # Under the output lock (the run's tokenizer is being copied), long before the first row.
        while not (out / "tokenizer").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.poll() is None, process.communicate()
        os.kill(process.pid, signum)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    name = signal.Signals(signum).name
    assert process.returncode == code, stderr
    said = "interrupted;" if signum == signal.SIGINT else f"interrupted ({name})"  # Ctrl-C's words are plain
    assert "Traceback" not in stderr and said in stderr and "holds no" not in stderr
    assert not list(out.glob("checkpoints/*/result.json"))
    for report in ("report.md", "report.html", "report.json", "junit.xml"):
        assert f"Interrupted ({name}) before any row was written" in (out / report).read_text(), report
    assert json.loads((out / "report.json").read_text())["group"]["status"] == "failed"
    assert not (out / LOCK_NAME).exists()


# --- a malformed URL ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "url"),
    [
        ("--endpoint", "http://[::1"),
        ("--endpoint", "http://127.0.0.1:8000/\x1b[2J"),
        ("--endpoint", "http://127.0.0.1:99999"),
        ("--endpoint", "127.0.0.1:8000"),
        ("--native-url", "http://[::1"),
        ("--native-url", "http://127.0.0.1:8001/v1\n"),
    ],
)
def test_a_malformed_url_exits_2_naming_the_option(tmp_path: Path, capsys, option: str, url: str) -> None:
    args = ["qualify", "--dry-run", "--out", str(tmp_path), "--model", "m"]
    args += ["--endpoint", "http://127.0.0.1:8000", option, url] if option != "--endpoint" else [option, url]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and option in err and "internal error" not in err, err
    assert "\x1b" not in err


# --- seal -------------------------------------------------------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "workload"
    shutil.copytree(SYNTHETIC, copy)
    return copy


def _seal(folder: Path) -> subprocess.CompletedProcess[str]:
    """The seal tool's `main(argv)` in this process, its output captured: its exit code and one line are what is
    checked, not the process (an exception it did not turn into that line fails the test as it is raised)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = seal_module.main([str(folder)])
    return subprocess.CompletedProcess(["seal", str(folder)], code, out.getvalue(), err.getvalue())


def test_seal_refuses_a_schema_error_in_one_message(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    data = json.loads((copy / "workload.json").read_text())
    data["questions"][0]["options"] = "not a list"
    data["clips"][0]["licence"] = ""
    (copy / "workload.json").write_text(json.dumps(data))
    done = _seal(copy)
    assert done.returncode == 2
    no_traceback(done)
    line = one_message(done)
    assert line.startswith("seal: ") and "workload.json" in line and "options: Input should be" in line


@pytest.mark.parametrize("content", ["[1, 2]", "{not json", ""])
def test_seal_refuses_a_file_that_is_no_workload_in_one_message(tmp_path: Path, content: str) -> None:
    copy = _copy(tmp_path)
    (copy / "workload.json").write_text(content)
    done = _seal(copy)
    assert done.returncode == 2
    no_traceback(done)
    assert "workload.json" in one_message(done)


def test_seal_records_the_frames_of_clips_swapped_in(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    for name in ("synthetic-forward.mp4", "synthetic-reversed.mp4"):  # 30 frames of 64x48 now, not 48 of 160x120
        write_clip(copy / name, "mp4", "libx264", "yuv420p", frames=30)
    with pytest.raises(UserError):
        load_workload_file(copy)  # a new identity: refused until sealed
    assert _seal(copy).returncode == 0
    sealed = load_workload_file(copy)
    assert {(c.video.frames, c.video.width, c.video.height) for c in sealed.spec.clips} == {(30, 64, 48)}
    prepare_workload_artifacts(tmp_path / "out", sealed)  # no "seal a new workload identity" any more


def _mpg_workload(tmp_path: Path) -> Path:
    copy = _copy(tmp_path)
    data = json.loads((copy / "workload.json").read_text())
    write_clip(copy / "synthetic-forward.mpg", "mpeg", "mpeg2video", "yuv420p")
    data["clips"][0]["file"] = "synthetic-forward.mpg"
    (copy / "workload.json").write_text(json.dumps(data))
    return copy


def test_seal_refuses_a_clip_aiperf_will_not_send_naming_the_formats_it_takes(tmp_path: Path) -> None:
    done = _seal(_mpg_workload(tmp_path))
    assert done.returncode == 2
    no_traceback(done)
    line = one_message(done)
    assert "synthetic-forward.mpg" in line and "AIPerf 0.13.0" in line and "mp4 and webm" in line


def test_dry_run_refuses_a_clip_aiperf_will_not_send(tmp_path: Path, capsys, monkeypatch) -> None:
    copy = _mpg_workload(tmp_path)
    monkeypatch.setattr(seal_module, "AIPERF_CLIP_SUFFIXES", (".mp4", ".webm", ".mpg"))  # sealed as an older
    seal_module.seal_workload_file(copy)  # version of the tool would have
    monkeypatch.undo()
    assert load_workload(str(copy / "workload.json")).spec.clips[0].file == "synthetic-forward.mpg"
    assert main(["qualify", "--dry-run", "--out", str(tmp_path / "out"), "--workload", str(copy)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "mp4 and webm" in err and "'forward'" in err, err


# --- AIPerf's own reason ----------------------------------------------------------------------------------------------

AIPERF_LOG = """\
14:26:08.736 INFO     Record metrics export enabled: /x/profile_export.jsonl (record_export_jsonl_writer.py:62)
14:26:45.960 ERROR    Dataset configuration failed: RuntimeError("'.mpg' is not one of the supported video formats: \
mp4, webm") (dataset_manager.py:193)
14:26:45.985 ERROR    Received dataset configuration failed notification from dataset_manager (manager.py:139)
"""


def test_when_aiperf_refuses_its_input_the_row_names_aiperf_s_own_reason(tmp_path: Path) -> None:
    script = tmp_path / "refusing-aiperf"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({AIPERF_LOG!r})\nsys.exit(1)\n")
    script.chmod(0o755)
    outcome = run_with_wall_limit([str(script)], wall_limit_s=60, log_path=tmp_path / "private" / "aiperf.log")
    assert outcome.exit_code == 1
    assert outcome.refusal == (
        "Dataset configuration failed: RuntimeError(\"'.mpg' is not one of the supported video formats: mp4, webm\")"
    )
    stage = unrecorded_aiperf_stage(outcome, "c.mpg")
    assert stage.status == "failed" and "1 planned request(s) have no record" in stage.detail
    assert "AIPerf exited 1: Dataset configuration failed" in stage.detail and "mp4, webm" in stage.detail


# --- inventory --against ----------------------------------------------------------------------------------------------


def test_against_reads_an_inventory_of_this_tool_past_64_mib(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory import run_inventory

    base = run_inventory(FIXTURE)
    entry = json.loads(base.entries[0].model_dump_json())
    # The file as `inventory` writes it, made with the json module: one entry copied under new profile names, each
    # with a reason of 32 KiB, so that 2,200 of them pass the old 64 MiB cap (as a tree of some tens of thousands
    # of manifests does with short reasons: this holds the size and spares validating 40,000 rows).
    count = 2_200
    entry["catalog_reason"] = "r" * (32 << 10)
    document = json.loads(base.model_copy(update={"entries": []}).model_dump_json())
    document["entries"] = [{**entry, "profile": f"p{index:06d}"} for index in range(count)]
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(document))
    assert path.stat().st_size > 64 << 20
    loaded = _load_inventory_file(path)
    assert isinstance(loaded, Inventory) and len(loaded.entries) == count


def test_against_names_a_file_it_cannot_take_in_a_whole_sentence(tmp_path: Path) -> None:
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps({"entries": 5}))
    with pytest.raises(UserError) as refused:
        _load_inventory_file(path)
    message = str(refused.value)
    assert "\n" not in message and message.endswith(
        "pass the inventory.json an earlier `trtmc-videoqa inventory` wrote"
    )
    assert "is not an inventory.json of this tool (" in message
