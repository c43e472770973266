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

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..common.errors import UserError

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
    """The library version of the server's own environment (None when it does not say)."""
    try:
        done = subprocess.run(
            [str(executable), "version"], capture_output=True, text=True, timeout=_VERSION_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_version(done.stdout) if done.returncode == 0 else None
