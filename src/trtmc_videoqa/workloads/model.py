"""The workload file's schema: clips identified by their bytes, questions with per-clip answers, prompt, policies.

Validation here is about the file alone (shape and internal consistency); whether the clip files on disk match
is checked by ``loading``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .grading import normalize_phrase

WORKLOAD_SCHEMA: Literal["trtmc-videoqa.workload/v1"] = "trtmc-videoqa.workload/v1"
ANSWER_INSTRUCTION = "Answer with the option's letter only."

_SHA256 = r"^[0-9a-f]{64}$"
_CLIP_ID = r"^[a-z][a-z0-9-]*$"

WorkloadKind = Literal["qualification", "self-test"]
TemporalNeed = Literal["order", "direction", "count", "speed"]
Scalar = str | int | float | bool


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClipVideo(_Model):
    """What a probe of the clip must find; recorded so a re-encode that changes them is noticed."""

    width: int = Field(gt=0)
    height: int = Field(gt=0)
    fps: str = Field(pattern=r"^\d+(/\d+)?$", description="frame rate as a fraction string, e.g. '25' or '30000/1001'")
    frames: int = Field(gt=0, description="decoded frame count")
    codec: str
    pix_fmt: str
    audio: bool = False


class ClipDerivation(_Model):
    """Where the clip's bytes came from and how they were made, so anyone can make them again."""

    source: str = Field(description="package==version and the path inside it, or the generator that drew the frames")
    source_sha256: str = Field(pattern=_SHA256)
    recipe: str = Field(description="the command or function that produced the clip")
    settings: dict[str, Scalar] = Field(description="encode settings: codec, size, crf, preset, frame order, ...")


class Clip(_Model):
    id: str = Field(pattern=_CLIP_ID, description="e.g. 'forward' or 'reversed'")
    file: str = Field(min_length=1, description="file name relative to the workload file's directory")
    sha256: str = Field(pattern=_SHA256, description="sha256 of the file bytes: the clip's identity")
    bytes: int = Field(gt=0)
    mime: str = Field(pattern=r"^video/[a-z0-9.+-]+$")
    licence: str = Field(min_length=1, description="SPDX-style licence of the clip content")
    attribution: str = Field(min_length=1, description="attribution file, relative to the workload file's directory")
    derived_from: ClipDerivation
    reverses: str | None = Field(default=None, description="id of the clip whose frames this one shows in reverse")
    video: ClipVideo


class Option(_Model):
    letter: str = Field(pattern=r"^[A-Z]$")
    text: str = Field(min_length=1)
    aliases: tuple[str, ...] = Field(default=(), description="other phrasings accepted for this option")


class Question(_Model):
    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    prompt: str = Field(min_length=1, description="the question text, without the options")
    options: tuple[Option, ...] = Field(min_length=2)
    answers: dict[str, str] = Field(description="correct letter per clip id")
    needs: TemporalNeed
    why_not_one_frame: str = Field(min_length=1, description="why no single frame answers it")

    @field_validator("options")
    @classmethod
    def _letters_run_from_a(cls, options: tuple[Option, ...]) -> tuple[Option, ...]:
        letters = [option.letter for option in options]
        expected = [chr(ord("A") + i) for i in range(len(options))]
        if letters != expected:
            raise ValueError(f"option letters must be {expected} in order, got {letters}")
        return options

    @field_validator("options")
    @classmethod
    def _phrases_belong_to_one_option(cls, options: tuple[Option, ...]) -> tuple[Option, ...]:
        # A phrase shared by two options could never pick one of them.
        owner: dict[str, str] = {}
        for option in options:
            for phrase in (option.text, *option.aliases):
                key = normalize_phrase(phrase)
                if not key:
                    raise ValueError(f"option {option.letter}: phrase {phrase!r} is empty once normalized")
                if owner.setdefault(key, option.letter) != option.letter:
                    raise ValueError(f"phrase {phrase!r} belongs to both option {owner[key]} and {option.letter}")
        return options

    @model_validator(mode="after")
    def _answers_are_options(self) -> Question:
        letters = {option.letter for option in self.options}
        for clip_id, letter in self.answers.items():
            if letter not in letters:
                raise ValueError(f"answer {letter!r} for clip {clip_id!r} is not one of the options {sorted(letters)}")
        return self

    def option_lines(self) -> list[str]:
        return [f"{option.letter}. {option.text}" for option in self.options]


class PromptTemplate(_Model):
    """How a question becomes the prompt text: ``{question}`` and ``{options}`` (one "A. ..." line each)."""

    template: str = Field(default="{question}\n{options}\n" + ANSWER_INSTRUCTION)

    @field_validator("template")
    @classmethod
    def _has_both_fields(cls, template: str) -> str:
        for name in ("{question}", "{options}"):
            if name not in template:
                raise ValueError(f"prompt template lacks {name}")
        return template


class RenderedPrompt(_Model):
    question_id: str
    text: str
    sha256: str = Field(pattern=_SHA256)


# Body fields the run sets itself (the grading and the output check rely on them): never from extra_body.
RESERVED_BODY_FIELDS = frozenset(
    {"model", "messages", "stream", "n", "max_tokens", "max_completion_tokens", "temperature"}
)


class Generation(_Model):
    max_tokens: int = Field(default=16, gt=0, le=4096)
    temperature: float = Field(default=0.0, ge=0.0)
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        # Left out of the file and the digest when empty, so workloads sealed before it keep their digests.
        exclude_if=lambda value: not value,
        description="top-level fields added to every chat request body, e.g. "
        '{"chat_template_kwargs": {"num_frames": 16}}; in the digest when present',
    )

    @field_validator("extra_body")
    @classmethod
    def _no_reserved_fields(cls, extra: dict[str, Any]) -> dict[str, Any]:
        clashes = sorted(RESERVED_BODY_FIELDS & set(extra))
        if clashes:
            raise ValueError(
                f"extra_body may not set {', '.join(clashes)}: the run sets them (max_tokens and temperature "
                "are generation fields of their own)"
            )
        return extra


class WorkloadFile(_Model):
    """The whole workload.json."""

    schema_: Literal["trtmc-videoqa.workload/v1"] = Field(default=WORKLOAD_SCHEMA, alias="schema")
    name: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    description: str
    kind: WorkloadKind
    clips: tuple[Clip, ...] = Field(min_length=1)
    questions: tuple[Question, ...] = Field(min_length=1)
    prompt_template: PromptTemplate = PromptTemplate()
    prompts: tuple[RenderedPrompt, ...] = Field(description="the exact prompt text per question and its sha256")
    generation: Generation = Generation()
    sampling_policies: tuple[str, ...] = Field(
        min_length=1,
        description="media.sampling spec strings, e.g. 'uniform:8'; stored as written, hashed in the digest",
    )
    digest: str = Field(
        pattern=_SHA256, description="sha256 of the canonical JSON of clips, questions, prompts, policies"
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("sampling_policies")
    @classmethod
    def _policies_parse(cls, policies: tuple[str, ...]) -> tuple[str, ...]:
        # Imported here: media brings PyAV, which merely importing the workloads package should not load.
        from ..media.sampling import SamplingPolicy

        for policy in policies:
            SamplingPolicy.parse(policy)  # raises ValueError naming the spec and what is wrong
        if len(set(policies)) != len(policies):
            raise ValueError("sampling policies repeat")
        return policies

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadFile:
        clip_ids = [clip.id for clip in self.clips]
        if len(set(clip_ids)) != len(clip_ids):
            raise ValueError(f"clip ids repeat: {clip_ids}")
        if len({clip.file for clip in self.clips}) != len(self.clips):
            raise ValueError("two clips name the same file")
        question_ids = [question.id for question in self.questions]
        if len(set(question_ids)) != len(question_ids):
            raise ValueError(f"question ids repeat: {question_ids}")
        for clip in self.clips:
            if clip.reverses is not None and (clip.reverses not in clip_ids or clip.reverses == clip.id):
                raise ValueError(f"clip {clip.id!r} reverses {clip.reverses!r}, which is not another clip here")
        for question in self.questions:
            if set(question.answers) != set(clip_ids):
                raise ValueError(
                    f"question {question.id!r} answers clips {sorted(question.answers)}; "
                    f"it must answer {sorted(clip_ids)}"
                )
            for clip in self.clips:
                # The reversed twin must flip the key, or the pair cannot show the model used time.
                if clip.reverses and question.answers[clip.id] == question.answers[clip.reverses]:
                    raise ValueError(
                        f"question {question.id!r} has the same answer on {clip.id!r} and on {clip.reverses!r}, "
                        "the clip it reverses"
                    )
        if [prompt.question_id for prompt in self.prompts] != question_ids:
            raise ValueError("prompts must list one rendered prompt per question, in question order")
        return self

    def reversal_pairs(self) -> list[tuple[str, str]]:
        """(forward clip id, reversed clip id) for every clip that is another one's time-reversal."""
        return [(clip.reverses, clip.id) for clip in self.clips if clip.reverses]
