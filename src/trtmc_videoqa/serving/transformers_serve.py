"""Hugging Face `transformers serve` as an upstream comparison server: how it is started and what it is pinned to.

Facts of `transformers serve` 5.24.0 the plan rests on:

- `transformers serve --host H --port N --device D MODEL` preloads MODEL and serves it alone: a request naming any
  other `model` is refused (HTTP 400), so the name the client sends is exactly MODEL.
- MODEL is looked up as a local path first, else it is a hub id, `org/name@revision` naming a revision. A local
  checkpoint is served from its parent folder under its bare folder name, so the name the rows carry has no
  local path in it.
- `GET /health` answers 200 once the server is up (there is no /health/ready).
- It fetches `http://` video URLs itself and refuses base64 `data:` URLs (HTTP 500), so comparisons run over the
  http transport; a hub token reaches it through the environment (HF_TOKEN), never its command line.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import UserError
from ..common.safe_names import safe_name
from ..common.scrub import REDACTED
from ..common.text_escape import one_line
from ..hub.cache import hub_cache_dir

SERVER_NAME = "transformers serve"
HEALTH_PATH = "/health"
_VERSION_TIMEOUT_S = 60.0  # `transformers version` imports the library


class TransformersServeProblem(UserError):
    """`transformers serve` cannot be found or run; the message names the fix."""


@dataclass(frozen=True)
class ServeTarget:
    """What the server is pinned to: the name it serves and clients send, and the folder it starts in."""

    model: str
    cwd: Path | None  # a local checkpoint's parent folder; None for a hub id
    checkpoint: str  # as the rows record it: the hub id, or the local folder's name
    revision: str | None


def serve_target(checkpoint: str, revision: str | None = None) -> ServeTarget:
    """A local checkpoint folder (served by its bare name from its parent), or a hub id pinned to `revision`."""
    local = Path(checkpoint)
    if local.is_dir():
        if revision:
            raise TransformersServeProblem(
                f"--revision {revision} names a hub revision, but {checkpoint} is a local folder; leave it out"
            )
        folder = local.resolve()
        return ServeTarget(model=folder.name, cwd=folder.parent, checkpoint=folder.name, revision=None)
    if checkpoint.count("/") != 1 or "@" in checkpoint or checkpoint.startswith(("/", ".")):
        raise TransformersServeProblem(
            f"--checkpoint {checkpoint!r} is neither a local folder nor a hub id (org/name); "
            "give the checkpoint's hub id, with --revision for a revision"
        )
    model = f"{checkpoint}@{revision}" if revision else checkpoint
    return ServeTarget(model=model, cwd=None, checkpoint=checkpoint, revision=revision)


def serve_notes(target: ServeTarget) -> list[str]:
    """What the recorded serve command says before it: a local checkpoint is served by its folder's bare name (the
    model name the requests carry), so the command runs in the folder that holds it, not the artifacts folder."""
    if target.cwd is None:
        return []
    return [
        f"run this in the folder that holds the checkpoint folder {target.model}: transformers serve names the "
        "model by the path it is given, and the requests below name it so"
    ]


def serve_argv(
    executable: Path, target: ServeTarget, *, host: str, port: int, device: str, dtype: str = "auto"
) -> list[str]:
    """The server's command line: loopback unless told otherwise, one model, info-level log (kept in the row)."""
    return [
        str(executable),
        "serve",
        "--host",
        host,
        "--port",
        str(port),
        "--device",
        device,
        "--dtype",
        dtype,
        "--log-level",
        "info",
        target.model,
    ]


def find_transformers(explicit: Path | None = None) -> Path:
    """The `transformers` console script: the one given, else this interpreter's environment's, else PATH's."""
    if explicit is not None:
        if not explicit.is_file():
            raise TransformersServeProblem(f"--transformers {explicit}: no such file; give the `transformers` script")
        return explicit
    beside = Path(sys.executable).with_name("transformers")
    if beside.is_file():
        return beside
    found = shutil.which("transformers")
    if found:
        return Path(found)
    raise TransformersServeProblem(
        "`transformers` is not installed here; install the pinned comparison stack with "
        "`pip install -e '.[real-server]'` (transformers[serving], torch, torchvision, torchcodec) and Debian's "
        "ffmpeg, or name the script with --transformers PATH"
    )


def parse_version(text: str) -> str | None:
    """The version `transformers version` prints (its last non-empty line, e.g. '5.24.0')."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    last = lines[-1].split()[-1]
    return last if last[:1].isdigit() else None


def server_version(executable: Path) -> str | None:
    """The library version of the server's own environment (None when it does not say): read from its installed
    metadata by the script's own Python where its `#!` line names one (a fraction of a second), else from
    `transformers version`, which imports the library (half a minute on two busy cores)."""
    interpreter = script_interpreter(executable)
    if interpreter is not None:
        version = _version_from([str(interpreter), "-I", "-c", _METADATA_VERSION])
        if version is not None:
            return version
    return _version_from([str(executable), "version"])


_METADATA_VERSION = "from importlib.metadata import version; print(version('transformers'))"


def _version_from(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_VERSION_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_version(done.stdout) if done.returncode == 0 else None


def script_interpreter(executable: Path) -> Path | None:
    """The Python a console script runs under, from its `#!` line (pip writes the interpreter's absolute path);
    None for any other first line (`/usr/bin/env python`, a shell wrapper, a binary)."""
    try:
        with executable.open("rb") as handle:
            first = handle.readline(1024)
    except OSError:
        return None
    parts = first[2:].decode(errors="replace").split() if first.startswith(b"#!") else []
    if len(parts) != 1:
        return None
    interpreter = Path(parts[0])
    usable = interpreter.is_absolute() and interpreter.name.startswith("python") and interpreter.is_file()
    return interpreter if usable else None


# --- what this machine lacks, before the server starts and from its log after it failed ----------------------------

# A CUDA device's node, one per kind of driver torch's `cuda` device runs on: NVIDIA's (its devices, or the driver's
# version file), WSL's GPU node, and ROCm's (ROCm builds of torch speak `cuda` too). None of them: no CUDA device.
GPU_DEVICE_FILES = ("/dev/nvidia[0-9]*", "/proc/driver/nvidia/version", "/dev/dxg", "/dev/kfd")
_TRUE = frozenset({"1", "ON", "YES", "TRUE"})  # as huggingface_hub reads its boolean variables
_LOG_TAIL_BYTES = 64 << 10  # the server's log is read from its last 64 KiB
_LINE_CHARS = 240  # an error line shown in a row is cut to this many characters
# The log's words for a machine without a CUDA device (torch's), and for a checkpoint that is not on this machine and
# cannot be fetched (huggingface_hub's and transformers', offline or without a network).
NO_CUDA_SIGNS = (
    "Found no NVIDIA driver",
    "Torch not compiled with CUDA enabled",
    "No CUDA GPUs are available",
    "no CUDA-capable device is detected",
)
NOT_HERE_SIGNS = (
    "OfflineModeIsEnabled",
    "LocalEntryNotFoundError",
    "outgoing traffic has been disabled",
    "couldn't connect to",
    "Cannot find the requested files in the local cache",
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception)\b")
# An absolute or home-relative path: not after a character that continues a word, a URL or a path.
_LOCAL_PATH = re.compile(r"(?<![\w.~:/@-])~?/[^\s'\"`,;()\[\]<>]+")


@dataclass(frozen=True)
class Lack:
    """Something this machine lacks for the server: what, in words for the row, and how to get past it."""

    what: str
    hint: str


def cuda_device_visible(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a CUDA device may be there for the server, read off the device nodes (importing torch to ask takes
    seconds): False only when none can be, no GPU device node or CUDA_VISIBLE_DEVICES hiding them all."""
    env = os.environ if environ is None else environ
    hidden = env.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1"):
        return False
    return any(glob.glob(pattern) for pattern in GPU_DEVICE_FILES)


def hub_cached(checkpoint: str, revision: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the hub cache holds `checkpoint` at `revision` (a branch, tag or commit; default main): its ref, or
    the revision itself, names a snapshot that holds files. Looked up, never downloaded."""
    folder = hub_cache_dir(environ) / f"models--{checkpoint.replace('/', '--')}"
    wanted = revision or "main"
    if not all(map(safe_name, [*checkpoint.split("/"), *wanted.split("/")])):
        return False
    try:
        commit = (folder / "refs" / wanted).read_text().strip()
    except (OSError, UnicodeDecodeError):
        commit = wanted
    snapshot = folder / "snapshots" / commit
    try:
        return bool(commit) and safe_name(commit) and any(snapshot.iterdir())
    except OSError:  # no such snapshot
        return False


def hub_offline(environ: Mapping[str, str] | None = None) -> str | None:
    """The variable that keeps the hub offline here (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE), or None."""
    env = os.environ if environ is None else environ
    return next(
        (n for n in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") if env.get(n, "").strip().upper() in _TRUE), None
    )


def machine_lacks(target: ServeTarget, device: str, environ: Mapping[str, str] | None = None) -> list[Lack]:
    """What this machine lacks to serve `target` on `device`, known before the server starts: a CUDA device, the
    checkpoint (a hub id not in the hub cache while the hub is set offline). The tool itself never contacts the hub:
    where the server fails to fetch a checkpoint, its log says so (`lack_in_log`)."""
    env = os.environ if environ is None else environ
    lacks = []
    if device.startswith("cuda") and not cuda_device_visible(env):
        lacks.append(Lack(f"no CUDA device on this machine for --device {device}", NO_CUDA_HINT))
    if target.cwd is None and not hub_cached(target.checkpoint, target.revision, env):
        at = f"{target.checkpoint}@{target.revision or 'main'}"
        offline = hub_offline(env)
        if offline is not None:
            lacks.append(Lack(f"{at} is not in this machine's hub cache and {offline} is set", download_hint(target)))
    return lacks


NO_CUDA_HINT = "run with --device cpu (a small model only), or on a machine with a GPU and its driver"


def download_hint(target: ServeTarget) -> str:
    revision = f" --revision {target.revision}" if target.revision else ""
    return f"download it where the hub is reachable (`hf download {target.checkpoint}{revision}`) into this hub cache"


def log_tail(path: Path) -> str:
    """The last 64 KiB of the server's log as text, its colour codes removed ("" when there is none)."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - _LOG_TAIL_BYTES))
            data = handle.read(_LOG_TAIL_BYTES)
    except OSError:
        return ""
    return _ANSI.sub("", data.decode("utf-8", errors="replace"))


def error_line(log: str) -> str:
    """The log's last error line: an exception's (a traceback's last line), else the last that says error, else
    the last line; "" for an empty log."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for pick in (_EXCEPTION_LINE.match, lambda line: "error" in line.lower(), bool):
        found = [line for line in lines if pick(line)]
        if found:
            return found[-1]
    return ""


def public_line(text: str, secrets: list[str]) -> str:
    """A line from a server's log as a public row may show it: one line, known secrets and every local path
    replaced, cut short."""
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    line = _LOCAL_PATH.sub("<path>", one_line(text))
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"


def lack_in_log(log: str, target: ServeTarget) -> Lack | None:
    """What the machine lacks, as the server's log says it: no CUDA device, or a hub id it could not fetch."""
    if any(sign in log for sign in NO_CUDA_SIGNS):
        return Lack("no CUDA device the server could use", NO_CUDA_HINT)
    if target.cwd is None and any(sign in log for sign in NOT_HERE_SIGNS):
        return Lack(f"{target.checkpoint} is not on this machine and could not be fetched", download_hint(target))
    return None
