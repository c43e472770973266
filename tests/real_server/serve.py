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
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from trtmc_videoqa.serving.process import ServerProcess, free_loopback_port
from trtmc_videoqa.serving.transformers_serve import HEALTH_PATH, ServeTarget, serve_argv, serve_target

STARTUP_TIMEOUT_S = 120.0  # imports torch and loads the model before /health answers; ~10 s on two cores


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
        # One torch thread: beside the suite's other workers on two cores, a second one mostly waits for a core
        # (the in-process check of every framing took 121 s in the suite, 20 s alone; one thread alone is as fast).
        OMP_NUM_THREADS="1",
    )
    return env


@contextmanager
def transformers_serve(
    model_dir: Path, log: Path, *, by_path: bool = False, timeout_s: float = STARTUP_TIMEOUT_S
) -> Iterator[str]:
    """`transformers serve` pinned to `model_dir` on a free loopback port, healthy, started the way
    `trtmc-videoqa compare` starts it; yields its base URL and stops the server's process group on exit. The model
    is named by `model_dir.name`; with `by_path`, by its absolute path, as `transformers serve DIR` names it."""
    target = serve_target(str(model_dir))
    if by_path:
        target = ServeTarget(model=str(model_dir.resolve()), cwd=None, checkpoint=target.checkpoint, revision=None)
    port = free_loopback_port()
    argv = serve_argv(serve_executable(), target, host="127.0.0.1", port=port, device="cpu")
    url = f"http://127.0.0.1:{port}"
    with ServerProcess(
        argv,
        url=url,
        log_path=log,
        startup_timeout_s=timeout_s,
        env=offline_env(log.parent / "hf-home"),
        cwd=target.cwd,
        ready_path=HEALTH_PATH,
    ):
        yield url


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
