"""Secrets kept out of artifacts: which values are secrets, and their replacement in files we keep."""

from __future__ import annotations

import os
from pathlib import Path

from .atomic_write import write_bytes_atomic

REDACTED = "<redacted>"
# The environment variable a server we start reads its API key from (never its argv).
SERVER_TOKEN_ENV = "TRTMC_SERVE_TOKEN"
# Environment variables whose values are secrets wherever they turn up (hub tokens, the server's API key).
SECRET_ENVS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", SERVER_TOKEN_ENV)


def known_secrets(*given: str | None) -> list[str]:
    """The secrets given (the server's API key), and the environment's tokens when they look like tokens (a value
    of a few characters would be replaced all over the artifacts)."""
    from_env = [os.environ.get(name) or "" for name in SECRET_ENVS]
    return [value for value in given if value] + [value for value in from_env if len(value) >= 8]


def scrub_secrets(paths: list[Path], secrets: list[str]) -> None:
    """Replace every known secret value in these text files (logs of tools we ran) by a placeholder, in place."""
    values = sorted({s for s in secrets if s}, key=len, reverse=True)
    if not values:
        return
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:  # gone, a directory, or not ours to read: nothing of ours to scrub there
            continue
        cleaned = data
        for value in values:
            cleaned = cleaned.replace(value.encode(), REDACTED.encode())
        if cleaned != data:
            write_bytes_atomic(path, cleaned)
