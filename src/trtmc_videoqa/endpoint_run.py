"""Measure one running server: the capability check, the AIPerf run (warmup kept apart), then grading.

It never knows which server it talks to: trtmc-server, a comparison server, or the reference endpoint. What the
server says about itself (`X-Served-By`, `system_fingerprint`) is recorded, never used to decide anything.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .aiperf.command import AiperfSettings, profile_argv, reproducible_command
from .aiperf.dataset import Prompt, RequestPlan, plan_requests, write_input_file
from .aiperf.exports import ClientRecord, read_client_records, scrub_exports
from .aiperf.locate import AiperfInstall
from .aiperf.runner import RunOutcome, run_with_wall_limit
from .atomic_write import write_model_atomic, write_text_atomic
from .grading import GradedAnswer, grade_answer, grade_workload
from .results import Accuracy, RequestRow, StageResult
from .scrub import known_secrets
from .stats import latency_stats, requests_per_second
from .workloads import Workload

if TYPE_CHECKING:  # the capability check brings httpx; loaded when a measurement really starts
    from .serving.capability import CapabilityResult

# Where a server's own task time for a request can be found, most specific first: the response field of
# perf_serving / the reference endpoint (`trtmc_timing`), then a records file joined by X-Request-ID.
RESPONSE_TASK_FIELDS = (("trtmc_timing", "model_call_ms"), ("trtmc_timing", "handler_ms"))
RECORD_TASK_FIELDS = ("model_call_ms", "handler_ms", "task_ms")
RECORD_ID_FIELDS = ("request_id", "x_request_id", "id")


class RunSettings(BaseModel):
    """Everything that shapes a measurement; all of it joins the cache key."""

    repeats: int = 5
    warmup: int = 2
    concurrency: int = 1
    request_timeout_s: float = 60.0
    aiperf_wall_limit_s: float = 900.0
    capability_timeout_s: float = 120.0
    body_limit: int = 1_048_576
    max_tokens: int | None = None  # None: the workload's own


@dataclass
class EndpointMeasurement:
    stages: list[StageResult] = field(default_factory=list)
    capability: CapabilityResult | None = None
    plan: RequestPlan | None = None
    records: list[RequestRow] = field(default_factory=list)
    accuracy: Accuracy | None = None
    task_time_field: str | None = None
    commands: dict[str, str] = field(default_factory=dict)
    aiperf_exit: int | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False  # SIGINT while AIPerf ran: the caller records the row, then stops the run

    @property
    def failed_stage(self) -> StageResult | None:
        return next((s for s in self.stages if s.status in ("failed", "rejected")), None)


def workload_prompts(workload: Workload) -> list[Prompt]:
    return [
        Prompt(
            question_id=q.id,
            clip_id=clip.id,
            clip_path=str(workload.clip_path(clip.id).resolve()),
            text=workload.prompt(q.id).text,
        )
        for q in workload.spec.questions
        for clip in workload.spec.clips
    ]


def _records_by_request_id(path: Path | None) -> dict[str, dict[str, Any]]:
    if path is None or not path.is_file():
        return {}
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):  # a line that is JSON but no record: not this server's format
            continue
        key = next((record.get(k) for k in RECORD_ID_FIELDS if isinstance(record.get(k), str)), None)
        if key:
            found[key] = record
    return found


def server_task_time(client: ClientRecord, records: dict[str, dict[str, Any]]) -> tuple[float | None, str | None]:
    """The server's own task time for this request and the field it came from."""
    for outer, inner in RESPONSE_TASK_FIELDS:
        value = (
            (client.response_fields.get(outer) or {}).get(inner)
            if isinstance(client.response_fields.get(outer), dict)
            else None
        )
        if isinstance(value, (int, float)):
            return float(value), f"response.{outer}.{inner}"
    record = records.get(client.x_request_id or "")
    if record:
        for name in RECORD_TASK_FIELDS:
            if isinstance(record.get(name), (int, float)):
                return float(record[name]), f"records.{name}"
    return None, None


def _grade(workload: Workload, row: RequestRow, client: ClientRecord, max_tokens: int) -> GradedAnswer:
    question = workload.question(row.question_id)
    return grade_answer(
        client.answer or "",
        question.options,
        question.answers[row.clip_id],
        question_id=row.question_id,
        variant=row.clip_id,
        repeat=row.repeat,
        finish_reason=client.finish_reason,
        output_tokens=client.completion_tokens,
        max_tokens=max_tokens,
    )


def phase_problem(planned: str, sent_in: str, times: int) -> str | None:
    """Why a request's record cannot be trusted as planned, or None: AIPerf's own phase must be the planned one
    (warmup never enters steady state), and each planned conversation is sent exactly once."""
    if times > 1:
        return f"AIPerf sent this conversation {times} times; the plan sends it once"
    if sent_in != planned:
        return f"AIPerf sent it in its {sent_in!r} phase; the plan put it in {planned!r}"
    return None


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


def _set_aside(export_dir: Path) -> None:
    """A previous attempt's exports move to export.previous/, so a new run never reads a stale file as its own
    (AIPerf writes only some files when it fails) and the last attempt's evidence is still there to read."""
    if not export_dir.exists():
        return
    previous = export_dir.with_name(export_dir.name + ".previous")
    if previous.exists():
        shutil.rmtree(previous)
    export_dir.rename(previous)


def _failure_summary(failed: list[RequestRow], settings: RunSettings) -> str:
    """ "12 request(s) failed (12 TimeoutError); first: ..." with the fix where the error names one."""
    kinds = Counter(
        (r.error or "").split(":", 1)[0] if r.http_status is None else f"HTTP {r.http_status}" for r in failed
    )
    counted = ", ".join(f"{count} {kind}" for kind, count in kinds.most_common())
    text = f"{len(failed)} request(s) failed ({counted}); first: {failed[0].error}"
    if any("TimeoutError" in (r.error or "") for r in failed):
        text += f" (each request may take {settings.request_timeout_s:g} s: raise --request-timeout if that is short)"
    if any(r.http_status == 413 for r in failed):
        text += " (413: the body is over the server's limit: raise its --max-body-bytes or use a smaller clip)"
    return text


def measure_endpoint(
    *,
    url: str,
    model: str,
    workload: Workload,
    settings: RunSettings,
    aiperf: AiperfInstall,
    tokenizer: Path,
    row_dir: Path,
    api_key: str | None = None,
    server_records: Path | None = None,
    alive: Callable[[], bool] = lambda: True,
    progress: Callable[[str], None] = lambda _: None,
) -> EndpointMeasurement:
    from .media import ClipError
    from .serving.capability import check_capability

    result = EndpointMeasurement()
    max_tokens = settings.max_tokens or workload.spec.generation.max_tokens
    prompts = workload_prompts(workload)

    # 1. Capability check: one real clip-plus-question request. A 4xx is evidence of a missing capability.
    progress("capability check: one video request")
    first = prompts[0]
    try:
        capability = check_capability(
            url,
            model,
            Path(first.clip_path),
            first.text,
            max_tokens=max_tokens,
            timeout_s=settings.capability_timeout_s,
            body_limit=settings.body_limit,
            api_key=api_key,
        )
    except ClipError as error:  # over the body limit: refused before sending, nothing measured
        result.stages.append(StageResult(name="capability", status="failed", detail=str(error)))
        return result
    result.capability = capability
    write_model_atomic(row_dir / "capability.json", capability)
    if not capability.accepted:
        status = "rejected" if capability.rejected else "failed"
        result.stages.append(
            StageResult(
                name="capability",
                status=status,
                detail=capability.detail,
                wall_s=capability.latency_ms / 1000,
                evidence=["capability.json"],
            )
        )
        return result
    result.stages.append(
        StageResult(
            name="capability",
            status="passed",
            detail=f"answered: {capability.answer!r}",
            wall_s=capability.latency_ms / 1000,
            evidence=["capability.json"],
        )
    )

    # 2. AIPerf: warmup rows first, then every (question, clip, repeat) exactly once (one shared sampler).
    plan = plan_requests(
        prompts,
        repeats=settings.repeats,
        warmup=settings.warmup,
        max_tokens=max_tokens,
        temperature=workload.spec.generation.temperature,
    )
    result.plan = plan
    aiperf_dir = row_dir / "aiperf"
    input_file = write_input_file(plan, aiperf_dir / "inputs.jsonl")
    write_model_atomic(aiperf_dir / "plan.json", plan)
    aiperf_settings = AiperfSettings(
        url=url,
        model=model,
        tokenizer=str(tokenizer),
        input_file=str(input_file.resolve()),
        artifact_dir=str((aiperf_dir / "export").resolve()),
        warmup_requests=len(plan.warmup),
        profiling_requests=len(plan.profiling),
        concurrency=settings.concurrency,
        request_timeout_s=settings.request_timeout_s,
        api_key=api_key,
    )
    argv = profile_argv(aiperf.executable, aiperf_settings)
    result.commands["aiperf"] = reproducible_command(
        profile_argv(aiperf.executable, aiperf_settings, reveal_secrets=False)
    )
    progress(f"aiperf: {len(plan.warmup)} warmup + {len(plan.profiling)} profiling requests")
    _set_aside(Path(aiperf_settings.artifact_dir))
    started = time.monotonic()
    try:
        outcome = run_with_wall_limit(
            argv, wall_limit_s=settings.aiperf_wall_limit_s, log_path=aiperf_dir / "aiperf.log"
        )
    except KeyboardInterrupt:  # AIPerf's whole group is already ended; keep what it wrote, then say so
        result.interrupted = True
        outcome = RunOutcome(
            exit_code=None,
            timed_out=False,
            wall_s=time.monotonic() - started,
            log=str(aiperf_dir / "aiperf.log"),
            interrupted=True,
        )
    result.aiperf_exit = outcome.exit_code
    clients = read_client_records(Path(aiperf_settings.artifact_dir))
    scrub_exports(aiperf_dir, known_secrets(api_key))
    write_model_atomic(aiperf_dir / "outcome.json", outcome)

    # 3. Join: every planned request must be accounted for, by identity.
    planned = {r.session_id: r for r in plan.requests}
    by_session: dict[str, ClientRecord] = {}
    sent: dict[str, int] = {}
    for client in clients:
        by_session.setdefault(client.session_id, client)
        sent[client.session_id] = sent.get(client.session_id, 0) + 1
    server_records = _records_by_request_id(server_records)
    graded: list[GradedAnswer] = []
    task_fields: set[str] = set()
    for session_id, plan_row in planned.items():
        client = by_session.get(session_id)
        row = RequestRow(
            session_id=session_id,
            phase=plan_row.phase,
            question_id=plan_row.question_id,
            clip_id=plan_row.clip_id,
            repeat=plan_row.repeat,
        )
        if client is None:
            result.records.append(row.model_copy(update={"error": "no record: the request was never completed"}))
            continue
        task_ms, task_field = server_task_time(client, server_records)
        if task_field:
            task_fields.add(task_field)
        problem = phase_problem(plan_row.phase, client.phase, sent[session_id])
        update: dict[str, Any] = dict(
            x_request_id=client.x_request_id,
            start_ns=client.start_ns,
            end_ns=client.end_ns,
            client_latency_ms=client.latency_ms,
            server_task_ms=task_ms,
            http_status=client.http_status,
            error=client.error or problem,
            answer=client.answer,
        )
        if client.ok and not problem and plan_row.phase == "profiling":
            answer = _grade(workload, row, client, max_tokens)
            graded.append(answer)
            update.update(expected=answer.expected, grade=answer.outcome, rule=answer.rule)
        result.records.append(row.model_copy(update=update))
    result.task_time_field = ", ".join(sorted(task_fields)) or None

    profiling = [r for r in result.records if r.phase == "profiling"]
    completed = [r for r in profiling if r.error is None]
    failed = [r for r in result.records if r.error is not None]
    result.figures = {
        "client_latency": latency_stats([r.client_latency_ms for r in completed if r.client_latency_ms is not None]),
        "server_task_time": latency_stats([r.server_task_ms for r in completed if r.server_task_ms is not None]),
        "requests_per_s": requests_per_second(
            [(c.start_ns, c.end_ns) for c in clients if c.phase == "profiling" and c.ok and c.start_ns and c.end_ns]
        ),
        "completed": len(completed),
        "failed": len(failed),
    }
    write_text_atomic(row_dir / "requests.jsonl", "".join(r.model_dump_json() + "\n" for r in result.records))
    evidence = ["aiperf/plan.json", "aiperf/outcome.json", "aiperf/aiperf.log", "requests.jsonl"]
    missing = [r.session_id for r in result.records if r.error and r.error.startswith("no record")]
    server_gone = "" if alive() else "; the server is no longer running"
    if outcome.interrupted:
        detail, status = (
            (
                f"interrupted (SIGINT) while AIPerf ran; AIPerf was ended; {len(completed)} profiling "
                f"request(s) recorded; run again to measure"
            ),
            "failed",
        )
    elif outcome.timed_out:
        detail, status = f"aiperf overstayed its {settings.aiperf_wall_limit_s:g} s wall limit and was ended", "failed"
    elif missing or server_gone:
        detail, status = f"{len(missing)} planned request(s) have no record{server_gone}", "failed"
        answered_badly = [r for r in failed if not (r.error or "").startswith("no record")]
        if answered_badly:
            detail += f"; {_failure_summary(answered_badly, settings)}"
    elif failed:
        detail, status = _failure_summary(failed, settings), "failed"
    else:
        detail = (
            f"exit {outcome.exit_code}; {len(plan.warmup)} warmup and {len(completed)} profiling requests, "
            "every one accounted for"
        )
        status = "passed"
    result.stages.append(
        StageResult(name="aiperf", status=status, detail=detail, wall_s=round(outcome.wall_s, 3), evidence=evidence)
    )
    if status != "passed":
        return result

    # 4. Grading: strict and deterministic; reversed-clip controls pair with the forward answers.
    result.accuracy = _accuracy(workload, graded)
    write_model_atomic(row_dir / "grading.json", result.accuracy)
    result.stages.append(
        StageResult(
            name="grading",
            status="passed",
            detail=f"{len(graded)} answers graded; both-right {result.accuracy.both_right}",
            evidence=["grading.json"],
        )
    )
    return result
