"""`trtmc-videoqa compare` whose server never answers: the row ends at `serve`, `blocked` where this machine lacks
what the server needs (a CUDA device, the checkpoint) and `failed` otherwise, with the log's last error line made
public-safe and a hint; the report is written as for any run, and the wait is watched on stderr.

The server is tests/doubles/transformers_double.py, a labelled test double of the `transformers` script (named with
--transformers, as a user names theirs): it writes the log a real server writes when it cannot load, and exits 1.
The real server is in test_real_server.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from doubles.transformers_double import install_transformers_double
from helpers import no_traceback, row, run_main

from trtmc_videoqa.common.errors import EXIT_TOOL_ERROR
from trtmc_videoqa.results import Report
from trtmc_videoqa.serving import transformers_serve
from trtmc_videoqa.serving.transformers_serve import (
    error_line,
    hub_cached,
    public_line,
    script_interpreter,
    server_version,
)

TOKEN = "hf_testdoubletoken1234"  # a hub token in the environment: never in a public file
PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


@pytest.fixture
def double(tmp_path: Path) -> Path:
    return install_transformers_double(tmp_path / "bin")


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXIES and not k.startswith(("HF_", "TRANSFORMERS_"))}
    calls = tmp_path / "calls.jsonl"
    return env | {"HF_HOME": str(tmp_path / "hf"), "HF_TOKEN": TOKEN, "TRANSFORMERS_DOUBLE_CALLS": str(calls)} | extra


def _served(tmp_path: Path) -> bool:
    """Whether the double was asked to serve (`transformers version` aside)."""
    calls = tmp_path / "calls.jsonl"
    lines = calls.read_text().splitlines() if calls.exists() else []
    return any(json.loads(line)[:1] == ["serve"] for line in lines)


def _compare(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, double: Path, checkpoint: str, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    argv = ("compare", "--checkpoint", checkpoint, "--transformers", str(double), "--media-adaptation", "none")
    done = run_main(capsys, *argv, *args, "--out", str(tmp_path / "out"), env=_env(tmp_path, **env))
    no_traceback(done)
    assert "internal error" not in done.stdout + done.stderr
    assert done.returncode not in (EXIT_TOOL_ERROR, 2), done.stdout + done.stderr  # a row's outcome, no tool error
    return done


def _local_model(tmp_path: Path) -> str:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    return str(model)


def _reported(tmp_path: Path, profile: str, status: str) -> None:
    """Every report names the row with its status; the public files hold no local path and no token."""
    out = tmp_path / "out"
    report = Report.model_validate_json((out / "report.json").read_text())
    assert [(r.profile, r.status) for r in report.rows] == [(profile, status)]
    assert profile in (out / "report.md").read_text() and profile in (out / "junit.xml").read_text()
    for name in ("report.json", "report.md", f"checkpoints/{profile}/result.json"):
        text = (out / name).read_text()
        assert str(tmp_path) not in text and str(Path.home()) not in text and TOKEN not in text, name


def test_a_server_that_exits_before_it_is_ready_fails_its_row_at_serve_and_the_run_is_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, double: Path
) -> None:
    done = _compare(capsys, tmp_path, double, _local_model(tmp_path), "--device", "cpu")
    compared = row(tmp_path / "out", "model.transformers-serve")
    assert (compared.status, compared.failed_stage) == ("failed", "serve"), compared.status_reason
    reason = compared.status_reason
    assert "exited with code 1 before it was ready" in reason
    # the log's last error line (not its update notice), its local path and the token replaced
    assert "OSError: TEST DOUBLE cannot read <path> (token <redacted>): header too large" in reason, reason
    assert "private/transformers-serve.log" in reason and compared.comparison is not None
    assert compared.stages[-1].name == "serve" and "serve" in compared.commands  # the command that failed
    assert "failed at serve" in done.stdout
    _reported(tmp_path, "model.transformers-serve", "failed")
    # the wait was said on stderr: the start, then the watched load
    assert "starting transformers serve" in done.stderr and "transformers serve loading" in done.stderr


def test_a_log_that_says_no_nvidia_driver_blocks_the_row_with_the_hint_to_use_the_cpu(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, double: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine that shows a GPU device node whose driver does not load (a container without the driver's
    libraries): the server starts, and its log says why it could not."""
    node = tmp_path / "nvidia0"
    node.touch()
    monkeypatch.setattr(transformers_serve, "GPU_DEVICE_FILES", (str(node),))
    model = _local_model(tmp_path)
    _compare(capsys, tmp_path, double, model, "--device", "cuda", TRANSFORMERS_DOUBLE_FAILURE="no-driver")
    compared = row(tmp_path / "out", "model.transformers-serve")
    assert compared.status == "blocked" and compared.failed_stage is None, compared.status_reason
    assert "RuntimeError: Found no NVIDIA driver on your system" in compared.status_reason
    assert "--device cpu" in compared.status_reason and _served(tmp_path)
    _reported(tmp_path, "model.transformers-serve", "blocked")


def test_no_cuda_device_blocks_the_row_before_anything_is_started(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, double: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transformers_serve, "GPU_DEVICE_FILES", (str(tmp_path / "no-such-node"),))
    _compare(capsys, tmp_path, double, _local_model(tmp_path))  # --device cuda, the default
    compared = row(tmp_path / "out", "model.transformers-serve")
    assert compared.status == "blocked" and compared.stages[-1].name == "serve", compared.status_reason
    assert "no CUDA device" in compared.status_reason and "--device cpu" in compared.status_reason
    assert not _served(tmp_path)
    _reported(tmp_path, "model.transformers-serve", "blocked")


def test_a_hub_id_not_in_the_cache_while_offline_is_blocked_without_starting_the_server(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, double: Path
) -> None:
    _compare(capsys, tmp_path, double, "example/absent-vlm", "--device", "cpu", HF_HUB_OFFLINE="1")
    compared = row(tmp_path / "out", "example--absent-vlm.transformers-serve")
    assert compared.status == "blocked", compared.status_reason
    reason = compared.status_reason
    assert "example/absent-vlm@main is not in this machine's hub cache and HF_HUB_OFFLINE is set" in reason
    assert "hf download example/absent-vlm" in reason and not _served(tmp_path)
    _reported(tmp_path, "example--absent-vlm.transformers-serve", "blocked")


def test_a_hub_id_the_server_could_not_fetch_is_blocked_with_the_download_to_make(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, double: Path
) -> None:
    """Part of the checkpoint is in the hub cache (its config), so the server starts; its log says it could not
    fetch the rest."""
    snapshot = tmp_path / "hf" / "hub" / "models--example--partial-vlm" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    extra = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_DOUBLE_FAILURE": "no-hub"}
    _compare(capsys, tmp_path, double, "example/partial-vlm", "--revision", "abc123", "--device", "cpu", **extra)
    compared = row(tmp_path / "out", "example--partial-vlm.transformers-serve")
    assert compared.status == "blocked" and _served(tmp_path), compared.status_reason
    reason = compared.status_reason
    assert "example/partial-vlm is not on this machine and could not be fetched" in reason
    assert "OSError: We couldn't connect to 'https://huggingface.co'" in reason
    assert "hf download example/partial-vlm --revision abc123" in reason


def test_the_hub_cache_holds_a_checkpoint_at_a_branch_or_a_commit(tmp_path: Path) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path)}
    folder = tmp_path / "models--org--vlm"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (folder / "snapshots" / commit).mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(commit)
    assert not hub_cached("org/vlm", None, env)  # an empty snapshot: nothing of it is here
    (folder / "snapshots" / commit / "config.json").write_text("{}")
    assert hub_cached("org/vlm", None, env) and hub_cached("org/vlm", commit, env)
    assert not hub_cached("org/vlm", "v2", env) and not hub_cached("org/other", None, env)
    assert not hub_cached("org/vlm", "../../x", env)


def test_the_error_line_shown_is_the_logs_last_exception_with_no_local_path() -> None:
    log = "\n".join(
        [
            "INFO: loading",
            "Traceback (most recent call last):",
            '  File "/home/someone/venv/lib/torch/cuda/__init__.py", line 372, in _lazy_init',
            "torch.OutOfMemoryError: CUDA out of memory at /home/someone/x.bin, see https://pytorch.org/docs/a/b",
            "Hint: update with /home/someone/venv/bin/python3 -m pip install -U transformers",
        ]
    )
    line = public_line(error_line(log), ["secret-value-1"])
    assert line == "torch.OutOfMemoryError: CUDA out of memory at <path>, see https://pytorch.org/docs/a/b"
    assert error_line("ERROR: Application startup failed\nbye") == "ERROR: Application startup failed"
    assert error_line("only this") == "only this" and error_line("") == ""
    assert public_line("token secret-value-1 in ~/x/y\nsecond\x1b line", ["secret-value-1"]) == (
        "token <redacted> in <path> second line"
    )


def test_the_servers_version_is_read_from_its_scripts_own_python_else_asked_of_the_script(tmp_path: Path) -> None:
    from importlib.metadata import version

    script = install_transformers_double(tmp_path / "bin")  # its #! line names this interpreter
    assert script_interpreter(script) == Path(sys.executable)
    assert server_version(script) == version("transformers")  # this environment's, without importing it
    wrapper = tmp_path / "wrapper"
    wrapper.write_text('#!/bin/sh\n[ "$1" = version ] && echo "5.99.1"\n')
    wrapper.chmod(0o755)
    assert script_interpreter(wrapper) is None and server_version(wrapper) == "5.99.1"
