"""`doctor`: is this machine ready, and what to do where it is not. Checks only; the CLI renders."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel

from ..aiperf.locate import AiperfProblem, locate_aiperf
from ..common.pins import load_pins
from .gpu import query_gpus

Level = Literal["ok", "warn", "fail"]


class Check(BaseModel):
    name: str
    level: Level
    detail: str
    fix: str = ""


def _python() -> Check:
    version = sys.version_info
    if (3, 11) <= version[:2] < (3, 14):
        return Check(name="python", level="ok", detail=sys.version.split()[0])
    return Check(name="python", level="fail", detail=sys.version.split()[0], fix="use Python 3.11, 3.12 or 3.13")


def _av() -> Check:
    try:
        import av
    except ImportError:
        return Check(name="av (PyAV)", level="fail", detail="not installed", fix="pip install 'av>=18.1,<20'")
    missing = []
    needed: tuple[tuple[str, Literal["r", "w"]], ...] = (("h264", "r"), ("libx264", "w"), ("vp9", "r"), ("mpeg4", "r"))
    for codec, mode in needed:
        try:
            av.Codec(codec, mode)
        except Exception:  # PyAV raises its own error types per version
            missing.append(f"{codec} ({'decode' if mode == 'r' else 'encode'})")
    ffmpeg = ".".join(str(part) for part in av.library_versions.get("libavcodec", ()))
    detail = f"av {av.__version__}, libavcodec {ffmpeg}"
    if missing:
        return Check(
            name="av (PyAV)",
            level="fail",
            detail=f"{detail}; missing codecs: {', '.join(missing)}",
            fix="reinstall the PyAV wheel from PyPI (it bundles these codecs)",
        )
    return Check(name="av (PyAV)", level="ok", detail=f"{detail}; h264 decode, libx264 encode, vp9, mpeg4")


def _aiperf() -> Check:
    expected = load_pins().aiperf.version
    try:
        install = locate_aiperf(expected_version=expected)
    except AiperfProblem as problem:
        return Check(
            name="aiperf", level="fail", detail=str(problem).split(";")[0], fix=str(problem).split(";", 1)[-1].strip()
        )
    return Check(name="aiperf", level="ok", detail=f"{install.version} ({install.source}) at {install.executable}")


def _loopback_port() -> Check:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    except OSError as error:
        return Check(
            name="loopback port",
            level="fail",
            detail=str(error),
            fix="free a port on 127.0.0.1; the servers bind loopback only",
        )
    return Check(name="loopback port", level="ok", detail=f"127.0.0.1:{port} was free")


def _run(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _docker() -> Check:
    if not shutil.which("docker"):
        return Check(
            name="docker",
            level="warn",
            detail="no docker client on PATH",
            fix="only the local container run needs it: install docker.io (Debian) or Docker Engine",
        )
    done = _run(["docker", "info", "--format", "{{.ServerVersion}}"])
    if done is None or done.returncode != 0:
        return Check(
            name="docker",
            level="warn",
            detail="docker client present, no daemon answered",
            fix="start the Docker daemon (or set DOCKER_HOST) for the local container run",
        )
    return Check(name="docker", level="ok", detail=f"daemon {done.stdout.strip()}")


def _gpu() -> Check:
    if not shutil.which("nvidia-smi"):
        return Check(
            name="gpu",
            level="warn",
            detail="no nvidia-smi: no NVIDIA GPU here",
            fix="qualification of TRTMC checkpoints needs a GPU runner; the self-test does not",
        )
    done = query_gpus()
    if done is None or done.returncode != 0:
        return Check(
            name="gpu",
            level="warn",
            detail="nvidia-smi present but failed",
            fix="check the NVIDIA driver (nvidia-smi must list the GPU)",
        )
    return Check(name="gpu", level="ok", detail="; ".join(done.stdout.strip().splitlines()))


def _trtmc() -> Check:
    found = {tool: shutil.which(tool) for tool in ("trtmc", "trtmc-server")}
    missing = [tool for tool, path in found.items() if not path]
    if missing:
        return Check(
            name="trtmc",
            level="warn",
            detail=f"not on PATH: {', '.join(missing)}",
            fix="qualification builds and serves bundles with TRTMC: use the runtime container "
            "(`dagger call runtime`) or build TRTMC from source",
        )
    return Check(name="trtmc", level="ok", detail=", ".join(f"{t} at {p}" for t, p in found.items()))


CHECKS: tuple[Callable[[], Check], ...] = (_python, _av, _aiperf, _loopback_port, _docker, _gpu, _trtmc)


def run_checks() -> list[Check]:
    return [check() for check in CHECKS]
