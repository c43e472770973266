"""The command line as a user meets it: exit codes, one clear message, no traceback.

What a command does with its arguments is tested in this process, through `main(argv)` with the output captured
(`run_main`): the same parser, handlers and messages, without an interpreter start per test. What only a
subprocess shows stays one: the console script and `python -m trtmc_videoqa` themselves, a server that runs until
it is stopped, and a fresh interpreter's imports.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HTTP, cli, eventually, interpreter_tools_only, no_traceback, one_message, run_main

FIXTURES = Path(__file__).parent / "fixtures"
Captured = pytest.CaptureFixture[str]
SUBCOMMANDS = ("inventory", "matrix", "qualify", "compare", "report", "probe", "serve-reference", "doctor", "schemas")


def assert_bad_input(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, done.stderr
    no_traceback(done)
    message = one_message(done)
    for needle in needles:
        assert needle in message


def test_the_console_script_and_python_m_run_the_command_line() -> None:
    """The two ways a user starts it: the installed `trtmc-videoqa` script and `python -m trtmc_videoqa`."""
    script = Path(sys.executable).parent / "trtmc-videoqa"
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("trtmc-videoqa "), version.stderr
    refused = cli("inventory", "--trtmc", "/nonexistent/trtmc-checkout")  # bad input: exit 2, one line, no traceback
    assert_bad_input(refused, "does not exist")


def test_version(capsys: Captured) -> None:
    done = run_main(capsys, "--version")
    assert done.returncode == 0 and done.stdout.startswith("trtmc-videoqa ")


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_each_subcommand_explains_itself(command: str, capsys: Captured) -> None:
    lines = run_main(capsys, "--help").stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:1] == [command])
    text = (lines[at].split(None, 1)[1:] or [lines[at + 1]])[0]  # argparse may wrap the help to the next line
    assert len(text.split()) >= 5  # a line a user understands, not just the name
    own = run_main(capsys, command, "--help")
    assert own.returncode == 0 and own.stdout.startswith(f"usage: trtmc-videoqa {command}")


def test_a_usage_error_exits_2_naming_the_command(capsys: Captured) -> None:
    done = run_main(capsys, "inventory")  # --trtmc is required
    assert done.returncode == 2 and "--trtmc" in done.stderr and done.stderr.startswith("usage: trtmc-videoqa")


def test_inventory_writes_files_and_prints_a_summary(tmp_path: Path, capsys: Captured) -> None:
    done = run_main(capsys, "inventory", "--trtmc", str(FIXTURES / "trtmc_families"), "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "temporal-video-qa" in done.stdout and "capable of temporal video QA: vidqa-2b" in done.stdout
    assert "skipped" not in done.stdout  # said only when something was skipped
    data = json.loads((tmp_path / "inventory.json").read_text())
    assert data["schema_version"] == "trtmc-videoqa.inventory/v2"
    assert (tmp_path / "inventory.md").read_text().startswith("# TRTMC inventory")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_inventory_summary_counts_skipped_manifests(tmp_path: Path, capsys: Captured) -> None:
    tree = tmp_path / "trtmc"
    shutil.copytree(FIXTURES / "trtmc_families", tree)
    (tree / "families" / "vlm" / "tests" / "manifests" / "not-a-file.json").mkdir()
    done = run_main(capsys, "inventory", "--trtmc", str(tree), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "skipped 1 manifest(s), so no row" in done.stdout and "other path(s)" not in done.stdout
    skipped = json.loads((tmp_path / "out" / "inventory.json").read_text())["skipped"]
    assert skipped == [
        {"path": "families/vlm/tests/manifests/not-a-file.json", "reason": "not a regular file (a directory); not read"}
    ]


def test_inventory_against_an_earlier_run(tmp_path: Path, capsys: Captured) -> None:
    first = tmp_path / "first"
    assert run_main(capsys, "inventory", "--trtmc", str(FIXTURES / "trtmc_e2e"), "--out", str(first)).returncode == 0
    done = run_main(
        capsys,
        "inventory",
        "--trtmc",
        str(FIXTURES / "trtmc_e2e"),
        "--out",
        str(tmp_path / "second"),
        "--against",
        str(first / "inventory.json"),
    )
    assert done.returncode == 0, done.stderr
    assert "0 added, 0 removed, 0 changed" in done.stdout


def test_missing_checkout(tmp_path: Path, capsys: Captured) -> None:
    assert_bad_input(run_main(capsys, "inventory", "--trtmc", str(tmp_path / "nope")), "does not exist", "nope")


def test_directory_that_is_not_trtmc(tmp_path: Path, capsys: Captured) -> None:
    done = run_main(capsys, "inventory", "--trtmc", str(tmp_path))
    assert_bad_input(done, "is not a TRTMC checkout", str(tmp_path))


def test_a_file_instead_of_a_checkout(tmp_path: Path, capsys: Captured) -> None:
    file = tmp_path / "x.txt"
    file.write_text("x")
    assert_bad_input(run_main(capsys, "inventory", "--trtmc", str(file)), "is not a directory")


@pytest.mark.parametrize("content", ["{not json", json.dumps({"schema_version": "other"}), None])
def test_against_a_bad_inventory_file(tmp_path: Path, content: str | None, capsys: Captured) -> None:
    old = tmp_path / "old.json"
    if content is not None:
        old.write_text(content)
    args = ("--trtmc", str(FIXTURES / "trtmc_e2e"), "--out", str(tmp_path / "o"), "--against", str(old))
    assert_bad_input(run_main(capsys, "inventory", *args), "--against", "old.json")
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_malformed_manifest_is_a_row_and_the_audit_goes_on(tmp_path: Path, capsys: Captured) -> None:
    done = run_main(capsys, "inventory", "--trtmc", str(FIXTURES / "trtmc_families"), "--out", str(tmp_path))
    assert done.returncode == 0
    rows = {r["profile"]: r for r in json.loads((tmp_path / "inventory.json").read_text())["entries"]}
    assert rows["broken"]["verdict"] == "invalid" and "malformed JSON at line" in rows["broken"]["error"]


def test_doctor_reports_the_pinned_aiperf(capsys: Captured) -> None:
    done = run_main(capsys, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)}
    assert checks["aiperf"]["level"] == "ok" and "0.13.0" in checks["aiperf"]["detail"]
    assert checks["av (PyAV)"]["level"] == "ok"
    assert done.returncode == 0


def test_doctor_names_a_missing_aiperf_and_the_fix(tmp_path: Path, capsys: Captured, monkeypatch) -> None:
    monkeypatch.setenv("TRTMC_VIDEOQA_AIPERF", str(tmp_path / "no-aiperf"))
    done = run_main(capsys, "doctor")
    assert done.returncode == 3  # a required part missing: doctor's verdict, not a tool error of ours (1)
    assert "FAIL  aiperf" in done.stdout and "pip install aiperf==0.13.0" in done.stdout


def test_doctor_sees_a_gpu_and_trtmc_and_names_a_docker_without_a_daemon(
    tmp_path: Path, capsys: Captured, monkeypatch
) -> None:
    """Through the nvidia-smi, trtmc and trtmc-server test doubles and a docker client whose daemon never answers."""
    from doubles.toolchain import install_doubles

    env = install_doubles(tmp_path / "bin")
    docker = tmp_path / "bin" / "docker"
    docker.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", env["PATH"])
    checks = {c["name"]: c for c in json.loads(run_main(capsys, "doctor", "--json").stdout)}
    assert checks["gpu"]["level"] == "ok" and "TEST DOUBLE" in checks["gpu"]["detail"]
    assert checks["trtmc"]["level"] == "ok" and str(tmp_path / "bin" / "trtmc-server") in checks["trtmc"]["detail"]
    assert checks["docker"]["level"] == "warn" and "no daemon answered" in checks["docker"]["detail"]
    assert "DOCKER_HOST" in checks["docker"]["fix"]
    monkeypatch.setenv("PATH", interpreter_tools_only(tmp_path / "ldd"))  # no docker, no GPU, no TRTMC on PATH
    checks = {c["name"]: c for c in json.loads(run_main(capsys, "doctor", "--json").stdout)}
    assert (checks["gpu"]["level"], checks["docker"]["level"], checks["trtmc"]["level"]) == ("warn",) * 3
    assert "GPU runner" in checks["gpu"]["fix"] and "docker.io" in checks["docker"]["fix"]


def test_matrix_lists_the_normal_profile_of_each_capable_checkpoint(capsys: Captured) -> None:
    done = run_main(capsys, "matrix", "--trtmc", str(FIXTURES / "trtmc_families"))
    # vidqa-2b-native is capable too, but it is a second profile of example/VidQA-2B@1111...: a variant, not a model
    assert done.returncode == 0 and json.loads(done.stdout) == ["vidqa-2b"]
    old = run_main(capsys, "matrix", "--trtmc", str(FIXTURES / "trtmc_e2e"))
    assert json.loads(old.stdout) == ["oldvideo-7b"]


SYNTHETIC = Path(__file__).parents[1] / "src" / "trtmc_videoqa" / "workloads" / "data" / "synthetic"


def test_probe_prints_the_manifest_and_writes_a_strip(tmp_path: Path, capsys: Captured) -> None:
    strip = tmp_path / "strip.png"
    args = (str(SYNTHETIC / "synthetic-forward.mp4"), "--policy", "uniform:4", "--strip", str(strip))
    done = run_main(capsys, "probe", *args)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["manifest"]["frames_counted"] == 48 and data["manifest"]["fps"] == "24/1"
    assert data["sampling"]["indices"] == [0, 16, 31, 47]
    from PIL import Image

    assert Image.open(strip).size[0] == 4 * 160


@pytest.mark.parametrize("content", [None, b"", b"not a video at all", b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 40])
def test_probe_bad_clips_are_bad_input(tmp_path: Path, content: bytes | None, capsys: Captured) -> None:
    clip = tmp_path / "clip.mp4"
    if content is not None:
        clip.write_bytes(content)
    assert_bad_input(run_main(capsys, "probe", str(clip)), "clip.mp4")


def test_probe_bad_policy_is_bad_input(capsys: Captured) -> None:
    done = run_main(capsys, "probe", str(SYNTHETIC / "synthetic-forward.mp4"), "--policy", "every:other")
    assert_bad_input(done, "--policy")


def test_serve_reference_refuses_a_non_loopback_host(capsys: Captured) -> None:
    assert_bad_input(run_main(capsys, "serve-reference", "--host", "0.0.0.0", "--port", "0"), "loopback")


def test_serve_reference_serves_on_loopback(tmp_path: Path) -> None:
    import httpx

    url_file = tmp_path / "url"
    process = subprocess.Popen(
        [sys.executable, "-m", "trtmc_videoqa", "serve-reference", "--url-file", str(url_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def ready() -> bool:
        try:
            return HTTP.get(url + "/health/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:  # bounded waits, far above what a busy machine takes: they only end a server that never comes up
        assert eventually(lambda: url_file.is_file() and bool(url_file.read_text().strip())), process.poll()
        url = url_file.read_text().strip()
        assert url.startswith("http://127.0.0.1:")
        assert eventually(ready)
        models = HTTP.get(url + "/v1/models", timeout=5).json()
        assert models["data"][0]["id"] == "trtmc-videoqa-reference"
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_serve_reference_prints_its_url_on_stdout_when_it_listens() -> None:
    """It printed nothing, not even its URL: one line on stdout now, the URL a client is pointed at."""
    import selectors

    process = subprocess.Popen(
        [sys.executable, "-m", "trtmc_videoqa", "serve-reference"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:  # a bound on the wait, far above a busy machine's start
            selector.register(process.stdout, selectors.EVENT_READ)
            assert selector.select(timeout=120), "no line on stdout"
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.rsplit(":", 1)[1].isdigit()
        assert HTTP.get(url + "/health/live", timeout=30).status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=20)
    assert process.stdout.read() == ""  # that one line only


def test_probe_refuses_an_oversized_clip_and_max_bytes_raises_the_limit(clips, capsys: Captured) -> None:
    clip = clips.mp4
    small = run_main(capsys, "probe", str(clip), "--max-bytes", "1000")
    assert_bad_input(small, "over the 1,000-byte limit", "--max-bytes")
    assert run_main(capsys, "probe", str(clip), "--max-bytes", str(clip.stat().st_size)).returncode == 0
    assert_bad_input(run_main(capsys, "probe", str(clip), "--max-bytes", "1KiB"), "over the 1,024-byte limit")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--repeats", "0"),
        ("--warmup", "-1"),
        ("--concurrency", "0"),
        ("--request-timeout", "0"),
        ("--aiperf-wall-limit", "0"),
        ("--body-limit", "0"),
        ("--startup-timeout", "0"),
    ],
)
def test_qualify_refuses_an_option_out_of_range(tmp_path: Path, option: str, value: str, capsys: Captured) -> None:
    done = run_main(capsys, "qualify", "--dry-run", "--out", str(tmp_path), option, value)
    assert_bad_input(done, "trtmc-videoqa qualify: ", option)
    assert not list(tmp_path.iterdir())  # refused before anything was written


@pytest.mark.parametrize(
    ("args", "needle"),
    [(("--port", "70000"), "port: "), (("--error-rate", "2"), "error_rate: "), (("--model-name", "x"), "reference")],
)
def test_serve_reference_refuses_a_setting_out_of_range(args: tuple[str, ...], needle: str, capsys: Captured) -> None:
    assert_bad_input(run_main(capsys, "serve-reference", *args), "trtmc-videoqa serve-reference: ", needle)


def test_qualify_cli_does_not_import_the_cli() -> None:
    probe = "import sys, trtmc_videoqa.cli.qualify; print('trtmc_videoqa.cli.main' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_an_endpoint_run_loads_neither_the_inventory_schemas_nor_httpx(tmp_path: Path) -> None:
    """An endpoint run has no inventory and speaks through the bounded client: what it never uses stays unloaded
    (the inventory's schemas cost about 25 ms to build, httpx and anyio more). Nothing listens on the endpoint: the
    row fails its capability check (exit 3, the failed row's code), and the reports and the public check still
    run."""
    out = tmp_path / "out"
    probe = (
        "import sys\n"
        "from trtmc_videoqa.cli.main import main\n"
        f"code = main(['qualify', '--endpoint', 'http://127.0.0.1:9', '--model', 'm', '--out', {str(out)!r}, "
        "'--workload', 'synthetic', '--quiet'])\n"
        "print(code, sorted({'trtmc_videoqa.results.inventory', 'httpx', 'anyio'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-1:] == ["3 []"], done.stdout + done.stderr
    assert (out / "report.html").is_file()


def test_the_command_line_starts_without_httpx_own_client_or_the_package_metadata() -> None:
    """httpx, once the command line has started, loads without its own command-line client (rich, click, pygments);
    importing the package reads no package metadata until the version is asked for."""
    probe = (
        "import sys, trtmc_videoqa\n"
        "assert 'importlib.metadata' not in sys.modules, 'the package read its metadata on import'\n"
        "from trtmc_videoqa.cli.main import skip_httpx_cli\n"
        "skip_httpx_cli()\n"
        "import httpx\n"
        "assert not {'rich', 'click', 'pygments'} & set(sys.modules), 'httpx loaded its own client'\n"
        "assert callable(httpx.main) and httpx.AsyncClient\n"
        "print(trtmc_videoqa.__version__)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr


def test_the_process_own_command_line_leaves_its_objects_to_the_exit_and_says_everything() -> None:
    """Run as the process's own command line, main() freezes what it built before the exit (no last walk over every
    object); the output is whole and the exit code the command's. Called with arguments (a test), it does not."""
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.__stderr__.write(f'frozen {gc.get_freeze_count() > 0}\\n'))\n"
        "from trtmc_videoqa.cli.main import main\n"
        f"command = ['matrix', '--trtmc', {str(FIXTURES / 'trtmc_families')!r}]\n"
        "if sys.argv[1:] == ['given']:\n"
        "    sys.exit(main(command))\n"
        "sys.argv = ['trtmc-videoqa', *command]\n"
        "sys.exit(main())\n"
    )
    for given, frozen in (([], "frozen True"), (["given"], "frozen False")):
        done = subprocess.run([sys.executable, "-c", probe, *given], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) and frozen in done.stderr
