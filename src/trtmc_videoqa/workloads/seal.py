"""Record a workload's computed fields on purpose: clip sizes and sha256, rendered prompts, digest.

    python -m trtmc_videoqa.workloads.seal path/to/workload.json

Loading never does this: a clip or question that changed is refused until someone seals the new identity here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..common.atomic_write import write_text_atomic
from ..common.digests import file_sha256
from .digest import workload_digest
from .loading import (
    WORKLOAD_FILE_NAME,
    WorkloadError,
    resolve_inside,
)
from .model import PromptTemplate, Question, WorkloadFile
from .prompts import rendered_prompt

_PLACEHOLDER_SHA256 = "0" * 64


def sealed(raw: dict[str, Any], path: Path) -> WorkloadFile:
    """``raw`` (a parsed workload file, computed fields optional) with every computed field filled in."""
    raw = json.loads(json.dumps(raw))  # a private deep copy
    try:
        template = PromptTemplate.model_validate(raw.get("prompt_template", {}))
        questions = [Question.model_validate(question) for question in raw.get("questions", [])]
    except ValidationError as error:
        raise WorkloadError(f"{path}: cannot render prompts: {error}") from error
    raw["prompts"] = [rendered_prompt(template, question).model_dump(mode="json") for question in questions]
    for clip in raw.get("clips", []):
        clip_file = resolve_inside(path.parent, str(clip.get("file", "")), path, f"clip {clip.get('id')!r}")
        if not clip_file.is_file():
            raise WorkloadError(f"{path}: clip {clip.get('id')!r} file {clip_file} is missing")
        clip["bytes"], clip["sha256"] = clip_file.stat().st_size, file_sha256(clip_file)
    raw["digest"] = _PLACEHOLDER_SHA256
    try:
        draft = WorkloadFile.model_validate(raw)
    except ValidationError as error:
        raise WorkloadError(f"{path}: does not match the workload schema: {error}") from error
    return draft.model_copy(update={"digest": workload_digest(draft)})


def workload_json(spec: WorkloadFile) -> str:
    return json.dumps(spec.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False) + "\n"


def seal_workload_file(path: str | Path) -> WorkloadFile:
    """Fill in the computed fields of the workload file at ``path`` and rewrite it atomically."""
    file = Path(path)
    if file.is_dir():
        file = file / WORKLOAD_FILE_NAME
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WorkloadError(f"{file}: cannot read it as JSON ({error})") from error
    spec = sealed(raw, file)
    write_text_atomic(file, workload_json(spec))
    return spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Record clip identities, rendered prompts and the digest.")
    parser.add_argument("workload", type=Path, help="workload.json, or the directory holding it")
    args = parser.parse_args(argv)
    spec = seal_workload_file(args.workload)
    print(f"{spec.name}: digest {spec.digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
