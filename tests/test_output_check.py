"""The output check: every profiling answer complete and resolving to exactly one option, accuracy never a gate; and
the self-test plan, the only place a "cannot tell" no-answer is declared acceptable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from trtmc_videoqa.plan.self_test import DeclaredNoAnswer, SelfTestPlan, load_self_test_plan, plan_text
from trtmc_videoqa.results import OutputCheck, RequestRow
from trtmc_videoqa.stages.output_check import check_outputs, classify, output_check_stage, write_output_check
from trtmc_videoqa.workloads import load_workload
from trtmc_videoqa.workloads.grading import GradedAnswer, grade_answer

CANNOT_TELL = "I cannot tell from this clip."
DECLARED = DeclaredNoAnswer(phrase="cannot tell", why="the test double cannot tell what happens in a real clip")
QUESTION = load_workload("synthetic").question("synthetic-direction")  # forward A (left to right), reversed B
CLIPS = ("forward", "reversed")


def requests(repeats: int = 4, *, warmup: int = 1) -> list[RequestRow]:
    """Warmup rows (never checked), then 2 clips x ``repeats`` profiling rows."""
    rows = [
        RequestRow(session_id=f"warm-{i}", phase="warmup", question_id=QUESTION.id, clip_id="forward", repeat=i)
        for i in range(warmup)
    ]
    rows += [
        RequestRow(
            session_id=f"{QUESTION.id}-{clip}-{r}", phase="profiling", question_id=QUESTION.id, clip_id=clip, repeat=r
        )
        for clip in CLIPS
        for r in range(repeats)
    ]
    return rows


def graded(records: list[RequestRow], text: str | dict[str, str], **finish: Any) -> list[GradedAnswer]:
    """Every profiling record answered with ``text`` (or the text per clip)."""
    return [
        grade_answer(
            text if isinstance(text, str) else text[record.clip_id],
            QUESTION.options,
            QUESTION.answers[record.clip_id],
            question_id=record.question_id,
            variant=record.clip_id,
            repeat=record.repeat,
            **finish,
        )
        for record in records
        if record.phase == "profiling"
    ]


def check(text: str | dict[str, str], *, declared: DeclaredNoAnswer | None = None, **finish: Any) -> OutputCheck:
    records = requests()
    return check_outputs(graded(records, text, **finish), records, declared=declared)


def test_cannot_tell_fails_as_unparseable_with_examples() -> None:
    result = check(CANNOT_TELL)
    assert not result.passed and result.checked == 8
    assert result.by_outcome["unparseable"] == 8 and result.by_outcome["resolved"] == 0
    outcomes = ["resolved", "unparseable", "ambiguous", "empty", "cut-off", "malformed", "declared-no-answer"]
    assert list(result.by_outcome) == outcomes
    assert 0 < len(result.examples) <= 5 and result.examples[0].answer == CANNOT_TELL
    assert result.examples[0].session_id == f"{QUESTION.id}-forward-0"
    assert result.declared_no_answer is None
    stage = output_check_stage(result)
    assert (stage.name, stage.status) == ("output-check", "failed")
    assert stage.detail == "0 of 8 answers resolve to one option: unparseable 8 (e.g. 'I cannot tell from this clip.')"
    assert stage.evidence == ["output_check.json", "requests.jsonl"]


def test_garbage_fails() -> None:
    result = check("zebra banana umbrella")
    assert not result.passed and result.by_outcome["unparseable"] == 8
    assert "zebra banana umbrella" in output_check_stage(result).detail


def test_an_answer_naming_two_options_is_ambiguous() -> None:
    result = check("either left to right or right to left")
    assert not result.passed and result.by_outcome["ambiguous"] == 8


def test_answers_cut_at_the_token_limit_fail_even_when_they_name_an_option() -> None:
    result = check("B because the square moves", finish_reason="length")
    assert not result.passed and result.by_outcome["cut-off"] == 8
    assert all(example.outcome == "cut-off" for example in result.examples)
    # without a finish reason, reaching max_tokens is cut off too
    assert check("B", output_tokens=16, max_tokens=16).by_outcome["cut-off"] == 8
    assert check("B", finish_reason="stop", output_tokens=16, max_tokens=16).passed


def test_wrong_but_resolved_answers_pass_accuracy_is_no_gate() -> None:
    result = check({"forward": "B", "reversed": "The square moves from left to right."})  # both wrong
    assert result.passed and result.by_outcome["resolved"] == result.checked == 8
    stage = output_check_stage(result)
    assert stage.status == "passed" and stage.detail == "8 of 8 answers complete and resolving to one option"


def test_the_declared_phrase_passes_only_with_the_declaration_and_only_when_complete() -> None:
    assert not check(CANNOT_TELL).passed
    declared = check("  I CANNOT\n tell from this clip.", declared=DECLARED)
    assert declared.passed and declared.by_outcome["declared-no-answer"] == 8
    assert declared.declared_no_answer is not None and "'cannot tell'" in declared.declared_no_answer
    assert DECLARED.why in declared.declared_no_answer
    detail = output_check_stage(declared).detail
    assert detail.endswith("8 declared no-answer (as the self-test plan declares)"), detail
    cut = check(CANNOT_TELL, declared=DECLARED, finish_reason="length")
    assert not cut.passed and cut.by_outcome["cut-off"] == 8 and cut.by_outcome["declared-no-answer"] == 0
    other = check("zebra banana umbrella", declared=DECLARED)  # the declaration excuses its phrase, nothing else
    assert not other.passed and other.by_outcome["unparseable"] == 8


def test_classify_order() -> None:
    options, expected = QUESTION.options, QUESTION.answers["forward"]
    assert classify(grade_answer("", options, expected, finish_reason="length"), DECLARED) == "empty"
    assert classify(grade_answer("A", options, expected, finish_reason="length"), None) == "cut-off"
    assert classify(grade_answer("B", options, expected), None) == "resolved"
    assert classify(grade_answer(CANNOT_TELL, options, expected), None) == "unparseable"
    assert classify(grade_answer(CANNOT_TELL, options, expected), DECLARED) == "declared-no-answer"


def test_a_missing_answer_counts_as_empty() -> None:
    records = requests()
    answers = graded(records, "A")[1:]  # the first profiling request never came back whole
    records[1] = records[1].model_copy(update={"error": "no record: the request was never completed"})
    result = check_outputs(answers, records)
    assert not result.passed and result.checked == 8
    assert result.by_outcome["empty"] == 1 and result.by_outcome["resolved"] == 7
    first = result.examples[0]
    assert (first.outcome, first.session_id) == ("empty", records[1].session_id)
    assert "never completed" in first.answer


def test_no_profiling_records_is_no_pass() -> None:
    result = check_outputs([], requests(0))
    assert not result.passed and result.checked == 0


def test_examples_are_scrubbed_truncated_at_most_five_failing_first() -> None:
    secret = "sk-live-0123456789abcdef"
    records = requests()
    long = f"the key is {secret} " + "and so on " * 40
    texts = ["A", "B", long, "A", "B", CANNOT_TELL, "A", "zebra"]
    answers = [
        grade_answer(
            text,
            QUESTION.options,
            QUESTION.answers[r.clip_id],
            question_id=r.question_id,
            variant=r.clip_id,
            repeat=r.repeat,
            finish_reason="length" if text == "zebra" else "stop",
        )
        for text, r in zip(texts, [r for r in records if r.phase == "profiling"], strict=True)
    ]
    result = check_outputs(answers, records, secrets=[secret])
    assert len(result.examples) == 5
    assert [e.outcome for e in result.examples[:4]] == ["unparseable", "cut-off", "unparseable", "resolved"]
    assert all(secret not in e.answer for e in result.examples)
    scrubbed = result.examples[0].answer
    assert scrubbed.startswith("the key is *** and so on") and len(scrubbed) == 160 and scrubbed.endswith("…")
    assert secret not in output_check_stage(result).detail


def test_the_check_is_written_beside_the_row(tmp_path: Path) -> None:
    result = check("A")
    path = write_output_check(tmp_path, result)
    assert path == tmp_path / "output_check.json"
    assert OutputCheck.model_validate_json(path.read_bytes()) == result


def test_the_self_test_plan_declares_the_no_answer_for_the_real_clip_only() -> None:
    plan = load_self_test_plan()
    assert plan is load_self_test_plan()  # cached
    assert plan.workloads() == ["synthetic", "bigbuckbunny"]
    assert plan.native_route is True and "test double" in plan.server
    declared = plan.declared_for("bigbuckbunny")
    assert declared is not None and declared.phrase == "cannot tell" and "test double" in declared.why
    assert plan.declared_for("synthetic") is None
    assert plan.declared_for("no-such-workload") is None
    for name in plan.workloads():
        load_workload(name)  # every row names a built-in workload


def test_the_plan_file_rejects_an_unknown_key_and_a_repeated_workload() -> None:
    data = json.loads(plan_text())
    with pytest.raises(ValidationError, match="extra"):
        SelfTestPlan.model_validate({**data, "surprise": 1})
    with pytest.raises(ValidationError, match="extra"):
        SelfTestPlan.model_validate({**data, "rows": [{**data["rows"][0], "expect": "anything"}]})
    with pytest.raises(ValidationError, match="more than once"):
        SelfTestPlan.model_validate({**data, "rows": [data["rows"][0], data["rows"][0]]})
    with pytest.raises(ValidationError):
        SelfTestPlan.model_validate({**data, "rows": []})


def test_the_workload_itself_declares_no_expected_no_answer() -> None:
    raw = (load_workload("bigbuckbunny").root / "workload.json").read_text()
    assert "cannot tell" not in raw.casefold() and "declared_no_answer" not in raw
