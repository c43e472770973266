"""The output check, a gate after grading: every profiling answer complete (non-empty, not cut off at the token limit)
and resolving to exactly one of its question's options.

Accuracy is never a gate here: a wrong answer that names one option passes. An answer that names no option fails,
unless the run's own plan declares that no-answer (only the self-test does, for its test double on a real clip), and
even then only when the answer is complete. An answer that was no chat completion at all (its request says where
its shape breaks) fails as `malformed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..climb.levels import combined
from ..climb.protocol import Climb, RowJob, Stop, measuring, recorded
from ..common.atomic_write import write_model_atomic
from ..common.scrub import known_secrets
from ..results import AnswerExample, AnswerOutcome, OutputCheck, RequestRow, StageResult
from ..results.layout import OUTPUT_CHECK_FILE, REQUESTS_FILE
from ..workloads.grading import GradedAnswer

if TYPE_CHECKING:
    from ..plan.self_test import DeclaredNoAnswer

ANSWER_OUTCOMES: tuple[AnswerOutcome, ...] = AnswerOutcome.__args__  # type: ignore[attr-defined]
# Only these pass; classify gives "declared-no-answer" only where a declaration was given.
PASSING: Final = frozenset({"resolved", "declared-no-answer"})
MAX_EXAMPLES: Final = 5
MAX_EXAMPLE_CHARS: Final = 160
ELLIPSIS: Final = "…"
SECRET_PLACEHOLDER: Final = "***"

_Key = tuple[str, str, int]


def _normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def classify(answer: GradedAnswer, declared: DeclaredNoAnswer | None) -> AnswerOutcome:
    """What the output check makes of one graded answer (see AnswerOutcome)."""
    if answer.outcome == "empty":
        return "empty"
    if answer.cut_off:
        return "cut-off"
    if answer.letter is not None:
        return "resolved"
    if len(answer.ambiguous) >= 2:
        return "ambiguous"
    if (
        declared is not None
        and answer.complete
        and _normalised(declared.phrase) in _normalised(answer.cleaned_text or answer.raw_text)
    ):
        return "declared-no-answer"
    return "unparseable"


def scrub_text(text: str, secrets: Sequence[str]) -> str:
    """The text with every secret replaced by a placeholder, longest first (a secret inside another one stays hid)."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, SECRET_PLACEHOLDER)
    return text


def truncate(text: str, limit: int = MAX_EXAMPLE_CHARS) -> str:
    """At most ``limit`` characters, the last one an ellipsis when the text was cut."""
    return text if len(text) <= limit else text[: limit - len(ELLIPSIS)] + ELLIPSIS


def _missing_text(record: RequestRow) -> str:
    """What stands for the answer of a profiling request that never came back whole."""
    if record.answer:
        return record.answer
    return f"(no answer: {record.error})" if record.error else "(no answer)"


def _example(record: RequestRow, outcome: AnswerOutcome, text: str, secrets: Sequence[str]) -> AnswerExample:
    return AnswerExample(
        session_id=record.session_id,
        question_id=record.question_id,
        clip_id=record.clip_id,
        outcome=outcome,
        answer=truncate(scrub_text(text, secrets)),
    )


def _pick_examples(examples: list[AnswerExample]) -> list[AnswerExample]:
    """Up to five: one of each failing outcome first, then the other failing ones, then passing ones."""
    failing = [e for e in examples if e.outcome not in PASSING]
    first_of_each = [
        next(e for e in failing if e.outcome == o) for o in ANSWER_OUTCOMES if any(e.outcome == o for e in failing)
    ]
    rest = [e for e in failing if e not in first_of_each]
    passing = [e for e in examples if e.outcome in PASSING]
    return (first_of_each + rest + passing)[:MAX_EXAMPLES]


def declaration_sentence(declared: DeclaredNoAnswer) -> str:
    return f"The run's plan declares the no-answer {declared.phrase!r} acceptable on this row: {declared.why}."


def check_outputs(
    graded: list[GradedAnswer],
    records: list[RequestRow],
    *,
    declared: DeclaredNoAnswer | None = None,
    secrets: Sequence[str] = (),
) -> OutputCheck:
    """Every profiling record's answer classified; a malformed answer (no chat completion) counts as malformed, and
    any other profiling record without a graded answer as empty."""
    by_key: dict[_Key, GradedAnswer] = {(a.question_id, a.variant, a.repeat): a for a in graded}
    counts: dict[str, int] = dict.fromkeys(ANSWER_OUTCOMES, 0)
    examples: list[AnswerExample] = []
    profiling = [record for record in records if record.phase == "profiling"]
    for record in profiling:
        answer = by_key.get((record.question_id, record.clip_id, record.repeat))
        outcome: AnswerOutcome
        if record.malformed is not None and record.error is None:
            outcome, text = "malformed", f"(malformed answer: {record.malformed})"
        elif answer is None:
            outcome = "empty"
            text = _missing_text(record)
        else:
            outcome, text = classify(answer, declared), answer.raw_text
        counts[outcome] += 1
        examples.append(_example(record, outcome, text, secrets))
    return OutputCheck(
        passed=bool(profiling) and all(example.outcome in PASSING for example in examples),
        checked=len(profiling),
        by_outcome=counts,
        examples=_pick_examples(examples),
        declared_no_answer=declaration_sentence(declared) if declared is not None else None,
    )


def _failing_counts(check: OutputCheck) -> str:
    return ", ".join(
        f"{o} {check.by_outcome[o]}" for o in ANSWER_OUTCOMES if o not in PASSING and check.by_outcome.get(o)
    )


def output_check_detail(check: OutputCheck) -> str:
    """The stage's one line: how many answers resolve, what the others were, and one of them."""
    if check.checked == 0:
        return "no profiling answers to check"
    resolved = check.by_outcome.get("resolved", 0)
    no_answer = check.by_outcome.get("declared-no-answer", 0)
    declared = f"{no_answer} declared no-answer (as the self-test plan declares)" if no_answer else ""
    if check.passed:
        line = f"{resolved} of {check.checked} answers complete and resolving to one option"
        return f"{line}, {declared}" if declared else line
    failing = next((e for e in check.examples if e.outcome not in PASSING), None)
    instance = f" (e.g. {failing.answer!r})" if failing else ""
    line = f"{resolved} of {check.checked} answers resolve to one option: {_failing_counts(check)}{instance}"
    return f"{line}; {declared}" if declared else line


def output_check(row: RowJob, climb: Climb) -> Climb | Stop:
    """The `output-check` stage: every profiling answer complete and resolving to exactly one option (a declared
    no-answer passes where the run's own plan declares one); written to output_check.json."""
    climb, result = measuring(climb)
    secrets = sorted(known_secrets(row.job.api_key))

    def check(graded: list[GradedAnswer], records: list[RequestRow]) -> OutputCheck:
        return check_outputs(graded, records, declared=row.gates.declared_no_answer, secrets=secrets)

    result.output_check = check(result.graded, result.records)  # the first run's, as the row's figures are
    write_output_check(row.row_dir, result.output_check)
    stage = output_check_stage(result.output_check)
    if len(result.levels) > 1:  # every further run of a sweep or repeat checked alike, the first failing one named
        result.levels[0].stages["output-check"] = stage
        for run in result.levels[1:]:
            run.stages["output-check"] = output_check_stage(check(run.graded, run.records))
        stage = combined(result.levels, "output-check")
    return recorded(climb, result, stage, stops=stage.status != "passed")


def output_check_stage(check: OutputCheck) -> StageResult:
    return StageResult(
        name="output-check",
        status="passed" if check.passed else "failed",
        detail=output_check_detail(check),
        evidence=[OUTPUT_CHECK_FILE, REQUESTS_FILE],
    )


def write_output_check(row_dir: Path, check: OutputCheck) -> Path:
    return write_model_atomic(row_dir / OUTPUT_CHECK_FILE, check)
