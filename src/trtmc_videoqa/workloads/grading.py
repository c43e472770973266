"""Answer extraction and grading for multiple-choice temporal questions.

Strict and deterministic: a fixed, ordered rule list where the first match wins, letters limited to the
question's own options, no "any letter anywhere" fallback, no random choice and no LLM judge. An answer
that no rule understands is ``unparseable`` and an answer with no text is ``empty``; neither is ``wrong``,
because they measure instruction-following rather than temporal understanding.

Standard library only, so every room (and the report rebuilt from artifacts) can use it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .answer_text import clean_answer

Outcome = Literal["correct", "wrong", "unparseable", "empty"]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]

# The rules in the order they are tried; the name of the one that matched is recorded with the grade.
Rule = Literal["whole-letter", "leading-letter", "answer-phrase", "option-text"]
RULES: tuple[str, ...] = Rule.__args__  # type: ignore[attr-defined]


class OptionLike(Protocol):
    """What grading needs of an option; the workload's option model satisfies it without an import."""

    @property
    def letter(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def aliases(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class Option:
    """A plain option, for callers (and tests) that have no workload model at hand."""

    letter: str
    text: str
    aliases: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------------------
# Pre-cleaning

_WRAPPED_LETTER = r"(?:\((?P<paren>[A-Za-z])\)|\[(?P<bracket>[A-Za-z])\]|(?P<bare>[A-Za-z])(?P<suffix>[.):])?)"
_WHOLE_LETTER = re.compile(rf"{_WRAPPED_LETTER}\.?")
_LEADING_LETTER = re.compile(rf"{_WRAPPED_LETTER}(?=\s|$)")
_ANSWER_PHRASE = re.compile(
    r"\b(?:answer\s*(?:is\b\s*:?|:)|(?:option|choice)\b\s*(?:is\b\s*:?|:)?)\s*"
    r"(?:\((?P<paren>[a-z])\)|\[(?P<bracket>[a-z])\]|(?P<bare>[a-z]))(?![a-z0-9])",
    re.IGNORECASE,
)
# After a bare "A" or "I", a lowercase word means the article or the pronoun: "A rabbit ...", "I think ...".
_LOWERCASE_WORD_NEXT = re.compile(r"\s+[a-z]")


def _letter_of(match: re.Match[str]) -> str:
    return (match.group("paren") or match.group("bracket") or match.group("bare")).upper()


def _is_unwrapped(match: re.Match[str]) -> bool:
    return match.group("bare") is not None and not (match.groupdict().get("suffix"))


def _whole_letter(text: str, valid: frozenset[str]) -> str | None:
    match = _WHOLE_LETTER.fullmatch(text)
    if match and _letter_of(match) in valid:
        return _letter_of(match)
    return None


def _leading_letter(text: str, valid: frozenset[str]) -> str | None:
    match = _LEADING_LETTER.match(text)
    if not match or _letter_of(match) not in valid:
        return None
    if _is_unwrapped(match) and match.group("bare") in "AaIi" and _LOWERCASE_WORD_NEXT.match(text, match.end()):
        return None
    return _letter_of(match)


def _answer_phrase(text: str, valid: frozenset[str]) -> str | None:
    found: str | None = None
    for match in _ANSWER_PHRASE.finditer(text):
        letter = _letter_of(match)
        # "the answer is a rabbit": a lowercase bare a/i followed by a word is an article or pronoun.
        article = match.group("bare") in ("a", "i") and _LOWERCASE_WORD_NEXT.match(text, match.end())
        if letter in valid and not article:
            found = letter  # the last explicit phrase wins
    return found


_LETTER_RULES: tuple[tuple[Rule, Callable[[str, frozenset[str]], str | None]], ...] = (
    ("whole-letter", _whole_letter),
    ("leading-letter", _leading_letter),
    ("answer-phrase", _answer_phrase),
)


# ---------------------------------------------------------------------------------------------------------
# Option-text rule

_NON_WORD = re.compile(r"[^\w\s]|_")
_ARTICLES = frozenset({"a", "an", "the"})
# A phrase right after one of these is denied, not given: "never comes out", "doesn't move" ("doesn t" once
# normalized).
_NEGATIONS = frozenset({"not", "never", "no", "t"})


def normalize_phrase(text: str) -> str:
    """Lowercase, punctuation to spaces, articles dropped, whitespace collapsed: the form phrases are matched in."""
    words = _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).lower()).split()
    return " ".join(word for word in words if word not in _ARTICLES)


def _phrase_spans(haystack: str, phrase: str) -> list[tuple[int, int]]:
    """Where ``phrase`` occurs in ``haystack`` as whole words and is not negated (both already normalized)."""
    if not phrase:
        return []
    padded, needle = f" {haystack} ", f" {phrase} "
    spans, start = [], padded.find(needle)
    while start != -1:
        preceding = padded[:start].split()
        if not (preceding and preceding[-1] in _NEGATIONS):
            spans.append((start, start + len(needle) - 2))
        start = padded.find(needle, start + 1)
    return spans


def _option_text_matches(text: str, options: Sequence[OptionLike]) -> tuple[str, ...]:
    """Letters of the options whose text or an alias occurs in the answer.

    A match lying strictly inside another option's longer match does not count ("stays inside the burrow"
    holds "inside the burrow"), so one option's phrase never makes an answer about another option ambiguous.
    """
    answer = normalize_phrase(text)
    spans_by_letter = {
        option.letter: [
            span
            for phrase in (option.text, *option.aliases)
            for span in _phrase_spans(answer, normalize_phrase(phrase))
        ]
        for option in options
    }

    def inside_other(letter: str, span: tuple[int, int]) -> bool:
        return any(
            other != letter and o_start <= span[0] and span[1] <= o_end and (o_end - o_start) > (span[1] - span[0])
            for other, spans in spans_by_letter.items()
            for o_start, o_end in spans
        )

    return tuple(
        letter for letter, spans in spans_by_letter.items() if any(not inside_other(letter, span) for span in spans)
    )


# ---------------------------------------------------------------------------------------------------------
# Extraction and grading


@dataclass(frozen=True)
class Extraction:
    """Which letter the answer gives, and by which rule; ``letter`` is None when no rule understood it."""

    cleaned: str
    letter: str | None = None
    rule: Rule | None = None
    ambiguous: tuple[str, ...] = ()  # the options that all matched by text, when that made the answer unparseable


def extract_letter(raw: str, options: Sequence[OptionLike]) -> Extraction:
    """Apply the ordered rules to one answer; the first rule that yields a valid letter wins."""
    cleaned = clean_answer(raw)
    if not cleaned:
        return Extraction(cleaned=cleaned)
    valid = frozenset(option.letter.upper() for option in options)
    for name, rule in _LETTER_RULES:
        letter = rule(cleaned, valid)
        if letter:
            return Extraction(cleaned=cleaned, letter=letter, rule=name)
    matched = _option_text_matches(cleaned, options)
    if len(matched) == 1:
        return Extraction(cleaned=cleaned, letter=matched[0].upper(), rule="option-text")
    return Extraction(cleaned=cleaned, ambiguous=matched if len(matched) > 1 else ())


def is_cut_off(finish_reason: str | None, output_tokens: int | None, max_tokens: int | None) -> bool:
    """Whether generation stopped at the token limit rather than at the model's own end.

    The server's finish reason decides when it gives one; without it, reaching max_tokens counts as cut off.
    """
    if finish_reason is not None:
        return finish_reason == "length"
    return output_tokens is not None and max_tokens is not None and output_tokens >= max_tokens


@dataclass(frozen=True)
class GradedAnswer:
    """One answer, graded: the raw text is kept next to what the rules made of it."""

    question_id: str
    variant: str  # the clip the question was asked about, e.g. "forward" or "reversed"
    repeat: int
    expected: str
    outcome: Outcome
    letter: str | None
    rule: Rule | None
    complete: bool  # non-empty and not cut off at the token limit
    cut_off: bool
    raw_text: str
    cleaned_text: str
    ambiguous: tuple[str, ...] = ()
    finish_reason: str | None = None
    output_tokens: int | None = None
    max_tokens: int | None = None


def grade_answer(
    raw_text: str,
    options: Sequence[OptionLike],
    expected: str,
    *,
    question_id: str = "",
    variant: str = "",
    repeat: int = 0,
    finish_reason: str | None = None,
    output_tokens: int | None = None,
    max_tokens: int | None = None,
) -> GradedAnswer:
    """Grade one answer against the expected letter. A cut-off answer is graded on the text that arrived."""
    valid = {option.letter.upper() for option in options}
    if expected.upper() not in valid:
        raise ValueError(f"expected letter {expected!r} is not one of the options {sorted(valid)}")
    extraction = extract_letter(raw_text, options)
    outcome: Outcome
    if not extraction.cleaned:
        outcome = "empty"
    elif extraction.letter is None:
        outcome = "unparseable"
    else:
        outcome = "correct" if extraction.letter == expected.upper() else "wrong"
    cut_off = is_cut_off(finish_reason, output_tokens, max_tokens)
    return GradedAnswer(
        question_id=question_id,
        variant=variant,
        repeat=repeat,
        expected=expected.upper(),
        outcome=outcome,
        letter=extraction.letter,
        rule=extraction.rule,
        complete=outcome != "empty" and not cut_off,
        cut_off=cut_off,
        raw_text=raw_text,
        cleaned_text=extraction.cleaned,
        ambiguous=extraction.ambiguous,
        finish_reason=finish_reason,
        output_tokens=output_tokens,
        max_tokens=max_tokens,
    )


# ---------------------------------------------------------------------------------------------------------
# Aggregation


@dataclass(frozen=True)
class OutcomeCounts:
    """Outcomes of one question on one clip variant over its repeats; unparseable and empty are not wrong."""

    correct: int = 0
    wrong: int = 0
    unparseable: int = 0
    empty: int = 0
    incomplete: int = 0  # answers cut off or empty, counted across the outcomes above
    rules: dict[str, int] = field(default_factory=dict)  # which rule produced each extracted letter

    @property
    def total(self) -> int:
        return self.correct + self.wrong + self.unparseable + self.empty

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.total if self.total else None


def count_outcomes(answers: Iterable[GradedAnswer]) -> OutcomeCounts:
    counts = dict.fromkeys(OUTCOMES, 0)
    rules: dict[str, int] = {}
    incomplete = 0
    for answer in answers:
        counts[answer.outcome] += 1
        incomplete += not answer.complete
        if answer.rule:
            rules[answer.rule] = rules.get(answer.rule, 0) + 1
    return OutcomeCounts(**counts, incomplete=incomplete, rules=dict(sorted(rules.items())))


@dataclass(frozen=True)
class QuestionGrade:
    """One question over the forward clip and its time-reversed twin.

    A repeat is "both right" only when the forward and the reversed answer of that repeat are both correct;
    the question passes only when every repeat is both right, so a model that ignores time cannot pass.
    """

    question_id: str
    forward: OutcomeCounts
    reversed: OutcomeCounts
    repeats: int  # repeat indices seen on either variant; a side that is missing is not right
    both_right: int

    @property
    def forward_accuracy(self) -> float | None:
        return self.forward.accuracy

    @property
    def reversed_accuracy(self) -> float | None:
        return self.reversed.accuracy

    @property
    def both_right_rate(self) -> float | None:
        return self.both_right / self.repeats if self.repeats else None

    @property
    def passed(self) -> bool:
        return self.repeats > 0 and self.both_right == self.repeats


def grade_question(
    question_id: str,
    answers: Iterable[GradedAnswer],
    *,
    forward_variant: str = "forward",
    reversed_variant: str = "reversed",
) -> QuestionGrade:
    """Pair forward and reversed answers by repeat index and count the repeats where both are right."""
    by_variant: dict[str, dict[int, GradedAnswer]] = {forward_variant: {}, reversed_variant: {}}
    for answer in answers:
        if answer.question_id != question_id:
            raise ValueError(f"answer for question {answer.question_id!r} given to the grade of {question_id!r}")
        if answer.variant not in by_variant:
            raise ValueError(
                f"answer on clip variant {answer.variant!r}; expected {forward_variant!r} or {reversed_variant!r}"
            )
        if answer.repeat in by_variant[answer.variant]:
            raise ValueError(f"two answers for {question_id!r} on {answer.variant!r}, repeat {answer.repeat}")
        by_variant[answer.variant][answer.repeat] = answer
    forward, backward = by_variant[forward_variant], by_variant[reversed_variant]
    repeats = sorted(set(forward) | set(backward))
    both_right = sum(
        1
        for r in repeats
        if r in forward and r in backward and forward[r].outcome == "correct" and backward[r].outcome == "correct"
    )
    return QuestionGrade(
        question_id=question_id,
        forward=count_outcomes(forward.values()),
        reversed=count_outcomes(backward.values()),
        repeats=len(repeats),
        both_right=both_right,
    )


@dataclass(frozen=True)
class WorkloadGrade:
    """Every question of a workload; the workload passes only when every question passes."""

    questions: tuple[QuestionGrade, ...]

    @property
    def questions_passed(self) -> int:
        return sum(question.passed for question in self.questions)

    @property
    def passed(self) -> bool:
        return bool(self.questions) and self.questions_passed == len(self.questions)


def grade_workload(
    answers: Iterable[GradedAnswer],
    question_ids: Sequence[str],
    *,
    forward_variant: str = "forward",
    reversed_variant: str = "reversed",
) -> WorkloadGrade:
    """Grade each question in ``question_ids`` (a question with no answers is not passed)."""
    grouped: dict[str, list[GradedAnswer]] = {question_id: [] for question_id in question_ids}
    for answer in answers:
        if answer.question_id not in grouped:
            raise ValueError(f"answer for unknown question {answer.question_id!r}")
        grouped[answer.question_id].append(answer)
    return WorkloadGrade(
        questions=tuple(
            grade_question(question_id, group, forward_variant=forward_variant, reversed_variant=reversed_variant)
            for question_id, group in grouped.items()
        )
    )
