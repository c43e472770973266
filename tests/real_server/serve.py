"""Hugging Face `transformers serve` (transformers[serving] 5.24.0) as a subprocess on 127.0.0.1, on the CPU, offline.

What works, found by hand against 5.24.0:

- `transformers serve --host 127.0.0.1 --port N --device cpu MODEL`: MODEL (the optional FORCE_MODEL argument) pins
  the server to one model and loads it at start; a request naming any other `model` is refused (HTTP 400). A
  model is looked up as a local path first (`os.path.exists`), so the server runs in the checkpoint's parent
  folder and MODEL is the folder's bare name: the same name the client sends, with no "/" in it, so the row's
  profile is that name too.
- `GET /health` answers `{"status": "ok"}` once uvicorn is up (there is no /health/ready).
- `POST /v1/chat/completions` takes `{"type": "video_url", "video_url": {"url": "http://..."}}` parts: the server
  fetches the URL and decodes it with torchcodec (which needs ffmpeg's libraries). A base64 `data:` URL is refused
  with HTTP 500 ("Incorrect format used for video"). Top-level `chat_template_kwargs` reach the processor's
  `apply_chat_template`, e.g. `{"num_frames": 8}`.
- `usage.prompt_tokens` counts the video's placeholder tokens: with the tiny model of tiny_vlm.py, 8 frames of the
  320x180 Big Buck Bunny clip are 578 prompt tokens more than the same question as text alone.
- Offline: HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE, and HF_HUB_DISABLE_UPDATE_CHECK (the CLI otherwise asks PyPI
  for a newer transformers once a day); HF_HOME points into the test's tmp folder, so nothing is stored outside.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

from trtmc_videoqa.serving.process import free_loopback_port

STARTUP_TIMEOUT_S = 120.0  # imports torch and loads the model before /health answers; ~10 s on two cores
STOP_GRACE_S = 10.0


def serve_executable() -> Path:
    """The `transformers` console script of this interpreter's environment."""
    return Path(sys.executable).with_name("transformers")


def offline_env(hf_home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HUB_DISABLE_UPDATE_CHECK="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HOME=str(hf_home),
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    with httpx.Client(timeout=5.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"transformers serve exited with {process.returncode}:\n{log.read_text()[-4000:]}")
            try:
                response = client.get(url + "/health")
                if response.status_code == 200:
                    return
                last = f"HTTP {response.status_code}"
            except httpx.HTTPError as error:
                last = type(error).__name__
            time.sleep(0.5)
    raise RuntimeError(f"transformers serve not healthy within {timeout_s:g} s ({last}):\n{log.read_text()[-4000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's own process group, SIGKILL after the grace time; only the group we started."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def transformers_serve(model_dir: Path, log: Path, *, timeout_s: float = STARTUP_TIMEOUT_S) -> Iterator[str]:
    """`transformers serve` pinned to `model_dir` on a free loopback port, healthy; yields its base URL and kills
    the server on exit. The model is named by `model_dir.name` (see the module docstring)."""
    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(serve_executable()), "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    argv += ["--log-level", "info", model_dir.name]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            argv,
            cwd=model_dir.parent,
            env=offline_env(log.parent / "hf-home"),
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        _wait_healthy(url, process, log, timeout_s)
        yield url
    finally:
        _stop(process)
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # anything it left behind in its group


def chat(url: str, model: str, content: str | list[dict[str, object]], **extra: object) -> dict[str, object]:
    """One non-streaming chat completion (greedy, 16 tokens); the response body, or an AssertionError naming it."""
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 16, "temperature": 0}
    response = httpx.post(url + "/v1/chat/completions", json={**body, **extra}, timeout=120.0, trust_env=False)
    assert response.status_code == 200, f"HTTP {response.status_code}: {response.text[:2000]}"
    return dict(response.json())


def prompt_tokens(response: dict[str, object]) -> int:
    usage = response.get("usage")
    assert isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int), response
    return int(usage["prompt_tokens"])
