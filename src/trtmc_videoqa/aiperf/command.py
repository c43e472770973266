"""The exact `aiperf profile` argv, built as a list (never a shell string); a reproducible form hides secrets."""

from __future__ import annotations

import shlex
from pathlib import Path

from pydantic import BaseModel, ConfigDict

API_KEY_PLACEHOLDER = "$TRTMC_SERVE_TOKEN"


class AiperfSettings(BaseModel):
    model_config = ConfigDict(frozen=True)
    url: str
    model: str
    tokenizer: str
    input_file: str
    artifact_dir: str
    warmup_requests: int
    profiling_requests: int
    concurrency: int = 1
    request_timeout_s: float = 120.0
    streaming: bool = False
    api_key: str | None = None


def profile_argv(executable: str, settings: AiperfSettings, *, reveal_secrets: bool = True) -> list[str]:
    argv = [
        executable,
        "profile",
        "--model",
        settings.model,
        "--url",
        settings.url,
        "--endpoint-type",
        "chat",
        "--tokenizer",
        settings.tokenizer,
        "--input-file",
        settings.input_file,
        "--custom-dataset-type",
        "single_turn",
        "--dataset-sampling-strategy",
        "sequential",
        "--request-count",
        str(settings.profiling_requests),
        "--concurrency",
        str(settings.concurrency),
        "--request-timeout-seconds",
        f"{settings.request_timeout_s:g}",
        "--export-level",
        "raw",
        "--artifact-dir",
        settings.artifact_dir,
        "--ui",
        "none",
        "--no-gpu-telemetry",
        "--no-server-metrics",
    ]
    if settings.warmup_requests:
        argv += ["--warmup-request-count", str(settings.warmup_requests)]
    if settings.streaming:
        argv.append("--streaming")
    if settings.api_key:
        argv += ["--api-key", settings.api_key if reveal_secrets else API_KEY_PLACEHOLDER]
    return argv


def reproducible_command(argv: list[str]) -> str:
    """For command.txt and reports: shell-quoted, with any secret already replaced by its placeholder."""
    return " ".join(API_KEY_PLACEHOLDER if part == API_KEY_PLACEHOLDER else shlex.quote(part) for part in argv)


def artifact_path(settings: AiperfSettings, name: str) -> Path:
    return Path(settings.artifact_dir) / name
