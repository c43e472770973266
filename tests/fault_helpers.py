"""What the fault tests (test_faults.py, test_faults_answers.py) share: the small endpoint run they make, and how
they read what a run and its server recorded."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers import QUICK, qualify

from trtmc_videoqa.reference import DEFAULT_MODEL_NAME

MODEL = DEFAULT_MODEL_NAME
LOCK = ".trtmc-videoqa.lock"


def endpoint(url: str, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return qualify("--endpoint", url, "--model", MODEL, *QUICK, "--out", str(out), *extra, env=env)


def requests_file(out: Path, profile: str = MODEL) -> list[dict]:
    path = out / "checkpoints" / profile / "requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def server_records(tmp: Path, name: str = "reference") -> list[dict]:
    path = tmp / f"{name}-records.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
