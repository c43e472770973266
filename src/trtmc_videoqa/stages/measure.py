"""Measure one running server: the capability check, the AIPerf run (warmup kept apart), then grading.

It never knows which server it talks to: trtmc-server, a comparison server, or the reference endpoint. What the
server says about itself (`X-Served-By`, `system_fingerprint`) is recorded, never used to decide anything.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..aiperf.command import AiperfSettings, key_config_yaml, key_environment, profile_argv, reproducible_command
from ..aiperf.dataset import Prompt, RequestPlan, plan_requests, write_input_file
from ..aiperf.exports import ClientRecord, read_client_records, scrub_export_file, scrub_exports
from ..aiperf.locate import AiperfInstall
from ..aiperf.runner import RunOutcome, run_with_wall_limit
from ..aiperf.tokenizer import aiperf_environment
from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.scrub import known_secrets
from ..machine.gpu import gpu_busy_percent
from ..plan.settings import RunSettings
from ..results import Accuracy, OutputCheck, RequestRow, StageResult, StageStatus, TransportAttempt, VideoTransport
from ..results.layout import PRIVATE_DIR
from ..rows.stats import latency_stats, requests_per_second
from ..workloads import Workload
from ..workloads.grading import GradedAnswer, grade_workload
from .capability import CapabilityOutcome, CapabilityRequest, aiperf_videos, check_over_transports
from .join import join_requests, read_server_records
from .output_check import check_outputs, output_check_stage, write_output_check
from .timing import timing_stage

if TYPE_CHECKING:  # the capability check brings httpx; loaded when a measurement really starts
    from ..plan.self_test import DeclaredNoAnswer
    from ..serving.capability import CapabilityResult

# Over http the input file names the run's own loopback clip server, which lives only as long as the run.
HTTP_INPUTS_NOTE = (
    "# inputs.jsonl names this run's loopback clip server (video transport http), which served the workload's\n"
    "# files (workload/<name>/files/) only while the run lasted: re-run qualify with --video-transport http\n"
)
AIPERF_LOG = "aiperf.log"  # AIPerf's stdout and stderr, under the row's private/ folder: a raw log, never published
AIPERF_OWN_LOGS = "logs"  # the folder AIPerf writes its own log to, in its artifact directory
AIPERF_LOGS = "aiperf-logs"  # where that folder is kept, under the row's private/ folder


@dataclass(frozen=True)
class Gates:
    """What a row must show beyond a complete AIPerf run: every task time (on trtmc-server), and the one no-answer
    its run's own plan declares (the self-test's test double on a real clip), if any."""

    require_task_time: bool = False
    declared_no_answer: DeclaredNoAnswer | None = None


@dataclass
class EndpointMeasurement:
    stages: list[StageResult] = field(default_factory=list)
    capability: CapabilityResult | None = None
    plan: RequestPlan | None = None
    records: list[RequestRow] = field(default_factory=list)
    accuracy: Accuracy | None = None
    output_check: OutputCheck | None = None
    task_time_field: str | None = None
    timing_scope: str | None = None
    commands: dict[str, str] = field(default_factory=dict)
    aiperf_exit: int | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False  # SIGINT while AIPerf ran: the caller records the row, then stops the run
    video_transport: VideoTransport | None = None  # the one the capability check accepted, used from then on
    transport_attempts: list[TransportAttempt] = field(default_factory=list)

    @property
    def failed_stage(self) -> StageResult | None:
        return next((s for s in self.stages if s.status in ("failed", "rejected")), None)


@dataclass(frozen=True)
class Target:
    """The server measured: where it is, the model name sent, and the API key it may want."""

    url: str
    model: str
    api_key: str | None = None


@dataclass(frozen=True)
class AiperfRun:
    """What one AIPerf run left: how it ended, its per-request records, and how to run it again."""

    outcome: RunOutcome
    clients: list[ClientRecord]
    command: str  # secrets as placeholders
    interrupted: bool  # SIGINT while it ran


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
    gates: Gates = Gates(),
    clip_urls: dict[str, str] | None = None,
) -> EndpointMeasurement:
    """Capability, AIPerf, the join, task timing, grading, the output check, each recorded as a stage; the first
    that does not pass ends it. `clip_urls` (clip id -> URL on the run's clip server) serves the http transport."""
    result = EndpointMeasurement()
    target = Target(url, model, api_key)
    max_tokens = settings.max_tokens or workload.spec.generation.max_tokens
    prompts = workload_prompts(workload)
    urls = dict(clip_urls or {})
    progress(f"capability check: one video request ({settings.video_transport})")
    transport = _capability(
        result, check_video_capability(target, prompts[0], settings, max_tokens, row_dir, workload, urls)
    )
    if transport is None:
        return result
    plan = result.plan = _plan(prompts, settings, max_tokens, workload, aiperf_videos(transport, urls))
    run = run_aiperf(target, plan, settings, aiperf, tokenizer, row_dir, progress)
    result.commands["aiperf"] = (HTTP_INPUTS_NOTE if transport == "http" else "") + run.command
    result.aiperf_exit, result.interrupted = run.outcome.exit_code, run.interrupted
    joined = join_requests(plan, run.clients, read_server_records(server_records), workload, max_tokens)
    result.records, result.task_time_field = joined.records, joined.task_time_field
    result.timing_scope = joined.timing_scope
    result.figures = _figures(result.records, run.clients)
    write_text_atomic(row_dir / "requests.jsonl", "".join(r.model_dump_json() + "\n" for r in result.records))
    aiperf_stage = _aiperf_stage(run.outcome, result.records, plan, settings, server_gone=not alive())
    result.stages.append(aiperf_stage)
    if aiperf_stage.status != "passed":
        return result
    timing = timing_stage(
        result.records,
        required=gates.require_task_time,
        task_time_field=joined.task_time_field,
        timing_scope=joined.timing_scope,
    )
    result.stages.append(timing)
    if timing.status == "failed":
        return result
    _grade_and_check(result, workload, joined.graded, row_dir, gates, api_key)
    return result


def _plan(
    prompts: list[Prompt], settings: RunSettings, max_tokens: int, workload: Workload, videos: dict[str, str]
) -> RequestPlan:
    """Warmup rows first, then every (question, clip, repeat) exactly once (one shared sampler), each carrying
    the clip as the row's transport does and the workload's extra body fields."""
    return plan_requests(
        prompts,
        repeats=settings.repeats,
        warmup=settings.warmup,
        max_tokens=max_tokens,
        temperature=workload.spec.generation.temperature,
        videos=videos,
        extra_body=workload.spec.generation.extra_body,
    )


def _capability(result: EndpointMeasurement, capability: CapabilityOutcome) -> VideoTransport | None:
    """The capability stage and its tries recorded; the transport accepted, or None when the row stops here."""
    result.stages.append(capability.stage)
    result.capability, result.transport_attempts = capability.capability, capability.attempts
    result.video_transport = capability.transport
    return capability.transport if capability.stage.status == "passed" else None


def _grade_and_check(
    result: EndpointMeasurement,
    workload: Workload,
    graded: list[GradedAnswer],
    row_dir: Path,
    gates: Gates,
    api_key: str | None,
) -> None:
    """Grading (a figure: strict, deterministic, reversed-clip controls paired with the forward answers), then the
    output check (a gate: every answer complete and resolving to exactly one option)."""
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
    check = check_outputs(
        graded, result.records, declared=gates.declared_no_answer, secrets=sorted(known_secrets(api_key))
    )
    write_output_check(row_dir, check)
    result.output_check = check
    result.stages.append(output_check_stage(check))


def check_video_capability(
    target: Target,
    first: Prompt,
    settings: RunSettings,
    max_tokens: int,
    row_dir: Path,
    workload: Workload,
    clip_urls: dict[str, str],
) -> CapabilityOutcome:
    """One real clip-plus-question request per transport tried; a 4xx is evidence of a missing capability (the
    stage is `rejected`), a server error about the clip's URL or format a transport that failed."""
    request = CapabilityRequest(
        url=target.url,
        model=target.model,
        api_key=target.api_key,
        prompt=first,
        max_tokens=max_tokens,
        extra_body=dict(workload.spec.generation.extra_body),
        clip_urls=clip_urls,
    )
    return check_over_transports(request, settings, row_dir)


def run_aiperf(
    target: Target,
    plan: RequestPlan,
    settings: RunSettings,
    aiperf: AiperfInstall,
    tokenizer: Path,
    row_dir: Path,
    progress: Callable[[str], None],
) -> AiperfRun:
    """AIPerf on the plan's input file under our wall limit; its exports scrubbed of secrets, its outcome written.
    Its raw logs (its output, and the log folder it writes among its exports) are kept under the row's private/."""
    aiperf_dir, private = row_dir / "aiperf", row_dir / PRIVATE_DIR
    input_file = write_input_file(plan, aiperf_dir / "inputs.jsonl")
    write_model_atomic(aiperf_dir / "plan.json", plan)
    config_file = None
    if target.api_key:  # the key reaches AIPerf by environment, named in this file, never on its command line
        config_file = write_text_atomic(aiperf_dir / "aiperf-config.yaml", key_config_yaml(str(input_file.resolve())))
    aiperf_settings = AiperfSettings(
        url=target.url,
        model=target.model,
        tokenizer=str(tokenizer),
        input_file=str(input_file.resolve()),
        artifact_dir=str((aiperf_dir / "export").resolve()),
        warmup_requests=len(plan.warmup),
        profiling_requests=len(plan.profiling),
        concurrency=settings.concurrency,
        request_timeout_s=settings.request_timeout_s,
        api_key=target.api_key,
        config_file=str(config_file.resolve()) if config_file else None,
    )
    argv = profile_argv(aiperf.executable, aiperf_settings)
    command = reproducible_command(argv)
    progress(f"aiperf: {len(plan.warmup)} warmup + {len(plan.profiling)} profiling requests")
    _set_aside(Path(aiperf_settings.artifact_dir))
    log = private / AIPERF_LOG
    busy = gpu_busy_percent()  # aiperf_qual's idleness fact for the run (execution.jsonl): read before it starts
    started = time.monotonic()
    interrupted = False
    try:
        outcome = run_with_wall_limit(
            argv,
            wall_limit_s=settings.aiperf_wall_limit_s,
            log_path=log,
            env=aiperf_environment(dict(os.environ)) | key_environment(aiperf_settings),
        )
    except KeyboardInterrupt:  # AIPerf's whole group is already ended; keep what it wrote, then say so
        interrupted = True
        wall = time.monotonic() - started
        outcome = RunOutcome(exit_code=None, timed_out=False, wall_s=wall, log=str(log), interrupted=True)
    outcome = outcome.model_copy(update={"gpu_busy_percent": busy})
    clients = read_client_records(Path(aiperf_settings.artifact_dir))
    secrets = known_secrets(target.api_key)
    scrub_exports(aiperf_dir, secrets)
    scrub_export_file(log, secrets)
    _keep_private(Path(aiperf_settings.artifact_dir) / AIPERF_OWN_LOGS, private / AIPERF_LOGS)
    write_model_atomic(aiperf_dir / "outcome.json", outcome)
    return AiperfRun(outcome=outcome, clients=clients, command=command, interrupted=interrupted)


def _figures(records: list[RequestRow], clients: list[ClientRecord]) -> dict[str, Any]:
    """Steady-state figures over the profiling requests that came back whole."""
    completed = [r for r in records if r.phase == "profiling" and r.error is None]
    return {
        "client_latency": latency_stats([r.client_latency_ms for r in completed if r.client_latency_ms is not None]),
        "server_task_time": latency_stats([r.server_task_ms for r in completed if r.server_task_ms is not None]),
        "requests_per_s": requests_per_second(
            [(c.start_ns, c.end_ns) for c in clients if c.phase == "profiling" and c.ok and c.start_ns and c.end_ns]
        ),
        "completed": len(completed),
        "failed": sum(1 for r in records if r.error is not None),
    }


def _aiperf_stage(
    outcome: RunOutcome, records: list[RequestRow], plan: RequestPlan, settings: RunSettings, *, server_gone: bool
) -> StageResult:
    """Passed only when every planned request is accounted for and none failed; else the first reason, named."""
    completed = [r for r in records if r.phase == "profiling" and r.error is None]
    failed = [r for r in records if r.error is not None]
    missing = [r for r in records if r.error and r.error.startswith("no record")]
    gone = "; the server is no longer running" if server_gone else ""
    status: StageStatus = "failed"
    if outcome.interrupted:
        detail = (
            f"interrupted (SIGINT) while AIPerf ran; AIPerf was ended; {len(completed)} profiling "
            f"request(s) recorded; run again to measure"
        )
    elif outcome.timed_out:
        detail = f"aiperf overstayed its {settings.aiperf_wall_limit_s:g} s wall limit and was ended"
    elif missing or gone:
        detail = f"{len(missing)} planned request(s) have no record{gone}"
        answered_badly = [r for r in failed if not (r.error or "").startswith("no record")]
        if answered_badly:
            detail += f"; {_failure_summary(answered_badly, settings)}"
    elif failed:
        detail = _failure_summary(failed, settings)
    else:
        detail = (
            f"exit {outcome.exit_code}; {len(plan.warmup)} warmup and {len(completed)} profiling requests, "
            "every one accounted for"
        )
        status = "passed"
    evidence = ["aiperf/plan.json", "aiperf/outcome.json", f"{PRIVATE_DIR}/{AIPERF_LOG}", "requests.jsonl"]
    return StageResult(name="aiperf", status=status, detail=detail, wall_s=round(outcome.wall_s, 3), evidence=evidence)


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


def _keep_private(logs: Path, kept: Path) -> None:
    """AIPerf's own log folder moved out of its exports to `kept` (under private/), replacing an earlier run's; never
    through a symbolic link: a link is moved or removed as the link itself."""
    if not os.path.lexists(logs):
        return
    kept.parent.mkdir(parents=True, exist_ok=True)
    if kept.is_symlink() or (os.path.lexists(kept) and not kept.is_dir()):
        kept.unlink()
    elif kept.is_dir():
        shutil.rmtree(kept)  # removes links inside as links, never what they point to
    os.replace(logs, kept)


def _set_aside(export_dir: Path) -> None:
    """A previous attempt's exports move to export.previous/, so a new run never reads a stale file as its own
    (AIPerf writes only some files when it fails) and the last attempt's evidence is still there to read."""
    if not export_dir.exists():
        return
    previous = export_dir.with_name(export_dir.name + ".previous")
    if previous.exists():
        shutil.rmtree(previous)
    export_dir.rename(previous)
    # An attempt cut off before its logs were kept apart (Ctrl-C during AIPerf) left them in its export.
    _keep_private(previous / AIPERF_OWN_LOGS, export_dir.parent.parent / PRIVATE_DIR / (AIPERF_LOGS + ".previous"))


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
