"""The exact `aiperf profile` argv, built as a list (never a shell string), with no secret in it.

A server API key never goes on AIPerf's command line, where `ps` shows it to every user for the whole run. AIPerf
0.13.0 reads a key only from `--api-key` or from its YAML config (`--config`), where `${VAR}` is substituted from
the environment when the file is loaded. So a run with a key writes a small config file that names the variable
(`api_key: ${TRTMC_SERVE_TOKEN}`) and gives AIPerf the key in that variable; the config file holds no secret and
is kept with the artifacts. AIPerf refuses command-line dataset flags on top of a config whose dataset is of
another kind, so the file declares the same file dataset the flags name; the flags then set everything else.

The command a row records (`recorded_argv`) runs as written from a copy of the artifacts folder, offline
(docs/public-evidence.md): it clears Hugging Face's offline switches as the run did for AIPerf (aiperf/tokenizer.py:
AIPerf 0.13.0 reads a tokenizer folder only outside offline mode, and then from disk, downloading nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..common.scrub import SERVER_TOKEN_ENV
from .tokenizer import OFFLINE_SWITCHES

API_KEY_ENV = SERVER_TOKEN_ENV  # the variable AIPerf reads the key from, through its config file: the server's own
API_KEY_PLACEHOLDER = f"${API_KEY_ENV}"  # in common/shell_quoting.py's SECRET_PLACEHOLDERS


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
    request_rate: float | None = None  # requests per second: AIPerf's rate mode, in place of the concurrency
    request_timeout_s: float = 120.0
    streaming: bool = False
    api_key: str | None = None
    config_file: str | None = None  # written by key_config_yaml when api_key is set: the key travels through it


def profile_argv(executable: str, settings: AiperfSettings) -> list[str]:
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
        *(
            ["--request-rate", f"{settings.request_rate:g}"]
            if settings.request_rate is not None
            else ["--concurrency", str(settings.concurrency)]
        ),
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
        # AIPerf builds a prompt generator even for a file dataset and, with its default corpus, tokenizes 5 MB of
        # sonnets first (about 5 s of CPU a run). Our prompts are taken verbatim from the input file, which this
        # option does not touch (the same inputs.json either way); `random` draws from the vocabulary and loads no
        # corpus.
        "--prompt-corpus",
        "random",
    ]
    if settings.warmup_requests:
        argv += ["--warmup-request-count", str(settings.warmup_requests)]
    if settings.streaming:
        argv.append("--streaming")
    if settings.api_key:
        if not settings.config_file:
            raise ValueError("an API key travels to AIPerf through its config file; none was given")
        argv += ["--config", settings.config_file]
    return argv


def recorded_argv(settings: AiperfSettings) -> list[str]:
    """The `aiperf profile` command a row records, as the run ran it: the offline switches cleared (`env -u
    HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE aiperf profile ...`), aiperf by the name `pip install aiperf` gives it,
    every file by its absolute path, which the publish step writes relative to the artifacts folder."""
    cleared = [part for switch in OFFLINE_SWITCHES for part in ("-u", switch)]
    return ["env", *cleared, *profile_argv("aiperf", settings)]


def key_config_yaml(input_file: str) -> str:
    """AIPerf's config file for a run with an API key: the key by variable, the dataset as the flags name it."""
    return (
        "# Written by trtmc-videoqa: AIPerf reads the server's API key from the environment variable below when it\n"
        "# loads this file, so the key is never on a command line. The command-line flags set everything else.\n"
        'schemaVersion: "2.0"\n'
        "benchmark:\n"
        "  endpoint:\n"
        f"    api_key: ${{{API_KEY_ENV}}}\n"
        "  dataset:\n"
        "    type: file\n"
        f"    path: {json.dumps(input_file)}\n"
        "    format: single_turn\n"
        "  phases:\n"
        "    type: concurrency\n"
        "    concurrency: 1\n"
        "    requests: 1\n"
    )


def key_environment(settings: AiperfSettings) -> dict[str, str]:
    """The variable that carries the key to AIPerf (empty when the run has none)."""
    return {API_KEY_ENV: settings.api_key} if settings.api_key else {}


def artifact_path(settings: AiperfSettings, name: str) -> Path:
    return Path(settings.artifact_dir) / name
