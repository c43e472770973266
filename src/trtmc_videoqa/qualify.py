"""The per-checkpoint step chain and the status ladder, with content-addressed result reuse.

    TRTMC row:  build -> family correctness (same bundle) -> trtmc-server -> capability -> AIPerf -> grading
    endpoint:   capability -> AIPerf -> grading          (a server we did not build: planned -> endpoint-qualified)

Each step writes its evidence before the next starts; a failure stops that row at its stage, never the others.
A step this machine cannot run makes the row `blocked` with the reason; nothing is faked.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .aiperf.locate import AiperfInstall
from .atomic_write import write_model_atomic, write_text_atomic
from .digests import file_sha256
from .endpoint_run import EndpointMeasurement, RunSettings, measure_endpoint
from .gpu import gpu_lines
from .pins import tool_versions
from .results import CheckpointEntry, Inventory, Provenance, ResultRow, StageResult
from .scrub import known_secrets, scrub_secrets
from .trtmc_steps import (
    JUNIT_NAME,
    Toolchain,
    build_argv,
    bundle_header,
    bundle_path,
    bundles_built_by,
    correctness_argv,
    correctness_env,
    correctness_test,
    effective_precision,
    family_result,
    family_test_outcome,
    file_digest,
    partial_path,
    server_argv,
)
from .workloads import Workload

FINAL_STATUSES = frozenset({"unsupported", "aiperf-qualified", "endpoint-qualified"})
LOCK_NAME = ".trtmc-videoqa.lock"


class OutputBusy(Exception):
    """Another run holds the output directory."""


class WorkloadClipError(ValueError):
    """A clip of the workload cannot be used (corrupt, truncated, empty, not a video, too large, or not the one
    the workload records); the message names the clip and the fix."""


@dataclass
class QualifyJob:
    """What every row of one run shares."""

    out: Path
    workload: Workload
    settings: RunSettings
    aiperf: AiperfInstall
    tokenizer: Path
    tokenizer_label: str
    command: str  # our own command line, secrets as placeholders
    force: bool = False
    api_key: str | None = None
    bundle_cache: Path | None = None
    stage_timeouts: dict[str, float] = field(
        default_factory=lambda: {"build": 7200.0, "correctness": 3600.0, "startup": 600.0}
    )
    progress: Callable[[str], None] = lambda _: None
    stage: str = "plan"  # the stage a TRTMC row is in now: where an unexpected error is recorded

    def row_dir(self, profile: str) -> Path:
        return self.out / "checkpoints" / row_dir_name(profile)


# A profile names a directory (checkpoints/<profile>/) and a bundle file: one plain path component, nothing else.
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
_PLAIN_REVISION = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,99}")  # a commit or tag: it names cache paths


def safe_name(name: str) -> bool:
    """True for a name that is one path component and cannot lead anywhere else ('..', '/', a leading dot)."""
    return bool(_SAFE_NAME.match(name))


def row_dir_name(profile: str) -> str:
    """The row's directory: the profile itself, or, for a name that could leave checkpoints/ (from a manifest or
    an endpoint's model name), a fixed name made from its digest; the row keeps the name as given."""
    if safe_name(profile):
        return profile
    return "unsafe-name-" + hashlib.sha256(profile.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def manifest_path_problem(entry: CheckpointEntry, checkout: Path, layout: str) -> str | None:
    """Why this row's names from its manifest cannot be used as paths, or None: the profile names the row's
    directory and bundle, the family the directory whose correctness test runs; none may leave its place."""
    if not safe_name(entry.profile):
        return (
            f"profile name {entry.profile!r} from {entry.manifest} is not a plain name (letters, digits, '.', "
            "'_', '-'); it could lead outside the output directory, so nothing was run"
        )
    if layout == "families" and not safe_name(entry.family):
        return (
            f"family {entry.family!r} from {entry.manifest} is not a plain name; its test path would leave "
            "families/, so nothing was run"
        )
    if entry.revision is not None and not _PLAIN_REVISION.fullmatch(entry.revision):
        return (
            f"revision {entry.revision!r} from {entry.manifest} is not a plain commit or tag name; it names "
            "cache paths, so nothing was run"
        )
    if entry.bundle is not None and not safe_name(entry.bundle):
        return (
            f"bundle {entry.bundle!r} from {entry.manifest} is not a plain file name; it would be written "
            "outside its engine directory, so nothing was run"
        )
    try:
        correctness_test(checkout, entry, layout)
    except ValueError as error:
        return f"{error}; nothing was run"
    return None


# --- the output directory -----------------------------------------------------------------------------------


class OutputLock:
    """One run per output directory: a second one fails fast. The lock is an flock on the lock file, so it is
    released when its holder dies (no stale lock to judge) and two runs starting together cannot both take it;
    the pid inside only names the holder in the message."""

    def __init__(self, out: Path) -> None:
        self.path = out / LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(20):
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_pid(fd)
                os.close(fd)
                raise OutputBusy(
                    f"output directory {self.path.parent} is in use by another run"
                    f"{f' (pid {holder})' if holder else ''}; wait for it to finish or choose another "
                    "--out"
                ) from None
            if not _same_file(fd, self.path):  # the holder removed it as we opened it: lock the new one
                os.close(fd)
                continue
            try:
                os.ftruncate(fd, 0)
                os.write(fd, str(os.getpid()).encode())
            except BaseException:  # a full file system: no half-written lock is left behind
                self.path.unlink(missing_ok=True)
                os.close(fd)
                raise
            self._fd = fd
            return self
        raise OutputBusy(f"could not lock {self.path.parent}; another run keeps replacing {self.path}")

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)  # before the unlock, so a waiter never locks a file being removed
            os.close(self._fd)
            self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == path.stat().st_ino
    except OSError:
        return False


# --- the workload's own artifacts ---------------------------------------------------------------------------


def workload_dir(out: Path, workload: Workload) -> Path:
    return out / "workload" / workload.name


PREPARED_STAMP = "prepared.digest.json"  # two dots: no clip id ("^[a-z][a-z0-9-]*$") can name this file


def _prepared_identity(workload: Workload) -> dict[str, Any]:
    """What the workload artifacts are made from: the workload (its digest covers every clip's sha256, checked on
    load), where its clips are, and the tool and decoder that probed them. The same identity, the same artifacts."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        decoder = version("av")
    except PackageNotFoundError:
        decoder = None
    return {
        "workload": workload.name,
        "digest": workload.digest,
        "tool": __version__,
        "av": decoder,
        "clips": {clip.id: str(workload.clip_path(clip.id)) for clip in workload.spec.clips},
    }


def _still_prepared(directory: Path, identity: dict[str, Any]) -> bool:
    """True when the stamp records this identity and every file it lists is there with the recorded digest."""
    try:
        stamp = json.loads((directory / PREPARED_STAMP).read_text())
        if stamp.get("identity") != identity or not stamp.get("files"):
            return False
        return all(file_sha256(directory / name) == digest for name, digest in stamp["files"].items())
    except (OSError, ValueError, AttributeError):
        return False  # missing, damaged or edited: made again


def prepare_workload_artifacts(out: Path, workload: Workload) -> Path:
    """workload/<name>/: each clip's probe manifest (refusing a clip that is not what the workload says), the declared
    sampling policy resolved on each clip, and frames.png, the strip of what the model is meant to see.

    Skipped when prepared.digest.json records the same workload identity and every file still has its recorded
    sha256 (a re-run with unchanged inputs); anything else makes them again."""
    directory = workload_dir(out, workload)
    identity = _prepared_identity(workload)
    if _still_prepared(directory, identity):
        return directory
    from .media import ClipError, probe_clip, write_strip

    policy = workload.sampling_policies()[0]
    sampling: dict[str, Any] = {"policy": policy.spec, "where": policy.where, "clips": {}}
    written: list[str] = []
    for index, clip in enumerate(workload.spec.clips):
        path = workload.clip_path(clip.id)
        try:
            manifest = probe_clip(path)
        except ClipError as error:
            raise WorkloadClipError(f"workload {workload.name!r} ({workload.file}): {error}") from None
        if manifest.sha256 != clip.sha256 or manifest.frames_counted != clip.video.frames:
            raise WorkloadClipError(
                f"clip {path} is not the one workload {workload.name!r} records (sha256 or frame count differ); "
                "restore it from the repository or seal a new workload identity"
            )
        write_model_atomic(directory / f"{clip.id}.json", manifest)
        written.append(f"{clip.id}.json")
        resolved = policy.resolve(manifest.frames_counted, manifest.fps, manifest.start_time_s)
        sampling["clips"][clip.id] = {
            "indices": resolved.indices,
            "timestamps_s": resolved.timestamps_s,
            "rule": resolved.rule,
        }
        strip = "frames.png" if index == 0 else f"frames-{clip.id}.png"
        try:
            write_strip(path, resolved, directory / strip)
        except ClipError as error:
            raise WorkloadClipError(f"workload {workload.name!r} ({workload.file}): {error}") from None
        written.append(strip)
    sampling["note"] = (
        "the clip is sent whole; where the server samples, these are the frames the declared "
        "policy picks, and the server's own settings are recorded beside them"
    )
    write_text_atomic(directory / "sampling.json", json.dumps(sampling, indent=2) + "\n")
    written.append("sampling.json")
    stamp = {"identity": identity, "files": {name: file_sha256(directory / name) for name in written}}
    write_text_atomic(directory / PREPARED_STAMP, json.dumps(stamp, indent=2, sort_keys=True) + "\n")
    return directory


# --- keys, provenance ---------------------------------------------------------------------------------------


def cache_key(identity: dict[str, Any], job: QualifyJob) -> str:
    """Same inputs, same key: identity (bundle sources or endpoint), workload digest, tool versions, settings."""
    payload = {
        "identity": identity,
        "workload": job.workload.digest,
        "tool": __version__,
        "aiperf": job.aiperf.version,
        "settings": job.settings.model_dump(),
        "tokenizer": job.tokenizer_label,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def reusable(row_dir: Path, key: str, force: bool) -> ResultRow | None:
    path = row_dir / "result.json"
    if force or not path.is_file():
        return None
    try:
        row = ResultRow.model_validate_json(path.read_bytes())
    except ValueError:
        return None  # a damaged result is measured again, not trusted
    if row.cache_key == key and row.status in FINAL_STATUSES:
        return row.model_copy(update={"reused": True})
    return None


def hardware() -> dict[str, Any]:
    facts: dict[str, Any] = {"machine": platform.machine(), "cpus": os.cpu_count(), "system": platform.system()}
    gpus = gpu_lines()
    if gpus:
        facts["gpus"] = gpus
    return facts


def _provenance(job: QualifyJob, *, mode: str, endpoint: str | None, served_by: str | None, **extra: Any) -> Provenance:
    return Provenance(
        tool_versions=tool_versions(),
        aiperf=job.aiperf.model_dump(),
        workload=job.workload.name,
        workload_digest=job.workload.digest,
        endpoint=endpoint,
        mode=mode,
        served_by=served_by,
        hardware=hardware(),
        settings=job.settings.model_dump() | extra.pop("settings", {}),
        tokenizer=extra.pop("tokenizer", job.tokenizer_label),
        **extra,
    )


def _finish(job: QualifyJob, row: ResultRow, commands: dict[str, str]) -> ResultRow:
    row_dir = job.row_dir(row.profile)
    # The tools we ran (build, the family's tests and their artifacts, the server and its records) may write a
    # token they were given anywhere under the row: never kept. (Bundles live outside the row directory.)
    if row_dir.is_dir():
        scrub_secrets(
            sorted(p for p in row_dir.rglob("*") if p.is_file() and not p.is_symlink()), known_secrets(job.api_key)
        )
    row = row.model_copy(update={"commands": commands})
    write_text_atomic(row_dir / "command.txt", "".join(f"# {name}\n{command}\n" for name, command in commands.items()))
    write_model_atomic(row_dir / "result.json", row)
    return row


def _measured(row: ResultRow, measurement: EndpointMeasurement) -> dict[str, Any]:
    """The fields a measurement fills in, whatever the ladder."""
    figures = measurement.figures
    plan = measurement.plan
    return dict(
        stages=row.stages + measurement.stages,
        warmup_requests=len(plan.warmup) if plan else 0,
        profiling_requests_planned=len(plan.profiling) if plan else 0,
        profiling_requests_completed=figures.get("completed", 0),
        failed_requests=figures.get("failed", 0),
        requests=measurement.records,
        client_latency=figures.get("client_latency"),
        server_task_time=figures.get("server_task_time"),
        task_time_field=measurement.task_time_field,
        requests_per_s=figures.get("requests_per_s"),
        accuracy=measurement.accuracy,
    )


def _ladder_after_measurement(
    measurement: EndpointMeasurement, qualified: str
) -> tuple[str, str, str | None, list[str]]:
    """(status, reason, failed stage, evidence) once capability, AIPerf and grading have run."""
    bad = measurement.failed_stage
    if bad is None:
        return (
            qualified,
            "complete AIPerf run, every request accounted for, answers graded",
            None,
            ["result.json#requests", "grading.json", "aiperf/outcome.json"],
        )
    if bad.status == "rejected":
        return "unsupported", f"the server rejected a video request: {bad.detail}", None, ["capability.json"]
    return "failed", f"{bad.name}: {bad.detail}", bad.name, bad.evidence


# --- endpoint mode ------------------------------------------------------------------------------------------


def endpoint_key(job: QualifyJob, *, identity: str, model: str, stated: dict[str, str]) -> str:
    """An endpoint is identified by what the user says it is (its URL by default), the model and its settings."""
    return cache_key({"mode": "endpoint", "endpoint": identity, "model": model, "stated": stated}, job)


def qualify_endpoint(
    job: QualifyJob,
    *,
    url: str,
    model: str,
    profile: str,
    stated: dict[str, str],
    identity: str | None = None,
    reference_self_test: bool = False,
    server_records: Path | None = None,
    alive: Callable[[], bool] = lambda: True,
    transport_only: str | None = None,
) -> ResultRow:
    """An already running OpenAI-compatible video chat server: planned -> endpoint-qualified.

    `transport_only` says why this server is not expected to answer the questions (the reference endpoint on a
    real clip: it answers "cannot tell"); the row is then about transport and timing, and says so."""
    key = endpoint_key(job, identity=identity or url, model=model, stated=stated)
    row_dir = job.row_dir(profile)
    previous = reusable(row_dir, key, job.force)
    if previous is not None:
        job.progress(f"{profile}: unchanged inputs, result reused")
        return previous
    row = ResultRow(
        profile=profile,
        status="planned",
        status_reason="endpoint given; nothing run yet",
        reference_self_test=reference_self_test,
        cache_key=key,
        stages=[StageResult(name="plan", status="passed", detail=f"endpoint {url}, model {model}")],
    )
    row = _with_server_sampling(_with_workload_facts(job, row), job, stated)
    measurement = measure_endpoint(
        url=url,
        model=model,
        workload=job.workload,
        settings=job.settings,
        aiperf=job.aiperf,
        tokenizer=job.tokenizer,
        row_dir=row_dir,
        api_key=job.api_key,
        server_records=server_records,
        alive=alive,
        progress=lambda m: job.progress(f"{profile}: {m}"),
    )
    status, reason, failed, evidence = _ladder_after_measurement(measurement, "endpoint-qualified")
    accuracy = measurement.accuracy
    if transport_only and status == "endpoint-qualified" and accuracy is not None:
        every = accuracy.unparseable == accuracy.graded
        reason = (
            f"complete AIPerf run, every request accounted for; transport and timing only: {transport_only} "
            f"({accuracy.unparseable} of {accuracy.graded} answers were no answer"
            f"{', as expected' if every else '; the rest were not expected'})"
        )
    served_by = measurement.capability.served_by if measurement.capability else None
    row = row.model_copy(
        update=_measured(row, measurement)
        | dict(
            status=status,
            status_reason=reason,
            failed_stage=failed,
            status_evidence=evidence,
            provenance=_provenance(
                job, mode="endpoint", endpoint=url, served_by=served_by, settings={"server_stated": stated}
            ),
        )
    )
    row = _finish(job, row, {"trtmc-videoqa": job.command, **measurement.commands})
    if measurement.interrupted:
        raise KeyboardInterrupt  # the row is written; the run stops here
    return row


def _with_workload_facts(job: QualifyJob, row: ResultRow) -> ResultRow:
    clips_dir = workload_dir(job.out, job.workload)
    clips = {}
    for clip in job.workload.spec.clips:
        manifest = clips_dir / f"{clip.id}.json"
        if manifest.is_file():
            clips[clip.id] = json.loads(manifest.read_text())
    sampling = {}
    sampling_file = clips_dir / "sampling.json"
    if sampling_file.is_file():
        sampling = json.loads(sampling_file.read_text())
    return row.model_copy(update={"clips": clips, "sampling": sampling})


def _with_server_sampling(row: ResultRow, job: QualifyJob, stated: dict[str, str]) -> ResultRow:
    """Where the server samples, the policy it states is the one applied: record it beside the workload's declared
    one, and say so plainly when they differ (the strip then shows the declared frames, not the server's)."""
    policy, where = stated.get("sampling_policy"), stated.get("sampling_where")
    if not policy or where != "server" or not row.sampling:
        return row
    from .media.sampling import SamplingPolicy

    try:
        applied = SamplingPolicy.parse(policy).spec
    except ValueError:
        applied = policy
    sampling = dict(row.sampling, applied_by_server=applied)
    if applied != sampling.get("policy"):
        declared = [p.spec for p in job.workload.sampling_policies()]
        sampling["mismatch"] = (
            f"the server samples {applied}, not {sampling.get('policy')} as resolved above; "
            f"{applied} is {'one' if applied in declared else 'not one'} of the workload's "
            "declared policies"
        )
    return row.model_copy(update={"sampling": sampling})


# --- TRTMC mode ---------------------------------------------------------------------------------------------


def correctness_problem(bundle: Path, digest: str, artifacts: Path, profile: str) -> tuple[str, str, list[str]] | None:
    """Why the family's run (exit 0) does not show that this exact bundle passed its checks: (reason, detail,
    evidence), or None. Checked, not assumed: some test passed and none failed (pytest exits 0 when all skip),
    the bundle the runner found is still ours byte for byte, it built no other bundle, and its own result for the
    profile, where it wrote one, says pass."""
    log = ["correctness.log"]
    outcome = family_test_outcome(artifacts)
    if outcome is None:
        return "the family's tests left no JUnit report, so what ran is unknown", "no junit.xml", log
    if (failing := outcome.problem()) is not None:
        return (
            f"the family's tests did not pass on this bundle: {failing}",
            failing,
            [*log, f"correctness/{JUNIT_NAME}"],
        )
    after = file_digest(bundle) if bundle.is_file() else "missing"
    digests = {
        p.name: file_digest(p)
        for p in [*bundles_built_by(bundle.parent), *bundles_built_by(artifacts)]
        if p != bundle and not p.name.startswith(".partial-")
    }
    others = {name: other for name, other in digests.items() if other != digest}  # copies of ours are ours
    if after != digest or others:
        theirs = ", ".join([after] * (after != digest) + [f"{name} {other}" for name, other in others.items()])
        return (
            "the family's command validated a bundle it built itself, not this one",
            f"ours {digest}; the family's {theirs}",
            log,
        )
    verdict = family_result(artifacts, profile)
    if verdict is not None and verdict.lower() not in ("pass", "passed"):
        return (
            f"the family's runner recorded status {verdict!r} for {profile}",
            f"result.json: {verdict}",
            [*log, f"correctness/{profile}/result.json"],
        )
    return None


def unsupported_row(entry: CheckpointEntry) -> ResultRow:
    evidence = [f"{e.file}:{e.line}" if e.line else e.file for e in entry.evidence]
    # A gap is also shown by the search that found nothing: what was looked for, and where it had zero hits.
    evidence += [
        f"searched for {g.searched_for} ({', '.join(g.patterns)})"
        + (f": no hits in {', '.join(g.files_without_hits)}" if g.files_without_hits else "")
        for g in entry.gap_evidence
    ]
    return ResultRow(
        profile=entry.profile,
        family=entry.family,
        checkpoint=entry.checkpoint,
        revision=entry.revision,
        verdict=entry.verdict,
        in_group=entry.in_group,
        status="unsupported",
        status_reason=entry.gap or f"verdict {entry.verdict}",
        status_evidence=evidence,
    )


def hub_snapshot(entry: CheckpointEntry, environ: dict[str, str] | None = None) -> Path | None:
    """Where the hub cache keeps this checkpoint at its pinned revision (the build fetched it there), or None."""
    env = os.environ if environ is None else environ
    if (
        not entry.checkpoint
        or not entry.revision
        or entry.checkpoint.count("/") != 1
        or not _PLAIN_REVISION.fullmatch(entry.revision)
        or not all(map(safe_name, entry.checkpoint.split("/")))
    ):
        return None
    hub = Path(env.get("HF_HUB_CACHE") or Path(env.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub")
    return hub / f"models--{entry.checkpoint.replace('/', '--')}" / "snapshots" / entry.revision


def revision_check(entry: CheckpointEntry) -> str:
    """Whether the checkpoint revision the manifest pins is the one the build read: `trtmc build` takes no revision,
    so the evidence is the hub cache holding a snapshot of exactly that revision."""
    if not entry.revision:
        return "the manifest pins no revision"
    snapshot = hub_snapshot(entry)
    try:  # the revision the hub served for the default branch, which is what a build without a revision reads
        served = (snapshot.parents[1] / "refs" / "main").read_text().strip() if snapshot is not None else None
    except OSError:
        served = None
    if served == entry.revision and snapshot is not None and snapshot.is_dir():
        return f"verified: the hub cache's main of {entry.checkpoint} is {entry.revision}, the pinned revision"
    if served:
        return (
            f"differs: the manifest pins {entry.revision}, the hub cache's main of {entry.checkpoint} (what "
            f"`trtmc build`, which takes no revision, read) is {served}"
        )
    return (
        f"not verified: the manifest pins {entry.revision}, `trtmc build` takes no revision, and the hub cache "
        "records no main for it"
    )


def checkpoint_tokenizer(job: QualifyJob, entry: CheckpointEntry) -> tuple[Path, str]:
    """The row's tokenizer: one given with --tokenizer, else the checkpoint's own from the hub cache at its pinned
    revision, else the run's small local one. Token counts only; never a download."""
    from .aiperf.tokenizer import LOCAL_TOKENIZER_NAME, has_tokenizer

    snapshot = hub_snapshot(entry)
    if (
        job.tokenizer_label.startswith(LOCAL_TOKENIZER_NAME)
        and snapshot is not None
        and has_tokenizer(snapshot)
        and "auto_map" not in (snapshot / "tokenizer_config.json").read_text(errors="replace")
    ):
        # (a tokenizer that needs the checkpoint's own code would need trust_remote_code: AIPerf is not given it)
        return snapshot, f"the checkpoint's own tokenizer ({entry.checkpoint}@{entry.revision}, hub cache)"
    return job.tokenizer, job.tokenizer_label


def _run_step(
    argv: list[str], *, log: Path, timeout_s: float, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int | None, float]:
    from .aiperf.runner import run_with_wall_limit

    outcome = run_with_wall_limit(argv, wall_limit_s=timeout_s, log_path=log, cwd=cwd, env=env)
    return (None if outcome.timed_out else outcome.exit_code), outcome.wall_s


def _redacted(argv: list[str]) -> str:
    from .aiperf.command import reproducible_command

    return reproducible_command(argv)


def qualify_entry(
    job: QualifyJob, entry: CheckpointEntry, inventory: Inventory, checkout: Path, toolchain: Toolchain
) -> ResultRow:
    """One capable checkpoint through every step, as far as this machine and the evidence allow."""
    from .serving.process import ServerProblem, ServerProcess, free_loopback_port, served_model

    row_dir = job.row_dir(entry.profile)
    tokenizer = checkpoint_tokenizer(job, entry)
    key = cache_key(
        {
            "mode": "trtmc",
            "profile": entry.profile,
            "commit": inventory.commit,
            "checkpoint": entry.checkpoint,
            "revision": entry.revision,
            "tokenizer": tokenizer[1],
        },
        job,
    )
    previous = reusable(row_dir, key, job.force)
    if previous is not None:
        job.progress(f"{entry.profile}: unchanged inputs, result reused")
        return previous
    base = unsupported_row(entry).model_copy(
        update=dict(
            status="planned",
            status_reason="temporal video QA capability found; nothing run yet",
            cache_key=key,
            stages=[
                StageResult(
                    name="plan",
                    status="passed",
                    detail=f"verdict {entry.verdict}",
                    evidence=[f"{e.file}:{e.line}" for e in entry.evidence if e.line][:4],
                )
            ],
        )
    )
    row = _with_workload_facts(job, base)
    commands = {"trtmc-videoqa": job.command}

    precision = (entry.precision, "the manifest's declared precision (no bundle built yet)")
    revision = revision_check(entry)

    def provenance(**extra: Any) -> Provenance:
        settings = {
            "precision_source": precision[1],
            "build": entry.build_settings,
            "revision_check": revision,
        } | extra.pop("settings", {})
        return _provenance(
            job,
            mode="trtmc",
            endpoint=None,
            served_by=None,
            trtmc_commit=inventory.commit,
            server_version=f"trtmc-server built from TRTMC {inventory.commit}",
            effective_precision=precision[0],
            settings=settings,
            tokenizer=tokenizer[1],
            **extra,
        )

    def stop(status: str, reason: str, stage: StageResult, failed: str | None = None, **extra: Any) -> ResultRow:
        done = row.model_copy(
            update=dict(
                status=status,
                status_reason=reason,
                failed_stage=failed,
                stages=row.stages + [stage],
                status_evidence=stage.evidence,
                provenance=provenance(**extra),
            )
        )
        return _finish(job, done, commands)

    escape = manifest_path_problem(entry, checkout, inventory.layout)
    if escape:
        return stop(
            "failed",
            escape,
            StageResult(name="plan", status="failed", detail=escape, evidence=[entry.manifest]),
            failed="plan",
        )

    missing = toolchain.missing()
    if missing:
        return stop(
            "blocked", "; ".join(missing), StageResult(name="build", status="blocked", detail="; ".join(missing))
        )

    # Build (cached by profile, commit and revision).
    cache = job.bundle_cache or (job.out / "bundles")
    bundle = bundle_path(cache, entry, inventory.commit)
    job.stage = "build"
    commands["build"] = _redacted(build_argv(toolchain, entry, bundle))
    if not bundle.is_file():
        # Built under a temporary name and renamed only when the build succeeded: a killed or timed-out build
        # never leaves a file that a later run would take for a finished bundle.
        job.progress(f"{entry.profile}: building the bundle")
        bundle.parent.mkdir(parents=True, exist_ok=True)
        partial = partial_path(bundle)
        try:
            code, wall = _run_step(
                build_argv(toolchain, entry, partial), log=row_dir / "build.log", timeout_s=job.stage_timeouts["build"]
            )
            if code == 0 and partial.is_file():
                partial.replace(bundle)
        finally:
            partial.unlink(missing_ok=True)
        if not bundle.is_file():
            why = "timed out" if code is None else f"exit {code}" if code else "no bundle written"
            return stop(
                "failed",
                f"build {why}",
                StageResult(name="build", status="failed", detail=why, wall_s=wall, evidence=["build.log"]),
                failed="build",
            )
    digest = file_digest(bundle)
    precision = effective_precision(bundle_header(bundle), entry.precision)
    row = row.model_copy(
        update=dict(
            status="implemented",
            status_reason="bundle built; workload adapted",
            stages=row.stages
            + [
                StageResult(
                    name="build",
                    status="passed",
                    detail=f"{bundle.name} {digest}",
                    evidence=["build.log"] if (row_dir / "build.log").exists() else [],
                )
            ],
        )
    )

    # The family's own correctness command, unchanged, on this exact bundle.
    test = correctness_test(checkout, entry, inventory.layout)
    if test is None:
        return stop(
            "blocked",
            f"family {entry.family!r} has no E2E correctness test in the checkout",
            StageResult(name="correctness", status="blocked", detail="no family E2E test found"),
            bundle_digest=digest,
        )
    artifacts = row_dir / "correctness"
    shutil.rmtree(artifacts, ignore_errors=True)  # an earlier run's verdict or bundle must not speak for this one
    argv = correctness_argv(toolchain, checkout, test, entry, artifacts, engine_dir=bundle.parent)
    commands["correctness"] = _redacted(argv)
    job.progress(f"{entry.profile}: the family's correctness tests")
    job.stage = "correctness"
    code, wall = _run_step(
        argv,
        log=row_dir / "correctness.log",
        timeout_s=job.stage_timeouts["correctness"],
        cwd=checkout,
        env=correctness_env(checkout, dict(os.environ)),
    )
    if code != 0:
        why = "timed out" if code is None else f"exit {code}"
        return stop(
            "failed",
            f"family correctness {why}",
            StageResult(name="correctness", status="failed", detail=why, wall_s=wall, evidence=["correctness.log"]),
            failed="correctness",
            bundle_digest=digest,
        )
    problem = correctness_problem(bundle, digest, artifacts, entry.profile)
    if problem is not None:
        reason, detail, evidence = problem
        return stop(
            "failed",
            reason,
            StageResult(name="correctness", status="failed", wall_s=wall, detail=detail, evidence=evidence),
            failed="correctness",
            bundle_digest=digest,
        )
    row = row.model_copy(
        update=dict(
            status="family-validated",
            status_reason="the family's own correctness passed on this bundle",
            stages=row.stages
            + [
                StageResult(
                    name="correctness",
                    status="passed",
                    wall_s=wall,
                    detail=f"{test.relative_to(checkout)} on {digest}",
                    evidence=["correctness.log"],
                )
            ],
        )
    )

    # trtmc-server on loopback, then the measurement beside it.
    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    records = row_dir / "server-records.jsonl"
    argv = server_argv(
        toolchain,
        bundle,
        model_name=entry.profile,
        port=port,
        body_limit=job.settings.body_limit,
        records=records,
        startup_timeout_s=job.stage_timeouts["startup"],
        request_timeout_s=job.settings.request_timeout_s,
    )
    commands["serve"] = _redacted(argv)
    env = dict(os.environ)
    if job.api_key:
        env["TRTMC_SERVE_TOKEN"] = job.api_key  # the server reads it from its environment, never from argv
    job.progress(f"{entry.profile}: starting trtmc-server")
    job.stage = "serve"
    started = time.monotonic()
    try:
        server = ServerProcess(
            argv, url=url, log_path=row_dir / "server.log", startup_timeout_s=job.stage_timeouts["startup"], env=env
        )
        with server:
            serve = StageResult(
                name="serve",
                status="passed",
                detail=f"ready after {server.ready_after_s:.1f} s",
                wall_s=round(time.monotonic() - started, 3),
                evidence=["server.log"],
            )
            row = row.model_copy(update={"stages": row.stages + [serve]})
            job.stage = "capability"  # then AIPerf and grading, which record their own failures
            model = served_model(url, entry.profile, api_key=job.api_key)
            measurement = measure_endpoint(
                url=url,
                model=model,
                workload=job.workload,
                settings=job.settings,
                aiperf=job.aiperf,
                tokenizer=tokenizer[0],
                row_dir=row_dir,
                api_key=job.api_key,
                server_records=records,
                alive=lambda: server.alive,
                progress=lambda m: job.progress(f"{entry.profile}: {m}"),
            )
    except ServerProblem as problem:
        return stop(
            "failed",
            f"serve: {problem}",
            StageResult(
                name="serve",
                status="failed",
                detail=str(problem),
                wall_s=round(time.monotonic() - started, 3),
                evidence=["server.log"],
            ),
            failed="serve",
            bundle_digest=digest,
        )
    status, reason, failed, evidence = _ladder_after_measurement(measurement, "aiperf-qualified")
    if status == "failed" and failed is None:
        failed = "aiperf"
    served_by = measurement.capability.served_by if measurement.capability else None
    row = row.model_copy(
        update=_measured(row, measurement)
        | dict(
            status=status,
            status_reason=reason,
            failed_stage=failed,
            status_evidence=evidence,
            provenance=provenance(bundle_digest=digest).model_copy(update={"served_by": served_by, "endpoint": url}),
        )
    )
    row = _finish(job, row, commands | measurement.commands)
    if measurement.interrupted:
        raise KeyboardInterrupt  # the row is written and the server stopped; the run stops here
    return row


# Smoke, random-weight and partial profiles answer nothing worth grading: listed, run only when named.
_NOT_BY_DEFAULT = ("l0", "random", "partial", "regression")


def variant_hold(entry: CheckpointEntry, *, chosen: bool) -> ResultRow | None:
    """A capable variant that this run does not take through the chain, and why; None when it runs."""
    sizes = {k: entry.build_settings.get(k, 1) for k in ("tensor_parallel_size", "context_parallel_size")}
    if "tp" in entry.variant_kinds or "cp" in entry.variant_kinds:
        return unsupported_row(entry).model_copy(
            update=dict(
                status="blocked",
                status_evidence=[entry.manifest],
                status_reason=f"distributed variant ({', '.join(f'{k}={v}' for k, v in sizes.items())}): the "
                "qualification serves one process on one GPU",
            )
        )
    held = [kind for kind in entry.variant_kinds if kind in _NOT_BY_DEFAULT]
    if held and not chosen:
        return unsupported_row(entry).model_copy(
            update=dict(
                status="planned",
                status_evidence=[entry.manifest],
                status_reason=f"{'/'.join(held)} variant: listed, not qualified by default; name it with --profile",
            )
        )
    return None


def qualify_inventory(
    job: QualifyJob, inventory: Inventory, checkout: Path, toolchain: Toolchain, profiles: list[str] | None = None
) -> list[ResultRow]:
    """Every in-group row gets a result row; only capable ones run steps."""
    selected = [e for e in inventory.entries if e.in_group and (not profiles or e.profile in profiles)]
    rows = []
    for entry in selected:
        if entry.verdict != "temporal-video-qa":
            rows.append(_finish(job, unsupported_row(entry), {"trtmc-videoqa": job.command}))
            continue
        held = variant_hold(entry, chosen=bool(profiles and entry.profile in profiles))
        if held is not None:
            rows.append(_finish(job, held, {"trtmc-videoqa": job.command}))
            continue
        job.stage = "plan"
        try:
            rows.append(qualify_entry(job, entry, inventory, checkout, toolchain))
        except Exception as error:  # one row's crash never stops the others; it is recorded at its stage
            rows.append(
                _finish(
                    job,
                    unsupported_row(entry).model_copy(
                        update=dict(
                            status="failed",
                            status_reason=f"internal error at {job.stage}: {type(error).__name__}: {error}",
                            failed_stage=job.stage,
                        )
                    ),
                    {"trtmc-videoqa": job.command},
                )
            )
    return rows
