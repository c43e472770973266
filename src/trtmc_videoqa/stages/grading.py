"""The `grading` stage: each steady-state answer graded (strict, deterministic, reversed-clip controls paired with
the forward answers). A figure, never a gate: the family's own correctness is the quality gate."""

from __future__ import annotations

from ..common.atomic_write import write_model_atomic
from ..results import Accuracy, StageResult
from ..results.layout import GRADING_FILE
from ..workloads import Workload
from ..workloads.grading import GradedAnswer, grade_workload
from .protocol import Climb, RowJob, Stop, measuring, recorded


def grading(row: RowJob, climb: Climb) -> Climb | Stop:
    """Accuracy over the joined answers, written to grading.json; the stage always passes."""
    climb, result = measuring(climb)
    result.accuracy = _accuracy(row.job.workload, result.graded)
    write_model_atomic(row.row_dir / GRADING_FILE, result.accuracy)
    stage = StageResult(
        name="grading",
        status="passed",
        detail=f"{len(result.graded)} answers graded; both-right {result.accuracy.both_right}",
        evidence=[GRADING_FILE],
    )
    return recorded(climb, result, stage, stops=False)


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
