"""Load a workload file and refuse it unless its clips, prompts and digest are exactly what it records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..common.digests import file_sha256
from ..common.errors import UserError
from ..results.layout import WORKLOAD_FILE
from .digest import workload_digest
from .model import Clip, Question, RenderedPrompt, WorkloadFile
from .prompts import rendered_prompt

if TYPE_CHECKING:
    from ..media.sampling import SamplingPolicy

SEAL_COMMAND = "python -m trtmc_videoqa.workloads.seal"


class WorkloadError(UserError, ValueError):
    """A workload file that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class Workload:
    """A validated workload and where it lives; clip files are resolved against the workload file's directory."""

    spec: WorkloadFile
    file: Path

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def digest(self) -> str:
        return self.spec.digest

    @property
    def root(self) -> Path:
        return self.file.parent

    def clip(self, clip_id: str) -> Clip:
        for clip in self.spec.clips:
            if clip.id == clip_id:
                return clip
        raise KeyError(f"workload {self.name!r} has no clip {clip_id!r}")

    def clip_path(self, clip_id: str) -> Path:
        return resolve_inside(self.root, self.clip(clip_id).file, self.file, f"clip {clip_id!r}")

    def question(self, question_id: str) -> Question:
        for question in self.spec.questions:
            if question.id == question_id:
                return question
        raise KeyError(f"workload {self.name!r} has no question {question_id!r}")

    def prompt(self, question_id: str) -> RenderedPrompt:
        for prompt in self.spec.prompts:
            if prompt.question_id == question_id:
                return prompt
        raise KeyError(f"workload {self.name!r} has no prompt for question {question_id!r}")

    def reversal_pairs(self) -> list[tuple[str, str]]:
        return self.spec.reversal_pairs()

    def sampling_policies(self) -> list[SamplingPolicy]:
        from ..media.sampling import SamplingPolicy

        return [SamplingPolicy.parse(policy) for policy in self.spec.sampling_policies]


def resolve_inside(root: Path, relative: str, workload_file: Path, what: str) -> Path:
    """``root / relative``, refused when it is absolute or leads (also through a link) outside ``root``."""
    candidate = Path(relative)
    resolved_root = root.resolve()
    resolved = (resolved_root / candidate).resolve()
    if candidate.is_absolute() or not resolved.is_relative_to(resolved_root):
        raise WorkloadError(
            f"{workload_file}: {what} path {relative!r} leads outside the workload directory {resolved_root}; "
            "clip and attribution files must lie inside the directory of the workload file (give a relative path)"
        )
    return resolved


def read_workload_file(path: Path) -> WorkloadFile:
    """Parse and validate the file's shape and internal consistency (no clip file is opened)."""
    if not path.is_file():
        raise WorkloadError(f"{path}: no such workload file; give a path to a {WORKLOAD_FILE} or a built-in name")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WorkloadError(f"{path}: not valid JSON ({error}); fix the file's syntax") from error
    try:
        return WorkloadFile.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc']) or '<file>'}: {problem['msg']}"
            for problem in error.errors()
        )
        raise WorkloadError(
            f"{path}: does not match the workload schema ({problems}); fix those fields "
            "(schema: trtmc_videoqa.workloads.model.WorkloadFile)"
        ) from error


def check_prompts_and_digest(spec: WorkloadFile, path: Path) -> None:
    for question, recorded in zip(spec.questions, spec.prompts, strict=True):
        if rendered_prompt(spec.prompt_template, question) != recorded:
            raise WorkloadError(
                f"{path}: the recorded prompt of question {question.id!r} is not what the template renders; "
                f"if the question or template changed on purpose, record it with `{SEAL_COMMAND} {path}`"
            )
    actual = workload_digest(spec)
    if actual != spec.digest:
        raise WorkloadError(
            f"{path}: digest {spec.digest} does not match the content ({actual}); the clips, questions, prompts, "
            f"generation settings or policies changed. Undo the change, or record it with `{SEAL_COMMAND} {path}`"
        )


def check_clip_files(spec: WorkloadFile, path: Path) -> None:
    """Every clip file exists inside the workload directory with the recorded size and sha256."""
    root = path.parent
    for clip in spec.clips:
        attribution = resolve_inside(root, clip.attribution, path, f"clip {clip.id!r} attribution")
        if not attribution.is_file():
            raise WorkloadError(f"{path}: clip {clip.id!r} attribution file {attribution} is missing; restore it")
        clip_file = resolve_inside(root, clip.file, path, f"clip {clip.id!r}")
        if not clip_file.is_file():
            raise WorkloadError(
                f"{path}: clip {clip.id!r} file {clip_file} is missing; restore the committed file "
                "(clips are committed bytes, never regenerated on load)"
            )
        size = clip_file.stat().st_size
        if size == 0:
            raise WorkloadError(
                f"{path}: clip {clip.id!r} file {clip_file} is empty (0 bytes); restore the committed file, or "
                f"re-export the clip and record it with `{SEAL_COMMAND} {path}`"
            )
        actual = file_sha256(clip_file)
        if size != clip.bytes or actual != clip.sha256:
            raise WorkloadError(
                f"{path}: clip {clip.id!r} file {clip_file} is {size} bytes with sha256 {actual}, but the workload "
                f"records {clip.bytes} bytes with sha256 {clip.sha256}. Restore the committed file; a regenerated "
                f"clip is a new identity: record it on purpose with `{SEAL_COMMAND} {path}`"
            )


def load_workload_file(path: str | Path) -> Workload:
    """Load a workload from its file (or the directory holding ``workload.json``), checking everything."""
    file = Path(path)
    if file.is_dir():
        file = file / WORKLOAD_FILE
    file = file.absolute()
    spec = read_workload_file(file)
    check_prompts_and_digest(spec, file)
    check_clip_files(spec, file)
    return Workload(spec=spec, file=file)
