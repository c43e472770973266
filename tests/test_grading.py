"""The strict, ordered, deterministic answer grader: the letter is taken by a fixed order of rules (a whole letter,
a leading letter, an answer phrase, the option text, a unique alias), each recorded, and a question passes only when
every repeat of both its forward and its reversed variant is right."""

from __future__ import annotations

import pytest

from trtmc_videoqa.workloads.grading import (
    GradedAnswer,
    Option,
    clean_answer,
    extract_letter,
    grade_answer,
    grade_question,
    grade_workload,
    is_cut_off,
    normalize_phrase,
)

BURROW = (
    Option("A", "he goes into the burrow", ("goes in", "crawls into the burrow")),
    Option("B", "he comes out of the burrow", ("comes out", "climbs out", "emerges")),
    Option("C", "he stays inside the burrow the whole time"),
    Option("D", "there is no burrow"),
)
PLAIN = tuple(Option(letter, f"option text {letter.lower()}") for letter in "ABCD")


def letter_and_rule(answer: str, options=PLAIN) -> tuple[str | None, str | None]:
    extraction = extract_letter(answer, options)
    return extraction.letter, extraction.rule


# --- pre-cleaning -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        ("<think>A seems wrong, maybe C</think>B", "B"),
        ("<THINK>\nmulti\nline\n</THINK>\n  **B**  ", "B"),
        ("reasoning the server left open</think> B", "B"),
        ("B<think>cut off before the end", "B"),
        ("`B`", "B"),
        ('"(B)"', "(B)"),
        ("\u201cB\u201d", "B"),
        ("\uff22", "B"),  # fullwidth B, folded by NFKC
        ("  \n B \t", "B"),
    ],
)
def test_clean_answer(raw: str, cleaned: str) -> None:
    assert clean_answer(raw) == cleaned


def test_raw_text_is_kept_next_to_the_cleaned_text() -> None:
    graded = grade_answer("<think>hm</think> **B**", BURROW, "B")
    assert graded.raw_text == "<think>hm</think> **B**"
    assert graded.cleaned_text == "B"


# --- rule a: the whole answer is a letter -----------------------------------------------------------------


@pytest.mark.parametrize("answer", ["B", "b", "(B)", "[B]", "B.", "B)", "B:", "(b).", " [b] "])
def test_whole_letter(answer: str) -> None:
    assert letter_and_rule(answer) == ("B", "whole-letter")


def test_a_lone_a_is_the_letter_a() -> None:
    assert letter_and_rule("A") == ("A", "whole-letter")


# --- rule b: the answer starts with a (wrapped) letter ----------------------------------------------------


@pytest.mark.parametrize(
    "answer", ["(B) It comes out of the hole.", "B. out of the hole", "B) comes out", "B: he emerges", "B because"]
)
def test_leading_letter(answer: str) -> None:
    assert letter_and_rule(answer) == ("B", "leading-letter")


def test_wrapped_leading_a_is_a_letter_even_before_a_lowercase_word() -> None:
    assert letter_and_rule("A. rabbit goes in") == ("A", "leading-letter")
    assert letter_and_rule("(A) rabbit goes in") == ("A", "leading-letter")


def test_bare_leading_a_before_a_lowercase_word_is_the_article() -> None:
    # No rule sees "A" as a letter here; with aliases the option text decides, without them nothing does.
    assert letter_and_rule("A rabbit climbs out of the burrow (B).", BURROW) == ("B", "option-text")
    assert letter_and_rule("A rabbit climbs out of the burrow (B).", PLAIN) == (None, None)


def test_bare_leading_i_before_a_lowercase_word_is_the_pronoun() -> None:
    options = tuple(Option(letter, f"text {letter}") for letter in "ABCDEFGHI")
    assert letter_and_rule("I think so", options) == (None, None)
    assert letter_and_rule("I", options) == ("I", "whole-letter")


def test_a_letter_must_stand_alone() -> None:
    assert letter_and_rule("Bunny", PLAIN) == (None, None)
    assert letter_and_rule("B, because", PLAIN) == (None, None)  # not one of the listed wrappings


# --- rule c: the last explicit phrase ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("Answer: b", "B"),
        ("I think C is wrong; the answer is B", "B"),
        ("The answer is (C).", "C"),
        ("The answer is: D", "D"),
        ("It has to be option c", "C"),
        ("My choice [A] stands", "A"),
        ("Option A looked right, but the answer is C", "C"),  # the last phrase wins
        ("The answer is A because he comes out", "A"),  # an uppercase A after the phrase is the letter
    ],
)
def test_answer_phrase(answer: str, letter: str) -> None:
    assert letter_and_rule(answer) == (letter, "answer-phrase")


def test_answer_phrase_with_a_lowercase_article_is_not_the_letter_a() -> None:
    assert letter_and_rule("the answer is a rabbit", PLAIN) == (None, None)


def test_answer_phrase_keywords_are_whole_words() -> None:
    many = tuple(Option(letter, f"text {letter}") for letter in "ABCDEFGHIJKLMNOPQRS")
    assert letter_and_rule("The answer isn't clear", many) == (None, None)
    assert letter_and_rule("Both options seem fine", many) == (None, None)
    assert letter_and_rule("Neither choices nor guesses", many) == (None, None)


def test_letters_outside_the_options_are_never_extracted() -> None:
    assert letter_and_rule("E", PLAIN) == (None, None)
    assert letter_and_rule("(E) none of these", PLAIN) == (None, None)
    assert letter_and_rule("The answer is E", PLAIN) == (None, None)


def test_no_letter_anywhere_fallback() -> None:
    assert letter_and_rule("It is a rabbit coming out, so B", PLAIN) == (None, None)


# --- rule d: option text and aliases ----------------------------------------------------------------------


def test_normalize_phrase() -> None:
    assert normalize_phrase("  The Rabbit's   burrow!! ") == "rabbit s burrow"


def test_option_text_match() -> None:
    assert letter_and_rule("He comes out of the burrow.", BURROW) == ("B", "option-text")


def test_unique_alias_match() -> None:
    assert letter_and_rule("The rabbit emerges slowly", BURROW) == ("B", "option-text")


def test_ambiguous_alias_is_unparseable() -> None:
    extraction = extract_letter("He goes in and then comes out", BURROW)
    assert extraction.letter is None and extraction.rule is None
    assert extraction.ambiguous == ("A", "B")
    assert grade_answer("He goes in and then comes out", BURROW, "B").outcome == "unparseable"


def test_a_match_inside_another_options_longer_match_does_not_count() -> None:
    options = (Option("A", "inside the burrow"), Option("B", "stays inside the burrow the whole time"))
    assert letter_and_rule("He stays inside the burrow the whole time", options) == ("B", "option-text")


def test_a_negated_phrase_is_not_a_match() -> None:
    assert letter_and_rule("He never comes out", BURROW) == (None, None)
    assert letter_and_rule("It never comes out; it goes in", BURROW) == ("A", "option-text")
    moves = (Option("A", "left to right", ("move right",)), Option("B", "it stays still"))
    assert letter_and_rule("It doesn't move right", moves) == (None, None)  # "doesn t" once normalized


def test_option_text_matches_whole_words_only() -> None:
    options = (Option("A", "it appears partway through", ("appears",)), Option("B", "it disappears partway through"))
    assert letter_and_rule("it disappears partway through", options) == ("B", "option-text")


# --- outcomes and completeness ----------------------------------------------------------------------------


def test_outcomes_are_counted_apart() -> None:
    assert grade_answer("B", BURROW, "B").outcome == "correct"
    assert grade_answer("A", BURROW, "B").outcome == "wrong"
    assert grade_answer("no idea", BURROW, "B").outcome == "unparseable"
    assert grade_answer("", BURROW, "B").outcome == "empty"
    assert grade_answer("<think>only thinking</think>", BURROW, "B").outcome == "empty"


def test_rule_is_recorded() -> None:
    assert grade_answer("Answer: b", BURROW, "B").rule == "answer-phrase"
    assert grade_answer("no idea", BURROW, "B").rule is None


def test_empty_answer_is_incomplete() -> None:
    graded = grade_answer("   ", BURROW, "B", finish_reason="stop")
    assert graded.outcome == "empty" and not graded.complete and not graded.cut_off


def test_length_finish_reason_is_cut_off() -> None:
    graded = grade_answer("B. He comes out of the burrow and then stretches", BURROW, "B", finish_reason="length")
    assert graded.cut_off and not graded.complete
    assert graded.outcome == "correct"  # graded on the text that arrived; incompleteness is reported apart


@pytest.mark.parametrize(
    ("finish_reason", "output_tokens", "max_tokens", "cut"),
    [
        ("length", None, None, True),
        ("stop", 16, 16, False),  # the server's own reason wins over the count
        (None, 16, 16, True),
        (None, 17, 16, True),
        (None, 3, 16, False),
        (None, None, 16, False),
        (None, 16, None, False),
    ],
)
def test_is_cut_off(finish_reason: str | None, output_tokens: int | None, max_tokens: int | None, cut: bool) -> None:
    assert is_cut_off(finish_reason, output_tokens, max_tokens) is cut


def test_expected_letter_must_be_an_option() -> None:
    with pytest.raises(ValueError, match="not one of the options"):
        grade_answer("B", BURROW, "E")


def test_grading_is_deterministic() -> None:
    answers = ["B", "A rabbit climbs out (B).", "Answer: b", "goes in and comes out", ""]
    first = [grade_answer(answer, BURROW, "B") for answer in answers]
    assert first == [grade_answer(answer, BURROW, "B") for answer in answers]


# --- aggregation over forward and reversed clips ----------------------------------------------------------


def answer(variant: str, repeat: int, text: str, expected: str, question_id: str = "q") -> GradedAnswer:
    return grade_answer(text, BURROW, expected, question_id=question_id, variant=variant, repeat=repeat)


def test_question_passes_only_when_both_variants_are_right() -> None:
    grade = grade_question(
        "q",
        [
            answer("forward", 0, "B", "B"),
            answer("reversed", 0, "A", "A"),
            answer("forward", 1, "B", "B"),
            answer("reversed", 1, "B", "A"),  # a model that ignores time answers B both ways
        ],
    )
    assert grade.forward_accuracy == 1.0
    assert grade.reversed_accuracy == 0.5
    assert grade.both_right == 1 and grade.repeats == 2
    assert grade.both_right_rate == 0.5
    assert not grade.passed


def test_question_passes_when_every_repeat_is_both_right() -> None:
    answers = [
        answer(variant, r, text, text) for r in range(3) for variant, text in (("forward", "B"), ("reversed", "A"))
    ]
    grade = grade_question("q", answers)
    assert grade.passed and grade.both_right_rate == 1.0
    assert grade.forward.rules == {"whole-letter": 3}


def test_a_missing_side_is_not_both_right() -> None:
    grade = grade_question("q", [answer("forward", 0, "B", "B")])
    assert grade.repeats == 1 and grade.both_right == 0 and not grade.passed
    assert grade.reversed_accuracy is None


def test_unparseable_and_empty_are_not_wrong() -> None:
    grade = grade_question(
        "q",
        [answer("forward", 0, "no idea", "B"), answer("forward", 1, "", "B"), answer("forward", 2, "A", "B")],
    )
    counts = grade.forward
    assert (counts.correct, counts.wrong, counts.unparseable, counts.empty) == (0, 1, 1, 1)
    assert counts.total == 3 and counts.incomplete == 1


def test_repeats_and_variants_are_checked() -> None:
    with pytest.raises(ValueError, match="two answers"):
        grade_question("q", [answer("forward", 0, "B", "B"), answer("forward", 0, "B", "B")])
    with pytest.raises(ValueError, match="clip variant"):
        grade_question("q", [answer("sideways", 0, "B", "B")])
    with pytest.raises(ValueError, match="given to the grade"):
        grade_question("other", [answer("forward", 0, "B", "B")])


def test_workload_grade() -> None:
    answers = [
        answer("forward", 0, "B", "B", "q1"),
        answer("reversed", 0, "A", "A", "q1"),
        answer("forward", 0, "B", "B", "q2"),
    ]
    grade = grade_workload(answers, ["q1", "q2", "q3"])
    assert [question.passed for question in grade.questions] == [True, False, False]
    assert grade.questions_passed == 1 and not grade.passed
    with pytest.raises(ValueError, match="unknown question"):
        grade_workload(answers, ["q1"])


@pytest.mark.timeout(60)  # a hang guard: the quadratic scan took minutes on this size, the linear one milliseconds
@pytest.mark.parametrize(
    "answer",
    [
        "<think>" * 200_000 + "B",  # opening tags that never close: the answer is cut off, hidden
        "<THINK>x" * 150_000 + "</think>B",  # one block from the first tag to the only closing one
        '"' * 400_000 + "B" + '"' * 400_000,  # quotes, layer after layer
        "</think>" * 150_000 + "B",
    ],
)
def test_grading_hostile_answers_takes_linear_time(answer: str) -> None:
    graded = grade_answer(answer, BURROW, "B")
    expected = "empty" if answer.startswith("<think>" * 2) else "correct"
    assert graded.outcome == expected, graded


def test_reasoning_blocks_are_removed_as_before() -> None:
    from trtmc_videoqa.workloads.grading import clean_answer

    assert clean_answer("a<think>x</think>b<THINK>y</Think>c") == "a b c"
    assert clean_answer("a<think>x<think>y</think>b") == "a b"  # the first closing tag ends the block
    assert clean_answer("x</think>y</think> \u201c B \u201d") == "B"
    assert clean_answer("B<think>cut") == "B" and clean_answer("<think>never closed") == ""
