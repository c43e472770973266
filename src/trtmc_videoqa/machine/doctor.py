"""`doctor`: is this machine ready, and what to do where it is not. Checks only; the CLI renders.

The checks of what `compare` needs (transformers, torch, torchcodec with the FFmpeg libraries it loads, FFmpeg) are
`needed_for="compare"`: optional for `qualify`, so a missing one is a warning, never a failure of the machine.
"""

from __future__ import annotations

import ctypes.util
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
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
    needed_for: Literal["qualify", "compare"] = "qualify"  # compare's parts are optional for qualify


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
    detail = f"av {av.__version__}, its own libavcodec {ffmpeg}"  # bundled: not the FFmpeg torchcodec loads
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


# What `compare` installs (pyproject's real-server extra) and what torchcodec decodes through (Debian's ffmpeg).
COMPARE_EXTRA = "pip install -e '.[real-server]' (transformers[serving], torch, torchvision, torchcodec)"
FFMPEG_FIX = "apt-get install -y ffmpeg (Debian, Ubuntu): torchcodec loads FFmpeg's shared libraries, 4 to 7"
# Importing torchcodec loads its FFmpeg libraries (it raises without them) and no model; it imports torch, so it is
# the check only where torchcodec's own files cannot say (`_linked_ffmpeg`).
_TORCHCODEC_PROBE = (
    "import json, torchcodec; "
    "print(json.dumps([torchcodec.__version__, getattr(torchcodec, 'ffmpeg_major_version', None)]))"
)
_PROBE_TIMEOUT_S = 120  # it imports torch


def _for_compare(name: str, level: Level, detail: str, fix: str = "") -> Check:
    return Check(name=name, level=level, detail=detail, fix=fix if level != "ok" else "", needed_for="compare")


def _package(distribution: str, module: str) -> str | None:
    """The installed version of `distribution` where `module` is importable, else None (nothing imported)."""
    if importlib.util.find_spec(module) is None:
        return None
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


def _transformers() -> Check:
    version = _package("transformers", "transformers")
    if version is None:
        return _for_compare("transformers", "warn", "not installed", COMPARE_EXTRA)
    serving = [m for m in ("fastapi", "uvicorn", "openai") if importlib.util.find_spec(m) is None]
    script = Path(sys.executable).with_name("transformers")
    found = str(script) if script.is_file() else shutil.which("transformers")
    if serving or not found:
        missing = [f"its serving extra ({', '.join(serving)})"] * bool(serving) + ["its `transformers` script"] * (
            not found
        )
        return _for_compare("transformers", "warn", f"{version}, without {' and '.join(missing)}", COMPARE_EXTRA)
    return _for_compare("transformers", "ok", f"{version}, `transformers serve` at {found}")


def _torch() -> Check:
    version = _package("torch", "torch")
    if version is None:
        return _for_compare("torch", "warn", "not installed", COMPARE_EXTRA)
    return _for_compare("torch", "ok", version)


def _torchcodec() -> Check:
    version = _package("torchcodec", "torchcodec")
    if version is None:
        return _for_compare("torchcodec", "warn", "not installed", COMPARE_EXTRA)
    # The package on the path, as the server's process will find it: not one this process imported already
    # (importlib.util.find_spec would return that module's spec).
    spec = importlib.machinery.PathFinder.find_spec("torchcodec", sys.path)
    folders = list(spec.submodule_search_locations or []) if spec else []
    linked = _linked_ffmpeg(Path(folders[0])) if folders else None
    if linked is None:  # not to be told from its files: import it (and torch), as the server will
        return _imported_torchcodec(version)
    major, missing = linked
    if major is None:
        shown = ", ".join(dict.fromkeys(missing))
        return _for_compare("torchcodec", "warn", f"{version}, its FFmpeg libraries are missing: {shown}", FFMPEG_FIX)
    return _for_compare("torchcodec", "ok", f"{version}, FFmpeg {major} libraries found for it")


_CORE = re.compile(r"libtorchcodec_core(\d+)\.so")


def _linked_ffmpeg(package: Path) -> tuple[int | None, list[str]] | None:
    """torchcodec tries its core library for each FFmpeg major version, newest first, and keeps the first whose
    FFmpeg libraries all load: (that major, []) as `ldd` resolves them, or (None, the libraries not found); None
    where its files cannot tell (no `ldd`, no core library)."""
    ldd = shutil.which("ldd")
    cores = sorted(
        (
            (int(m.group(1)), path)
            for path in package.glob("libtorchcodec_core*.so")
            if (m := _CORE.fullmatch(path.name))
        ),
        reverse=True,
    )
    if ldd is None or not cores:
        return None
    missing: list[str] = []
    for major, core in cores:
        done = _run([ldd, str(core)])
        if done is None or done.returncode != 0:
            return None
        lines = [line.split() for line in done.stdout.splitlines()]
        lost = [w[0] for w in lines if w and w[0].startswith(("libav", "libsw")) and "not found" in " ".join(w)]
        if not lost:
            return major, []
        missing += lost
    return None, missing


def _imported_torchcodec(version: str) -> Check:
    """Import torchcodec in a child interpreter: it loads its FFmpeg libraries then, and raises without them."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _TORCHCODEC_PROBE], capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return _for_compare("torchcodec", "warn", f"{version}; importing it failed: {error}", FFMPEG_FIX)
    if done.returncode != 0:  # without FFmpeg's libraries: "RuntimeError: Could not load libtorchcodec. ..."
        errors = [line.strip() for line in done.stderr.splitlines() if "Error:" in line]
        why = (errors or done.stderr.strip().splitlines()[-1:] or ["no message"])[-1][:300]
        return _for_compare("torchcodec", "warn", f"{version}, cannot load: {why}", FFMPEG_FIX)
    try:
        _, major = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        major = None
    loaded = f"FFmpeg {major} libraries loaded" if major else "FFmpeg libraries loaded"
    return _for_compare("torchcodec", "ok", f"{version}, {loaded}")


def _ffmpeg() -> Check:
    program = shutil.which("ffmpeg")
    library = ctypes.util.find_library("avcodec")  # what torchcodec loads; PyAV's own copy is not it
    if program and library:
        done = _run([program, "-hide_banner", "-version"])
        first = (done.stdout.splitlines() or [""])[0] if done is not None else ""
        return _for_compare("ffmpeg", "ok", f"{first or program}; {library}")
    missing = [name for name, found in (("the ffmpeg program", program), ("libavcodec", library)) if not found]
    return _for_compare("ffmpeg", "warn", f"not found: {' and '.join(missing)}", FFMPEG_FIX)


CHECKS: tuple[Callable[[], Check], ...] = (
    _python,
    _av,
    _aiperf,
    _loopback_port,
    _docker,
    _gpu,
    _trtmc,
    _transformers,
    _torch,
    _torchcodec,
    _ffmpeg,
)


def run_checks() -> list[Check]:
    return [check() for check in CHECKS]
