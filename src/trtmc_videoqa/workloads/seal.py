"""Record a workload's computed fields on purpose: clip sizes and sha256, each clip's video facts as a probe finds
them (frames, size, frame rate, codec, pixel format, audio), rendered prompts, digest.

    python -m trtmc_videoqa.workloads.seal path/to/workload.json

Loading never does this: a clip or question that changed is refused until someone seals the new identity here. A
clip AIPerf 0.13.0 will not send (it reads only .mp4 and .webm files) is refused here, naming the formats it takes;
bad input is one line on stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..common.atomic_write import write_text_atomic
from ..common.digests import file_sha256
from ..common.errors import UserError
from ..results.layout import WORKLOAD_FILE
from .digest import workload_digest
from .loading import (
    WorkloadError,
    resolve_inside,
)
from .model import PromptTemplate, Question, WorkloadFile
from .prompts import rendered_prompt

_PLACEHOLDER_SHA256 = "0" * 64
# The clip files AIPerf 0.13.0 sends (aiperf/dataset/utils.py open_video: by file suffix; anything else it refuses
# before the first request).
AIPERF_CLIP_SUFFIXES = (".mp4", ".webm")


def aiperf_clip_problem(clip_file: Path) -> str | None:
    """Why AIPerf would refuse to send this clip file, or None."""
    if clip_file.suffix.lower() in AIPERF_CLIP_SUFFIXES:
        return None
    return (
        f"clip file {clip_file.name} is a {clip_file.suffix or 'suffix-less'} file, which AIPerf 0.13.0 does not send "
        f"(it takes {' and '.join(s.lstrip('.') for s in AIPERF_CLIP_SUFFIXES)}); re-encode it as mp4 or webm"
    )


def _schema_problem(error: ValidationError) -> str:
    """A pydantic error as one line: the first problem, where it is, and how many there are."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "the file"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _video_facts(clip_file: Path, recorded: dict[str, Any]) -> dict[str, Any]:
    """The clip's video facts as a probe of its bytes finds them (what loading checks against the recording). A
    clip that cannot be probed (corrupt, truncated, not a video) keeps the facts recorded: sealing records its
    identity, and a run refuses the clip before anything is sent, naming what is wrong with it."""
    from ..media import ClipError, probe_clip

    try:
        manifest = probe_clip(clip_file)  # as loading probes it (workloads/artifacts.py)
    except ClipError:
        return recorded
    numerator, _, denominator = manifest.fps.partition("/")
    return recorded | {
        "width": manifest.width,
        "height": manifest.height,
        "fps": numerator if denominator in ("", "1") else manifest.fps,
        "frames": manifest.frames_counted,
        "codec": manifest.codec.name,
        "pix_fmt": manifest.codec.pix_fmt,
        "audio": manifest.audio is not None,
    }


def sealed(raw: dict[str, Any], path: Path) -> WorkloadFile:
    """``raw`` (a parsed workload file, computed fields optional) with every computed field filled in."""
    raw = json.loads(json.dumps(raw))  # a private deep copy
    try:
        template = PromptTemplate.model_validate(raw.get("prompt_template", {}))
        questions = [Question.model_validate(question) for question in raw.get("questions", [])]
    except ValidationError as error:
        raise WorkloadError(f"{path}: cannot render prompts: {_schema_problem(error)}") from None
    raw["prompts"] = [rendered_prompt(template, question).model_dump(mode="json") for question in questions]
    for clip in raw.get("clips", []):
        if not isinstance(clip, dict):
            raise WorkloadError(f"{path}: every entry of clips must be an object")
        clip_file = resolve_inside(path.parent, str(clip.get("file", "")), path, f"clip {clip.get('id')!r}")
        if not clip_file.is_file():
            raise WorkloadError(f"{path}: clip {clip.get('id')!r} file {clip_file} is missing")
        problem = aiperf_clip_problem(clip_file)
        if problem:
            raise WorkloadError(f"{path}: clip {clip.get('id')!r}: {problem}")
        clip["bytes"], clip["sha256"] = clip_file.stat().st_size, file_sha256(clip_file)
        recorded = clip.get("video")
        clip["video"] = _video_facts(clip_file, recorded if isinstance(recorded, dict) else {})
    raw["digest"] = _PLACEHOLDER_SHA256
    try:
        draft = WorkloadFile.model_validate(raw)
    except ValidationError as error:
        raise WorkloadError(f"{path}: does not match the workload schema: {_schema_problem(error)}") from None
    return draft.model_copy(update={"digest": workload_digest(draft)})


def workload_json(spec: WorkloadFile) -> str:
    return json.dumps(spec.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False) + "\n"


def seal_workload_file(path: str | Path) -> WorkloadFile:
    """Fill in the computed fields of the workload file at ``path`` and rewrite it atomically."""
    file = Path(path)
    if file.is_dir():
        file = file / WORKLOAD_FILE
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WorkloadError(f"{file}: cannot read it as JSON ({error})") from None
    if not isinstance(raw, dict):
        raise WorkloadError(f"{file}: a workload file is a JSON object")
    spec = sealed(raw, file)
    write_text_atomic(file, workload_json(spec))
    return spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Record clip identities, rendered prompts and the digest.")
    parser.add_argument("workload", type=Path, help="workload.json, or the directory holding it")
    args = parser.parse_args(argv)
    try:
        spec = seal_workload_file(args.workload)
    except (UserError, OSError) as error:  # one line naming the input and the fix, exit 2, as the CLI does
        print(f"seal: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    print(f"{spec.name}: digest {spec.digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
