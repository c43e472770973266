"""Security: secrets reach the server and nothing else, servers stay on loopback, no shell strings, and no path
from a manifest or a workload leads outside its checkout or directory."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest
from doubles.toolchain import install_doubles
from helpers import QUICK, one_message, row, run_main
from shared_runs import FILE_KEY, REQUIRED_KEY_ENV, SharedRun
from source_scan import walked

from trtmc_videoqa.reference import (
    DEFAULT_MODEL_NAME,
    NonLoopbackHostError,
    ReferenceConfig,
    ReferenceServer,
    argv_for_subprocess,
)
from trtmc_videoqa.results import ResultRow
from trtmc_videoqa.trtmc.commands import Toolchain, server_argv

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "trtmc_videoqa"
FIXTURES = Path(__file__).parent / "fixtures"


# --- secrets --------------------------------------------------------------------------------------------------


def test_without_the_key_the_server_refuses_the_capability_check(tmp_path: Path, monkeypatch, capsys) -> None:
    key = FILE_KEY
    monkeypatch.setenv(REQUIRED_KEY_ENV, key)  # the server (in this process) reads its key from here
    config = ReferenceConfig(api_key_env=REQUIRED_KEY_ENV, records_path=tmp_path / "records.jsonl")
    assert key not in " ".join(argv_for_subprocess(config))  # only the variable's name travels in an argv
    with ReferenceServer(config) as server:
        monkeypatch.delenv("TRTMC_SERVE_TOKEN", raising=False)  # the run (in this process too) has no key at all
        args = ("--endpoint", server.url, "--model", DEFAULT_MODEL_NAME, *QUICK, "--out", str(tmp_path / "without"))
        without = run_main(capsys, "qualify", *args)
    assert without.returncode == 3, without.stderr  # a refused capability check is a failed row, not an error
    refused = row(tmp_path / "without", DEFAULT_MODEL_NAME)  # the server does want the key
    assert (refused.status, refused.failed_stage) == ("failed", "capability")
    assert "HTTP 401" in refused.status_reason and "--api-key-file" in refused.status_reason


@pytest.mark.e2e
def test_an_api_key_from_a_file_reaches_the_server_but_no_artifact_log_or_command(key_file_run: SharedRun) -> None:
    # shared_runs.endpoint_with_key_file: the same server, which refuses a request without its key (above)
    key, out, done = FILE_KEY, key_file_run.out, key_file_run.done()
    assert done.returncode == 0, done.stderr  # with the file the server got the key, on every request
    assert row(out, DEFAULT_MODEL_NAME).status == "endpoint-qualified"
    leaked = [p for p in out.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert leaked == []
    assert key not in done.stdout + done.stderr
    records = (key_file_run.folder / "records.jsonl").read_text()
    assert records and key not in records
    command = (out / "checkpoints" / DEFAULT_MODEL_NAME / "command.txt").read_text()
    assert "--config checkpoints/" in command and "--api-key-file" in command and "--api-key " not in command
    config = (out / "checkpoints" / DEFAULT_MODEL_NAME / "aiperf" / "aiperf-config.yaml").read_text()
    assert "api_key: ${TRTMC_SERVE_TOKEN}" in config


@pytest.mark.parametrize("content", [None, "", "\n\n"])
def test_an_unreadable_or_empty_api_key_file_is_bad_input(
    tmp_path: Path, content: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    key_file = tmp_path / "api.key"
    if content is not None:
        key_file.write_text(content)
    args = ("--endpoint", "http://127.0.0.1:9", "--model", "m", "--api-key-file", str(key_file))
    done = run_main(capsys, "qualify", *args, "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "--api-key-file" in one_message(done)
    assert not (tmp_path / "out").exists()


# --- loopback -------------------------------------------------------------------------------------------------


def test_servers_bind_loopback_by_default() -> None:
    assert ReferenceConfig().host == "127.0.0.1"
    from trtmc_videoqa.reference.server import bind_socket

    for host in ("0.0.0.0", "::", "192.0.2.7", "example.com"):
        with pytest.raises(ValueError, match="not a loopback address"):
            ReferenceConfig(host=host)
        with pytest.raises(NonLoopbackHostError):  # even a config built without validation is refused at bind
            bind_socket(ReferenceConfig.model_construct(host=host, port=0, allow_non_loopback=False))
    argv = argv_for_subprocess(ReferenceConfig())
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and "--allow-non-loopback" not in argv
    toolchain = Toolchain(trtmc="trtmc", trtmc_server="trtmc-server")
    argv = server_argv(
        toolchain,
        Path("/b.bundle"),
        model_name="m",
        port=8000,
        body_limit=1,
        records=Path("/r"),
        startup_timeout_s=1,
        request_timeout_s=1,
    )
    assert argv[argv.index("--host") + 1] == "127.0.0.1"


def test_every_server_url_we_make_is_loopback() -> None:
    """The servers we start (trtmc-server, the reference endpoint) are reached on 127.0.0.1 only."""
    made = []
    for path in SRC.rglob("*.py"):
        made += [(path.name, url) for url in re.findall(r'f"(http://[^"]*)"', path.read_text())]
    assert made
    for name, url in made:
        assert url.startswith(("http://127.0.0.1:", "http://{shown}:")), (name, url)  # shown: the bound socket


# --- no shell strings -----------------------------------------------------------------------------------------


def test_no_shell_strings_anywhere_in_src() -> None:
    sources = sorted(SRC.rglob("*.py"))
    assert sources
    for path in sources:
        text = path.read_text()
        for forbidden in ("shell=True", "os.system(", "os.popen(", "getoutput(", "getstatusoutput("):
            assert forbidden not in text, f"{path.relative_to(REPO)} uses {forbidden}"
        # Every subprocess call takes an argv list, never one string for a shell to split.
        for node in walked(text, str(path)):  # parsed once per process with the other scans (source_scan.py)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "subprocess"
                and node.args
            ):
                first = node.args[0]
                assert not isinstance(first, (ast.Constant, ast.JoinedStr, ast.BinOp)), (
                    f"{path.relative_to(REPO)}:{node.lineno} passes a string command to subprocess"
                )
                assert not any(k.arg == "shell" for k in node.keywords), f"{path.relative_to(REPO)}:{node.lineno}"


# --- paths from manifests and workloads -----------------------------------------------------------------------


def _tree_with(tmp: Path, edit) -> Path:
    tree = tmp / "trtmc"
    shutil.copytree(FIXTURES / "trtmc_families", tree)
    edit(tree)
    return tree


def _manifest(tree: Path, file_stem: str, **changes: object) -> None:
    source = tree / "families" / "vidqa" / "tests" / "manifests" / "vidqa-2b.json"
    data = json.loads(source.read_text())
    data.update(changes)
    (source.parent / f"{file_stem}.json").write_text(json.dumps(data, indent=2))


def test_a_profile_name_from_a_manifest_never_leads_outside_the_output_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    evil = "../../../escaped"
    tree = _tree_with(tmp_path, lambda t: _manifest(t, "escaped", name=evil))
    env = install_doubles(tmp_path / "bin")
    out = tmp_path / "work" / "out"
    done = run_main(capsys, "qualify", "--trtmc", str(tree), "--out", str(out), "--profile", evil, *QUICK, env=env)
    assert done.returncode == 3, done.stderr  # the named row failed at plan
    rows = list((out / "checkpoints").glob("*/result.json"))
    assert len(rows) == 1 and rows[0].parent.parent == out / "checkpoints"  # a fixed name, inside checkpoints/
    refused = ResultRow.model_validate_json(rows[0].read_bytes())
    assert refused.profile == evil and (refused.status, refused.failed_stage) == ("failed", "plan")
    assert "not a plain name" in refused.status_reason
    assert not (out / "bundles").exists()  # nothing was built
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "work" / "escaped").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "trtmc", "work"]


def test_a_family_test_outside_the_checkout_is_never_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    marker = tmp_path / "ran-outside"
    outside = tmp_path / "outside_test_e2e.py"
    outside.write_text(f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\ndef test_x():\n    pass\n")

    def link_out(tree: Path) -> None:
        test = tree / "families" / "vidqa" / "tests" / "test_e2e.py"
        test.unlink()
        test.symlink_to(outside)

    tree = _tree_with(tmp_path, link_out)
    env = install_doubles(tmp_path / "bin")
    out = tmp_path / "out"
    done = run_main(
        capsys, "qualify", "--trtmc", str(tree), "--out", str(out), "--profile", "vidqa-2b", *QUICK, env=env
    )
    assert done.returncode == 3, done.stderr  # the named row failed at plan
    refused = row(out, "vidqa-2b")
    assert (refused.status, refused.failed_stage) == ("failed", "plan")
    assert "leads outside the checkout" in refused.status_reason
    assert not marker.exists() and not (out / "bundles").exists()


def test_a_family_name_that_is_a_path_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tree = _tree_with(tmp_path, lambda t: _manifest(t, "sneaky", name="sneaky-2b", family="vidqa/../vidqa"))
    env = install_doubles(tmp_path / "bin")
    out = tmp_path / "out"
    done = run_main(
        capsys, "qualify", "--trtmc", str(tree), "--out", str(out), "--profile", "sneaky-2b", *QUICK, env=env
    )
    assert done.returncode == 3, done.stderr  # the named row failed at plan
    refused = row(out, "sneaky-2b")
    assert (refused.status, refused.failed_stage) == ("failed", "plan") and "family" in refused.status_reason


def test_the_audit_never_reads_a_family_outside_the_checkout(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory import run_inventory

    secret_dir = tmp_path / "outside"
    secret_dir.mkdir()
    (secret_dir / "model.py").write_text("video_token = 1\ntimestamps = []\n")  # would make it look temporal
    tree = _tree_with(tmp_path, lambda t: _manifest(t, "outward", name="outward-2b", family="../../outside"))
    inventory = run_inventory(tree)
    entry = next(e for e in inventory.entries if e.profile == "outward-2b")
    assert entry.verdict != "temporal-video-qa"
    assert not any("outside" in e.file and "model.py" in e.file for e in entry.evidence)
    assert any("outside the checkout" in item.reason for item in inventory.skipped)
