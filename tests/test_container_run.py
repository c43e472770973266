"""The CPU container recipe built and run for real: a Docker engine of the test's own (Debian's docker.io on a private
socket, no default bridge, no iptables), a base image made here with debootstrap, `docker build` of
containers/cpu.Dockerfile FROM it with the classic builder on the host network, the embedded-default self-test run
inside the image, and its artifacts, back through a mounted directory, held to the plain run's checks.

The engine and its socket are removed after; its image store, pruned to the last build and its base, is kept under
$TRTMC_VIDEOQA_CACHE (default /var/cache/trtmc-videoqa) beside the base tarball, and the next run's engine takes it
back, so its build reuses every layer but the source's. `.ci/run` installs docker.io and debootstrap; where they are
missing or root is not to be had, the test says why and is skipped, except in CI (CI set), where it fails: there it
must run. About a minute on two cores where an earlier run kept its store (most of it the self-test in the image),
7 to 11 minutes from nothing (the build: pip fetching AIPerf's dependencies).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import self_test_checks as checks
from helpers import building

# The self-test inside the image launches AIPerf there. One xdist worker runs this module (--dist loadfile keeps a
# module on one worker, so the module-scoped engine and image are made once), mostly waiting on the network, while
# the others run the rest. The group mark says the same for --dist loadgroup, which pytest 9.2 breaks for now
# (pytest-xdist issue 1386: the group suffix on node ids no longer takes effect).
pytestmark = [pytest.mark.container, pytest.mark.e2e, pytest.mark.xdist_group("container")]

REPO = Path(__file__).resolve().parents[1]
LOCAL_DOCKER = REPO / "containers" / "local-docker.sh"
TAG = "trtmc-videoqa-cpu:container-test"
ENGINE_TOOLS = ("dockerd", "containerd", "runc", "docker", "debootstrap")
SECRET = "hf_container-test-sentinel-0123456789"  # in the caller's environment; must reach no layer and no artifact
SBIN = os.pathsep.join(["/usr/local/sbin", "/usr/sbin", "/sbin"])


def _search_path() -> str:
    return os.pathsep.join([os.environ.get("PATH", ""), SBIN])


@functools.cache
def _as_root() -> list[str] | None:
    """The prefix that runs local-docker.sh as root: none as root, `sudo -n` where that works, else None."""
    if os.geteuid() == 0:
        return []
    sudo = shutil.which("sudo")
    if sudo and subprocess.run([sudo, "-n", "true"], capture_output=True).returncode == 0:
        return [sudo, "-n", "--preserve-env=TRTMC_VIDEOQA_CACHE,TRTMC_VIDEOQA_BASE_SUITE,TRTMC_VIDEOQA_BASE_MIRROR"]
    return None


def _why_not() -> str | None:
    missing = [tool for tool in ENGINE_TOOLS if shutil.which(tool, path=_search_path()) is None]
    if missing:
        return (
            f"{', '.join(missing)} not installed; as root, `sh containers/local-docker.sh install` installs "
            "Debian's docker.io and debootstrap (.ci/run does)"
        )
    if _as_root() is None:
        return "starting a Docker daemon and debootstrap need root, and `sudo -n` is not allowed here"
    return None


def _run(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def engine() -> Iterator[dict[str, str]]:
    """The environment that reaches the test's own engine (DOCKER_HOST, the local base image ...)."""
    why = _why_not()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"the container test must run in CI, and cannot: {why}")
        pytest.skip(why)
    root = _as_root() or []
    # Short, for the daemons' unix sockets; the caller's sentinel secret is in this environment on purpose.
    place = Path(tempfile.mkdtemp(prefix="tv-docker-", dir="/tmp"))
    engine_dir = place / "engine"
    env = {**os.environ, "PATH": _search_path(), "HF_TOKEN": SECRET, "TRTMC_SERVE_TOKEN": SECRET}
    try:  # stop also undoes a half-done or timed-out start: the marker is written first
        started = _run([*root, "sh", str(LOCAL_DOCKER), "start", str(engine_dir)], env, timeout=1200)
        assert started.returncode == 0, f"local-docker.sh start failed:\n{started.stderr[-3000:]}"
        for line in started.stdout.splitlines():  # export NAME='value'
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value.strip("'")
        yield env
    finally:  # stop also undoes a half-done start; it is a no-op once the engine is gone
        stopped = _run([*root, "sh", str(LOCAL_DOCKER), "stop", str(engine_dir)], env, timeout=300)
        shutil.rmtree(place, ignore_errors=True)
    assert stopped.returncode == 0, stopped.stderr[-3000:]


@pytest.fixture(scope="module")
def image(engine: dict[str, str]) -> dict[str, str]:
    built = _run(["sh", str(LOCAL_DOCKER), "build", TAG], engine, timeout=1800)
    assert built.returncode == 0, f"docker build failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    assert not (REPO / "containers" / "certs" / "host-pip-cert.pem").exists()  # the copied CA bundle is cleaned up
    return engine


@pytest.fixture(scope="module")
def self_test_run(image: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("container-artifacts")
    user = f"{os.getuid()}:{os.getgid()}"  # artifacts owned by whoever runs the tests
    done = _run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "host",
            "--user",
            user,
            "--env",
            "HOME=/tmp",
            "--volume",
            f"{out}:/work/artifacts",
            TAG,
        ],
        image,
        timeout=900,
    )
    assert done.returncode == 0, f"the self-test in the image failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "endpoint-qualified" in done.stdout
    return out


def test_the_engine_is_our_own_without_the_default_bridge(engine: dict[str, str]) -> None:
    engine_dir = Path(engine["TRTMC_VIDEOQA_LOCAL_DOCKER"])
    info = json.loads(_run(["docker", "info", "--format", "{{json .}}"], engine, timeout=60).stdout)
    assert Path(info["DockerRootDir"]).is_relative_to(engine_dir)  # its data directory is the test's own
    assert engine["DOCKER_HOST"] == f"unix://{engine_dir}/docker.sock"
    networks = _run(["docker", "network", "ls", "--format", "{{.Name}}"], engine, timeout=60).stdout.split()
    assert "bridge" not in networks and "host" in networks
    base = engine["TRTMC_VIDEOQA_BASE_IMAGE"]
    assert base.startswith("trtmc-videoqa-base:")  # made here (debootstrap + docker import), never pulled
    history = _run(["docker", "image", "inspect", base, "--format", "{{json .}}"], engine, timeout=60)
    assert "debootstrap --variant=minbase" in json.loads(history.stdout)["Comment"]


def test_the_cpu_image_builds_from_the_local_base_with_the_hosts_index_and_no_credential(image) -> None:
    inspect = json.loads(_run(["docker", "image", "inspect", TAG, "--format", "{{json .}}"], image, timeout=60).stdout)
    assert inspect["Config"]["Labels"]["org.opencontainers.image.base.name"] == image["TRTMC_VIDEOQA_BASE_IMAGE"]
    history = _run(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", TAG], image, timeout=60).stdout
    index = _run([sys.executable, str(REPO / "containers" / "host_index.py")], image, timeout=120)
    assert index.returncode == 0, index.stderr
    for argument in index.stdout.split():
        assert argument in history  # the index pip uses here, passed as a build argument
    assert "file://" not in history and "/opt/wheels" not in history  # nothing local to this machine
    layers = history + json.dumps(inspect["Config"])
    assert SECRET not in layers and "HF_TOKEN=" not in layers and "TRTMC_SERVE_TOKEN=" not in layers
    version = _run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "host",
            TAG,
            "/opt/aiperf/bin/python",
            "-c",
            "import importlib.metadata as m; print(m.version('aiperf'))",
        ],
        image,
        timeout=120,
    )
    assert version.stdout.strip() == "0.13.0", version.stderr  # the published aiperf, in an environment of its own


def test_the_self_test_inside_the_image_passes_the_plain_runs_checks(self_test_run: Path) -> None:
    report = checks.check_self_test(self_test_run)
    assert {r.status for r in report.rows} == {"endpoint-qualified"}
    row = checks.row(self_test_run, "reference-self-test.synthetic")
    assert row.provenance is not None
    # the image's aiperf (its own environment), named in public files as a user types it
    assert row.provenance.aiperf["executable"] == "aiperf"
    assert row.provenance.aiperf["version"] == "0.13.0"
    assert row.provenance.endpoint is not None and row.provenance.endpoint.startswith("http://127.0.0.1:")
    for path in self_test_run.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_docker_stop_ends_the_self_test_as_ctrl_c_does(image: dict[str, str], tmp_path: Path) -> None:
    """In the image the tool is PID 1, where the kernel never applies SIGTERM's default action: only its own handler
    stops it. `docker stop` sends SIGTERM and waits 60 s here before SIGKILL (exit 137); the handler stops the
    reference server and AIPerf, records the row as interrupted, writes the report and exits 143."""
    name = f"trtmc-videoqa-stop-{os.getpid()}"
    user = f"{os.getuid()}:{os.getgid()}"
    argv = ["docker", "run", "-d", "--name", name, "--network", "host", "--user", user, "--env", "HOME=/tmp"]
    # Enough requests that AIPerf is still running when the stop comes (the default self-test is over in seconds).
    long_run = ["trtmc-videoqa", "qualify", "--out", "/work/artifacts", "--workload", "synthetic", "--repeats", "200"]
    started = _run([*argv, "--volume", f"{tmp_path}:/work/artifacts", TAG, *long_run], image, timeout=120)
    assert started.returncode == 0, started.stderr
    try:
        deadline = time.monotonic() + 300
        inputs = building(tmp_path, "reference-self-test.synthetic") / "aiperf" / "inputs.jsonl"  # the row's staging
        while time.monotonic() < deadline and not inputs.exists():  # bounded: written just before AIPerf starts
            time.sleep(0.5)  # the inputs file, not the progress lines: it exists before AIPerf's first record
        if not inputs.exists():
            pytest.fail("AIPerf never started in the container")
        time.sleep(3)  # AIPerf is running
        stopped = _run(["docker", "stop", "--time", "60", name], image, timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        code = _run(["docker", "inspect", name, "--format", "{{.State.ExitCode}}"], image, timeout=60).stdout.strip()
        logs = _run(["docker", "logs", name], image, timeout=60)
    finally:
        _run(["docker", "rm", "-f", name], image, timeout=120)
    assert code == "143", logs.stderr[-3000:]
    assert "interrupted (SIGTERM)" in logs.stderr
    rows = [checks.row(tmp_path, p.parent.name) for p in (tmp_path / "checkpoints").glob("*/result.json")]
    assert any(row.status == "interrupted" and row.interruption and row.interruption.stage == "aiperf" for row in rows)
    assert (tmp_path / "report.md").is_file()


def test_stop_removes_the_engine_and_its_directory(engine: dict[str, str], self_test_run: Path) -> None:
    """Last: stop (as the fixture's teardown would) and check that nothing of the engine is left but its image store,
    kept in the cache with the last build and its base alone, for the next engine's build to reuse."""
    engine_dir = Path(engine["TRTMC_VIDEOQA_LOCAL_DOCKER"])
    built = _run(["docker", "image", "inspect", TAG, "--format", "{{.Id}}"], engine, timeout=60).stdout.strip()
    stopped = _run([*(_as_root() or []), "sh", str(LOCAL_DOCKER), "stop", str(engine_dir)], engine, timeout=300)
    assert stopped.returncode == 0, stopped.stderr
    assert not engine_dir.exists()
    assert str(engine_dir) not in Path("/proc/self/mountinfo").read_text()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        assert f"{engine_dir}/" not in cmdline, cmdline
    store = Path(os.environ.get("TRTMC_VIDEOQA_CACHE", "/var/cache/trtmc-videoqa")) / "images"
    if store.parent.stat().st_dev == engine_dir.parent.stat().st_dev:  # kept by a rename only, never a copy
        tags = _run([*(_as_root() or []), "cat", str(store / "image" / "overlay2" / "repositories.json")], engine, 60)
        assert tags.returncode == 0, f"no image store kept in {store}: {stopped.stderr[-2000:]}"
        kept = {
            tag: image for names in json.loads(tags.stdout)["Repositories"].values() for tag, image in names.items()
        }
        assert set(kept) == {"trtmc-videoqa-last-build:cpu", engine["TRTMC_VIDEOQA_BASE_IMAGE"]}  # one build
        assert kept["trtmc-videoqa-last-build:cpu"] == built
