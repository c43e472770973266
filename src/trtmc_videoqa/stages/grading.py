"""The `grading` stage: each steady-state answer graded (strict, deterministic, reversed-clip controls paired with
the forward answers). A figure, not a gate: the family's own correctness is a TRTMC row's quality gate. An endpoint
or comparison row may opt in to one (`--min-both-right`): under it, a both-right share below the floor fails the
row here."""

from __future__ import annotations

from ..common.atomic_write import write_model_atomic
from ..results import Accuracy, StageResult
from ..results.layout import GRADING_FILE
from ..workloads import Workload
from ..workloads.grading import GradedAnswer, grade_workload
from .protocol import Climb, RowJob, Stop, measuring, recorded


def grading(row: RowJob, climb: Climb) -> Climb | Stop:
    """Accuracy over the joined answers, written to grading.json; the stage passes, unless the row's opt-in gate
    (`Gates.min_both_right`) finds the both-right share below its floor."""
    climb, result = measuring(climb)
    result.accuracy = _accuracy(row.job.workload, result.graded)
    write_model_atomic(row.row_dir / GRADING_FILE, result.accuracy)
    both_right, floor = result.accuracy.both_right, row.gates.min_both_right
    detail = f"{len(result.graded)} answers graded; both-right {both_right}"
    if floor is None:
        stage = StageResult(name="grading", status="passed", detail=detail, evidence=[GRADING_FILE])
        return recorded(climb, result, stage, stops=False)
    held = both_right is not None and both_right >= floor
    gate = f"gate --min-both-right {floor:g}: {'held' if held else 'not met'}"
    stage = StageResult(
        name="grading", status="passed" if held else "failed", detail=f"{detail}; {gate}", evidence=[GRADING_FILE]
    )
    return recorded(climb, result, stage, stops=not held)


def _accuracy(workload: Workload, graded: list[GradedAnswer]) -> Accuracy:
    pairs = workload.reversal_pairs()
    forward_id, reversed_id = pairs[0] if pairs else (workload.spec.clips[0].id, "reversed")
    grade = grade_workload(
        graded, [q.id for q in workload.spec.questions], forward_variant=forward_id, reversed_variant=reversed_id
    )

    def mean(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return round(sum(present) / len(present), 4) if present else None

    outcomes = {k: sum(1 for g in graded if g.outcome == k) for k in ("correct", "wrong", "unparseable", "empty")}
    return Accuracy(
        questions=len(grade.questions),
        forward=mean([q.forward_accuracy for q in grade.questions]),
        reversed=mean([q.reversed_accuracy for q in grade.questions]),
        both_right=mean([q.both_right_rate for q in grade.questions]),
        graded=len(graded),
        incomplete=sum(1 for g in graded if not g.complete),
        **outcomes,
        per_question=[
            {
                "question_id": q.question_id,
                "forward": q.forward_accuracy,
                "reversed": q.reversed_accuracy,
                "both_right": q.both_right_rate,
                "passed": q.passed,
            }
            for q in grade.questions
        ],
    )
