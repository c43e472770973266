"""The `grading` stage: each steady-state answer graded (strict, deterministic, reversed-clip controls paired with
the forward answers). A figure, not a gate: the family's own correctness is a TRTMC row's quality gate. An endpoint
or comparison row may opt in to one (`--min-both-right`): under it, a both-right share below the floor fails the
row here."""

from __future__ import annotations

from ..climb.levels import LevelRun, judged
from ..climb.protocol import Climb, RowJob, Stop, measuring, recorded
from ..common.atomic_write import write_model_atomic
from ..results import Accuracy, StageResult
from ..results.layout import GRADING_FILE
from ..workloads import Workload
from ..workloads.grading import GradedAnswer, WorkloadGrade, grade_workload


def grading(row: RowJob, climb: Climb) -> Climb | Stop:
    """Accuracy over the joined answers, written to grading.json; the stage passes, unless the row's opt-in gate
    (`Gates.min_both_right`) finds the both-right share below its floor. Each run of a sweep or repeat is graded
    on its own answers (a model whose answers change under load shows it); the row's accuracy is the first run's."""
    climb, result = measuring(climb)
    workload, floor = row.job.workload, row.gates.min_both_right

    def judge(run: LevelRun) -> StageResult:
        run.accuracy, run.grade = _accuracy(workload, run.graded)
        return _graded(run.accuracy, len(run.graded), floor)

    if result.levels:
        stage = judged(result.levels, "grading", judge)
        result.accuracy = result.levels[0].accuracy
    else:
        result.accuracy = _accuracy(workload, result.graded)[0]
        stage = _graded(result.accuracy, len(result.graded), floor)
    if result.accuracy is not None:
        write_model_atomic(row.row_dir / GRADING_FILE, result.accuracy)
    return recorded(climb, result, stage, stops=stage.status != "passed")


def _graded(accuracy: Accuracy, graded: int, floor: float | None) -> StageResult:
    both_right = accuracy.both_right
    detail = f"{graded} answers graded; both-right {both_right}"
    if floor is None:
        return StageResult(name="grading", status="passed", detail=detail, evidence=[GRADING_FILE])
    held = both_right is not None and both_right >= floor
    gate = f"gate --min-both-right {floor:g}: {'held' if held else 'not met'}"
    return StageResult(
        name="grading", status="passed" if held else "failed", detail=f"{detail}; {gate}", evidence=[GRADING_FILE]
    )


def _accuracy(workload: Workload, graded: list[GradedAnswer]) -> tuple[Accuracy, WorkloadGrade]:
    pairs = workload.reversal_pairs()
    forward_id, reversed_id = pairs[0] if pairs else (workload.spec.clips[0].id, "reversed")
    grade = grade_workload(
        graded, [q.id for q in workload.spec.questions], forward_variant=forward_id, reversed_variant=reversed_id
    )

    def mean(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return round(sum(present) / len(present), 4) if present else None

    outcomes = {k: sum(1 for g in graded if g.outcome == k) for k in ("correct", "wrong", "unparseable", "empty")}
    accuracy = Accuracy(
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
    return accuracy, grade
