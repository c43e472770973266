"""The `aiperf` stage: the published AIPerf client over the workload's planned requests, under our own wall limit.

Warmup rows are kept apart from the profiling ones; every planned request is then matched to AIPerf's record of it
and to the server's own task time (climb/join.py). AIPerf's exports are scrubbed of secrets; its raw logs are kept
under the row's private/ folder, never published.

A row measuring a server this run did not start (`guarded`) sends AIPerf's requests through the loopback guard
(serving/forward_proxy.py): no redirect is followed, no response passes `--max-response-bytes` once decoded, and
the stage says it ran and what it refused (aiperf/guard.json).
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..aiperf.command import AiperfSettings, key_config_yaml, key_environment, profile_argv, recorded_argv
from ..aiperf.dataset import Prompt, RequestPlan, plan_requests, write_input_file
from ..aiperf.exports import ClientRecord, read_client_records
from ..aiperf.progress import AiperfCount
from ..aiperf.runner import RunOutcome, run_with_wall_limit
from ..aiperf.scrub import scrub_export_file, scrub_exports
from ..aiperf.tokenizer import aiperf_environment
from ..aiperf_qual.execution_file import AiperfEvidence, RunFacts, aiperf_evidence
from ..climb.join import join_requests, keep_raw_answers, read_server_records, with_server_text_notes
from ..climb.levels import LevelRun, Load, combined, loads
from ..climb.prompts import workload_prompts
from ..climb.protocol import Climb, EndpointRow, RowJob, Served, Stop, measuring, recorded, served, signal_name
from ..climb.stats import latency_stats, requests_per_second
from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.progress import watching
from ..common.scrub import known_secrets
from ..machine.gpu import gpu_busy_percent
from ..plan.settings import RunSettings
from ..results import RecordedCommand, RequestRow, StageResult, StageStatus
from ..results.layout import (
    AIPERF_CONFIG_FILE,
    AIPERF_DIR,
    AIPERF_EXPORT_DIR,
    AIPERF_INPUTS_FILE,
    AIPERF_LOG,
    AIPERF_LOGS,
    AIPERF_OUTCOME,
    AIPERF_OUTCOME_FILE,
    AIPERF_OWN_LOGS_DIR,
    AIPERF_PLAN,
    AIPERF_PLAN_FILE,
    GUARD_FILE,
    REQUESTS_FILE,
    aiperf_run_log,
    aiperf_run_logs,
)
from ..serving.forward_proxy import GRACE_S, ForwardProxy, GuardTally
from ..transports.clips import aiperf_videos
from ..transports.table import TRANSPORTS, used_transport
from ..workloads import Workload
from .streaming import stream_figures, streaming_choice

# Over http the input file names the run's own loopback clip server, which lives only as long as the run.
HTTP_INPUTS_NOTE = (
    "inputs.jsonl names this run's loopback clip server (video transport http), which served the workload's files "
    "(workload/<name>/files/) only while the run lasted: re-run qualify with --video-transport http"
)
GUARD_NOTE = (
    "AIPerf's requests went through this run's loopback guard (serving/forward_proxy.py): no redirect followed, no "
    "response past --max-response-bytes; the command below names the endpoint itself"
)
GUARD_RAN = "through the run's loopback guard: no redirect followed, every response within --max-response-bytes"


@dataclass(frozen=True)
class AiperfRun:
    """What one AIPerf run left: how it ended, its per-request records, and how to run it again."""

    outcome: RunOutcome
    clients: list[ClientRecord]
    command: RecordedCommand  # secrets as placeholders
    interrupted: bool  # a stop signal while it ran
    evidence: AiperfEvidence  # what execution.jsonl needs of it, read once from the export as it is kept


def aiperf(row: RowJob, climb: Climb) -> Climb | Stop:
    """The `aiperf` stage: the published client over every planned request (warmup kept apart), each request joined
    to its record and the server's task time, `requests.jsonl` written; passed only when every request is
    accounted for. A sweep or repeated runs (climb/levels.py) make one AIPerf run each, judged alike; the row's
    top-level figures are the first run's."""
    climb, result = measuring(climb)
    target, job = served(climb), row.job
    transport = used_transport(result.video_transport)
    notes = [HTTP_INPUTS_NOTE] if TRANSPORTS[transport].by_url else []
    videos = aiperf_videos(transport, job.clip_urls)
    max_tokens = job.settings.max_tokens or job.workload.spec.generation.max_tokens
    probe = _plan(workload_prompts(job.workload), job.settings, max_tokens, job.workload, videos)
    streams, stream_note = streaming_choice(row, climb, target, probe)
    runs: list[LevelRun] = []
    with _guard(row, climb, target) as guard:
        for load in loads(job.settings):
            run = _measured_run(row, target, load, videos, guard, streams, stream_note)
            run.command = run.command.model_copy(update={"notes": notes + ([GUARD_NOTE] if guard else [])})
            result.commands[load.command_name] = run.command
            runs.append(run)
            if run.interrupted or not target.alive():  # a stop signal, or no server left to measure
                break
    first = runs[0]
    result.plan, result.levels, result.aiperf, result.settings = first.plan, runs, first.evidence, job.settings
    result.aiperf_exit = first.evidence.exit_code
    result.records, result.graded, result.figures = first.records, first.graded, first.figures
    result.task_time_field, result.timing_scope = first.task_time_field, first.timing_scope
    stage = combined(runs, "aiperf")
    if stream_note:
        stage = stage.model_copy(update={"detail": f"{stage.detail}; {stream_note}"})
    if guard is not None:
        stage = _guarded_stage(stage, guard.tally, row.row_dir)
    return recorded(climb, result, stage, stops=stage.status != "passed")


def _measured_run(
    row: RowJob,
    target: Served,
    load: Load,
    videos: dict[str, str],
    guard: ForwardProxy | None,
    streams: bool = False,
    stream_note: str | None = None,
) -> LevelRun:
    """One AIPerf run at `load`: planned (its own request ids), run, joined, its figures, its requests written, and
    the stage's verdict on it alone."""
    job = row.job
    workload, settings = job.workload, job.settings
    max_tokens = settings.max_tokens or workload.spec.generation.max_tokens
    plan = _plan(workload_prompts(workload), settings, max_tokens, workload, videos, load.id_prefix)
    url = guard.url if guard else target.url
    shown_url = target.url if guard else None
    aiperf_run = run_aiperf(row, replace(target, url=url), plan, recorded_url=shown_url, load=load, streaming=streams)
    wanted = {client.x_request_id for client in aiperf_run.clients if client.x_request_id}
    joined = join_requests(plan, aiperf_run.clients, read_server_records(target.records, wanted), workload, max_tokens)
    keep_raw_answers(row.row_dir, aiperf_run.clients)
    facts = aiperf_run.evidence.run
    evidence = replace(aiperf_run.evidence, run=replace(facts, requests=tuple(joined.records)) if facts else None)
    run = LevelRun(
        load=load,
        plan=plan,
        command=aiperf_run.command,
        evidence=evidence,
        records=joined.records,
        graded=joined.graded,
        figures=_figures(joined.records, aiperf_run.clients)
        | stream_figures(joined.records, streamed=streams, note=stream_note),
        task_time_field=joined.task_time_field,
        timing_scope=joined.timing_scope,
        interrupted=aiperf_run.interrupted,
    )
    lines = "".join(r.model_dump_json() + "\n" for r in run.records)
    write_text_atomic(row.row_dir / load.requests_file, lines)
    stage = _aiperf_stage(aiperf_run.outcome, run.records, plan, settings, server_gone=not target.alive(), load=load)
    run.stages["aiperf"] = with_server_text_notes(stage, run.records)
    return run


def guarded(row: RowJob, climb: Climb) -> bool:
    """Whether AIPerf's requests go through the loopback guard: for every server this run did not start, i.e. an
    `--endpoint` row, loopback or not. trtmc-server (the TRTMC ladder), the self-test's reference endpoint and
    `compare`'s transformers serve are started by this run, on loopback, and measured without the extra hop."""
    return isinstance(row, EndpointRow) and not climb.row.reference_self_test and climb.row.comparison is None


@contextmanager
def _guard(row: RowJob, climb: Climb, target: Served) -> Iterator[ForwardProxy | None]:
    if not guarded(row, climb):
        yield None
        return
    settings = row.job.settings
    deadline = settings.request_timeout_s + GRACE_S  # AIPerf's own request timeout ends an exchange first
    with ForwardProxy(target.url, max_response_bytes=settings.max_response_bytes, deadline_s=deadline) as guard:
        yield guard


def _guarded_stage(stage: StageResult, tally: GuardTally, row_dir: Path) -> StageResult:
    """The stage saying the guard ran; failed, naming the cause first, where it refused a redirect or a response."""
    write_model_atomic(row_dir / AIPERF_DIR / GUARD_FILE, tally)
    evidence = [*stage.evidence, f"{AIPERF_DIR}/{GUARD_FILE}"]
    cause = tally.cause()
    if cause and stage.status != "interrupted":  # a stop signal ended the run first: the row says so
        return stage.model_copy(update={"status": "failed", "detail": f"{cause}; {stage.detail}", "evidence": evidence})
    return stage.model_copy(update={"detail": f"{stage.detail}; {GUARD_RAN}", "evidence": evidence})


def _plan(
    prompts: list[Prompt],
    settings: RunSettings,
    max_tokens: int,
    workload: Workload,
    videos: dict[str, str],
    id_prefix: str = "",
) -> RequestPlan:
    """Warmup rows first, then every (question, clip, repeat) exactly once (one shared sampler), each carrying
    the clip as the row's transport does and the workload's extra body fields; a further run's ids prefixed."""
    return plan_requests(
        prompts,
        repeats=settings.repeats,
        warmup=settings.warmup,
        max_tokens=max_tokens,
        temperature=workload.spec.generation.temperature,
        videos=videos,
        extra_body=workload.spec.generation.extra_body,
        id_prefix=id_prefix,
    )


def run_aiperf(
    row: RowJob,
    target: Served,
    plan: RequestPlan,
    *,
    recorded_url: str | None = None,
    load: Load | None = None,
    streaming: bool = False,
) -> AiperfRun:
    """AIPerf on the plan's input file under our wall limit; its exports scrubbed of secrets, its outcome written.
    Its raw logs (its output, and the log folder it writes among its exports) are kept under the row's private/.
    The command recorded names `recorded_url` where given (the endpoint behind the loopback guard). `load`: the
    run's level and folder (default: the row's first run)."""
    job, settings = row.job, row.job.settings
    load = load or loads(settings)[0]
    aiperf_dir = row.row_dir / load.folder
    input_file = write_input_file(plan, aiperf_dir / AIPERF_INPUTS_FILE)
    write_model_atomic(aiperf_dir / AIPERF_PLAN_FILE, plan)
    config_file = None
    if job.api_key:  # the key reaches AIPerf by environment, named in this file, never on its command line
        config_file = write_text_atomic(aiperf_dir / AIPERF_CONFIG_FILE, key_config_yaml(str(input_file.resolve())))
    aiperf_settings = AiperfSettings(
        url=target.url,
        model=target.model,
        tokenizer=str(row.tokenizer),
        input_file=str(input_file.resolve()),
        artifact_dir=str((aiperf_dir / AIPERF_EXPORT_DIR).resolve()),
        warmup_requests=len(plan.warmup),
        profiling_requests=len(plan.profiling),
        concurrency=load.concurrency or 1,
        request_rate=load.request_rate,
        request_timeout_s=settings.request_timeout_s,
        streaming=streaming,
        api_key=job.api_key,
        config_file=str(config_file.resolve()) if config_file else None,
    )
    argv = profile_argv(job.aiperf.executable, aiperf_settings)
    shown = aiperf_settings.model_copy(update={"url": recorded_url}) if recorded_url else aiperf_settings
    command = RecordedCommand.of(recorded_argv(shown))
    at = "" if load.first and len(loads(settings)) == 1 else f" ({load.words})"
    row.progress(f"aiperf{at}: {len(plan.warmup)} warmup + {len(plan.profiling)} profiling requests")
    export = Path(aiperf_settings.artifact_dir)
    if load.first:
        _set_aside(export)
    elif export.exists():  # a further run's folder is new in each attempt's staging folder; never read stale
        shutil.rmtree(export)
    log = row.row_dir / (AIPERF_LOG if load.first else aiperf_run_log(load.label))
    busy = gpu_busy_percent()  # aiperf_qual's idleness fact for the run (execution.jsonl): read before it starts
    outcome, interrupted = _run_watched(row, argv, aiperf_settings, plan, log, load)
    outcome = outcome.model_copy(update={"gpu_busy_percent": busy})
    clients = read_client_records(export)
    secrets = known_secrets(job.api_key)
    scrub_exports(aiperf_dir, secrets)
    scrub_export_file(log, secrets)
    kept_logs = AIPERF_LOGS if load.first else aiperf_run_logs(load.label)
    _keep_private(export / AIPERF_OWN_LOGS_DIR, row.row_dir / kept_logs)
    write_model_atomic(aiperf_dir / AIPERF_OUTCOME_FILE, outcome)
    evidence = aiperf_evidence(export, outcome.exit_code, busy)
    evidence = replace(evidence, run=_run_facts(load, plan))
    return AiperfRun(outcome=outcome, clients=clients, command=command, interrupted=interrupted, evidence=evidence)


def _run_facts(load: Load, plan: RequestPlan) -> RunFacts:
    """What execution.jsonl needs of the run beyond AIPerf's records: its folder, load and request counts."""
    return RunFacts(
        export=f"{load.folder}/{AIPERF_EXPORT_DIR}",
        concurrency=load.concurrency,
        warmup=len(plan.warmup),
        expected=len(plan.profiling),
        first=load.first,
    )


def _run_watched(
    row: RowJob, argv: list[str], aiperf_settings: AiperfSettings, plan: RequestPlan, log: Path, load: Load
) -> tuple[RunOutcome, bool]:
    """AIPerf run under the wall and memory limits, its progress watched; (outcome, interrupted by a signal)."""
    job, settings = row.job, row.job.settings
    started = time.monotonic()
    export = Path(aiperf_settings.artifact_dir)
    label = f"{row.profile}: aiperf" + ("" if load.first else f" {load.label}")
    count = AiperfCount(export, warmup=len(plan.warmup), profiling=len(plan.profiling), label=label)
    try:
        with watching(job.progress, count):  # requests done, read from AIPerf's records as it writes them
            outcome = run_with_wall_limit(
                argv,
                wall_limit_s=settings.aiperf_wall_limit_s,
                log_path=log,
                env=aiperf_environment(dict(os.environ)) | key_environment(aiperf_settings),
                memory_limit_bytes=settings.aiperf_memory_limit,
            )
    except KeyboardInterrupt:  # AIPerf's whole group is already ended; keep what it wrote, then say so
        wall = time.monotonic() - started
        return RunOutcome(exit_code=None, timed_out=False, wall_s=wall, log=str(log), interrupted=True), True
    return outcome, False


def _figures(records: list[RequestRow], clients: list[ClientRecord]) -> dict[str, Any]:
    """Steady-state figures over the profiling requests that came back whole: latencies, and per second over the
    profiling window, requests, clips (each request carries one clip) and the output tokens AIPerf counted."""
    completed = [r for r in records if r.phase == "profiling" and r.error is None]
    done = [c for c in clients if c.phase == "profiling" and c.ok and c.start_ns and c.end_ns]
    window = [(c.start_ns or 0, c.end_ns or 0) for c in done]
    rate = requests_per_second(window)
    tokens = sum(c.completion_tokens or 0 for c in done)
    return {
        "client_latency": latency_stats([r.client_latency_ms for r in completed if r.client_latency_ms is not None]),
        "server_task_time": latency_stats([r.server_task_ms for r in completed if r.server_task_ms is not None]),
        "requests_per_s": rate,
        "clips_per_s": rate,
        "output_tokens_per_s": round(rate * tokens / len(done), 3) if rate and done else None,
        "completed": len(completed),
        "failed": sum(1 for r in records if r.error is not None),
    }


def _aiperf_stage(
    outcome: RunOutcome,
    records: list[RequestRow],
    plan: RequestPlan,
    settings: RunSettings,
    *,
    server_gone: bool,
    load: Load | None = None,
) -> StageResult:
    """Passed only when every planned request is accounted for and none failed; else the first reason, named."""
    completed = [r for r in records if r.phase == "profiling" and r.error is None]
    failed = [r for r in records if r.error is not None]
    missing = [r for r in records if r.error and r.error.startswith("no record")]
    gone = "; the server is no longer running" if server_gone else ""
    status: StageStatus = "failed"
    if outcome.interrupted:
        status = "interrupted"
        detail = f"interrupted ({signal_name()}) while aiperf ran; AIPerf was ended; run again to measure"
    elif outcome.timed_out:
        detail = f"aiperf overstayed its {settings.aiperf_wall_limit_s:g} s wall limit and was ended"
    elif outcome.memory_exceeded:
        detail = outcome.memory_detail()
    elif missing or gone:
        said = f"; AIPerf exited {outcome.exit_code}: {outcome.refusal}" if outcome.refusal else ""
        detail = f"{len(missing)} planned request(s) have no record{gone}{said}"
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
    evidence = [AIPERF_PLAN, AIPERF_OUTCOME, AIPERF_LOG, REQUESTS_FILE]
    if load is not None and not load.first:  # a further run's own files
        folder = load.folder
        evidence = [f"{folder}/{AIPERF_PLAN_FILE}", f"{folder}/{AIPERF_OUTCOME_FILE}", load.requests_file]
    return StageResult(name="aiperf", status=status, detail=detail, wall_s=round(outcome.wall_s, 3), evidence=evidence)


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
    _keep_private(previous / AIPERF_OWN_LOGS_DIR, export_dir.parent.parent / (AIPERF_LOGS + ".previous"))


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
