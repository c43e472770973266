"""`--video-transport data-url|http|auto`, for real: the reference endpoint (a test double) on loopback, with its
knob that answers a data URL as `transformers serve` does (HTTP 500 "Incorrect format used for video..."), the run's
own clip server, and, where a run is needed, the published AIPerf 0.13.0.

Also the workload's `generation.extra_body`: carried in every AIPerf row's `extra` and merged into our own chat
bodies, so it reaches the server on every request (the reference endpoint records each body's top-level fields).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import get_args

import pytest
from helpers import QUICK, reference, row, run_main
from shared_runs import NUM_FRAMES, SharedRun, with_extra_body

from trtmc_videoqa.aiperf.dataset import input_file_lines, plan_requests
from trtmc_videoqa.climb.prompts import workload_prompts
from trtmc_videoqa.plan.settings import Flag, RunSettings
from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, FaultKnobs, ReferenceConfig, ReferenceServer
from trtmc_videoqa.reference.video_url import DATA_URL_REFUSAL
from trtmc_videoqa.report.html import render_html
from trtmc_videoqa.report.junit import render_junit
from trtmc_videoqa.report.markdown import render_markdown
from trtmc_videoqa.results import Report, ResultRow, StageResult, TransportAttempt
from trtmc_videoqa.results.transports import TransportChoice, VideoTransport
from trtmc_videoqa.serving.clip_server import ClipServer
from trtmc_videoqa.stages.capability import CapabilityRequest, check_over_transports
from trtmc_videoqa.transports.clips import ServedFile, clip_routes, clip_urls
from trtmc_videoqa.transports.table import (
    CHOICES,
    DEFAULT_CHOICE,
    FALLBACK_TRANSPORT,
    TRANSPORTS,
    body_limit_checked,
    needs_clip_server,
    over_body_limit_refused,
    used_transport,
)
from trtmc_videoqa.workloads import WorkloadError, builtin_workload, load_workload
from trtmc_videoqa.workloads.model import Generation

MODEL = DEFAULT_MODEL_NAME
SYNTHETIC = builtin_workload("synthetic")


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def endpoint(url: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_main(None, "qualify", "--endpoint", url, "--model", MODEL, *QUICK, "--out", str(out), *extra)


# --- the one table -----------------------------------------------------------------------------------------------


def test_one_table_holds_every_transport_and_every_choice() -> None:
    """transports/table.py: its rows are the types' values, each choice tries transports of it, the option's help
    is its words, and what a choice needs (a clip server, the body limit) is read off its tries."""
    assert tuple(TRANSPORTS) == get_args(VideoTransport) and tuple(CHOICES) == get_args(TransportChoice)
    assert all(transport in TRANSPORTS for choice in CHOICES.values() for transport in choice.tries)
    assert all(row.instead != name for name, row in TRANSPORTS.items())
    assert RunSettings().video_transport == DEFAULT_CHOICE == next(iter(CHOICES))
    assert used_transport(None) == FALLBACK_TRANSPORT and used_transport("http") == "http"
    flag = next(m for m in RunSettings.model_fields["video_transport"].metadata if isinstance(m, Flag))
    assert flag.choices == {name: choice.help for name, choice in CHOICES.items()}
    assert [c for c in CHOICES if needs_clip_server(c)] == ["http", "auto"]
    assert [c for c in CHOICES if body_limit_checked(c)] == ["data-url", "auto"]
    assert [c for c in CHOICES if over_body_limit_refused(c)] == ["data-url"]


# --- the capability check over transports, without AIPerf --------------------------------------------------------


@pytest.fixture(scope="module")
def url_only(tmp_path_factory):
    """A server that takes only video URLs, and the clip server it can fetch the synthetic clips from."""
    tmp = tmp_path_factory.mktemp("url-only")
    config = ReferenceConfig(records_path=tmp / "records.jsonl", faults=FaultKnobs(refuse_data_urls=True))
    with ReferenceServer(config) as server, ClipServer(clip_routes([SYNTHETIC])) as clips:
        yield server, clip_urls(clips.base_url, SYNTHETIC), tmp / "records.jsonl"


def capability(url_only, tmp: Path, transport: str, extra: dict | None = None):
    server, urls, _ = url_only
    request = CapabilityRequest(
        url=server.url,
        model=MODEL,
        api_key=None,
        prompt=workload_prompts(SYNTHETIC)[0],
        max_tokens=16,
        extra_body=extra or {},
        clip_urls=urls,
    )
    return check_over_transports(request, RunSettings(video_transport=transport), tmp)


def test_auto_keeps_http_after_a_data_url_refusal_and_keeps_the_refusal(url_only, tmp_path: Path) -> None:
    outcome = capability(url_only, tmp_path, "auto")
    assert outcome.stage.status == "passed" and outcome.transport == "http"
    assert [(a.transport, a.http_status, a.accepted) for a in outcome.attempts] == [
        ("data-url", 500, False),
        ("http", 200, True),
    ]
    assert DATA_URL_REFUSAL in outcome.attempts[0].detail
    assert "video as http; data-url refused first: HTTP 500" in outcome.stage.detail
    saved = json.loads((tmp_path / "capability.json").read_text())
    assert saved["video_transport"] == "http" and saved["accepted"]
    assert [a["http_status"] for a in saved["attempts"]] == [500, 200]


def test_data_url_alone_fails_as_a_transport_not_as_video(url_only, tmp_path: Path) -> None:
    outcome = capability(url_only, tmp_path, "data-url")
    assert outcome.stage.status == "failed" and outcome.transport is None  # failed, not rejected: no gap shown
    assert "could not take the clip as data-url" in outcome.stage.detail
    assert "--video-transport http" in outcome.stage.detail and "HTTP 500" in outcome.stage.detail
    assert capability(url_only, tmp_path, "http").transport == "http"


def test_a_content_rejection_on_every_transport_is_rejected(tmp_path: Path) -> None:
    # Bytes that are no video, served as video/mp4: the reference endpoint fetches them and refuses the content
    # (400), which says nothing about the transport.
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all" * 50)
    prompt = workload_prompts(SYNTHETIC)[0]
    with ReferenceServer(ReferenceConfig()) as server, ClipServer({"/junk.mp4": ServedFile(junk, "video/mp4")}) as c:
        request = CapabilityRequest(server.url, MODEL, None, prompt, 16, {}, {prompt.clip_id: c.url_for("/junk.mp4")})
        outcome = check_over_transports(request, RunSettings(video_transport="http"), tmp_path)
    assert outcome.stage.status == "rejected" and "HTTP 400" in outcome.stage.detail
    assert "cannot be decoded" in outcome.stage.detail and "(video as http)" in outcome.stage.detail


def test_every_transport_failing_names_each_one(tmp_path: Path) -> None:
    from trtmc_videoqa.serving.process import free_loopback_port

    prompt = workload_prompts(SYNTHETIC)[0]
    nobody = f"http://127.0.0.1:{free_loopback_port()}"
    request = CapabilityRequest(nobody, MODEL, None, prompt, 16, {}, {prompt.clip_id: nobody + "/c.mp4"})
    outcome = check_over_transports(request, RunSettings(video_transport="auto"), tmp_path)
    assert outcome.stage.status == "failed"
    assert outcome.stage.detail.startswith("every video transport failed (tried data-url, http): data-url: no answer")
    assert "; http: no answer" in outcome.stage.detail


def test_extra_body_reaches_the_server_in_the_capability_request(url_only, tmp_path: Path) -> None:
    *_, path = url_only
    before = len(records(path))
    assert capability(url_only, tmp_path, "http", extra=NUM_FRAMES).transport == "http"
    (seen,) = records(path)[before:]
    assert seen["body_fields"]["chat_template_kwargs"] == {"num_frames": 16} and seen["video_scheme"] == "http"


# --- the workload's extra_body, as data ---------------------------------------------------------------------------


def test_extra_body_is_in_every_aiperf_row_and_in_the_digest_only_when_declared(tmp_path: Path) -> None:
    prompts = workload_prompts(SYNTHETIC)
    plan = plan_requests(prompts, repeats=1, warmup=1, max_tokens=16, extra_body=NUM_FRAMES)
    rows = [json.loads(line) for line in input_file_lines(plan)]
    assert all(r["extra"] == {**NUM_FRAMES, "max_tokens": 16, "temperature": 0.0} for r in rows)
    paths = [prompts[0].clip_path] + [prompt.clip_path for prompt in prompts]  # the warmup row first
    assert [r["video"] for r in rows] == paths
    urls = {prompt.clip_id: f"http://127.0.0.1:1/clips/synthetic/{prompt.clip_id}.mp4" for prompt in prompts}
    http = plan_requests(prompts, repeats=1, warmup=0, max_tokens=16, videos=urls)
    assert [json.loads(line)["video"] for line in input_file_lines(http)] == [urls[p.clip_id] for p in prompts]
    declared = load_workload(with_extra_body(tmp_path, NUM_FRAMES))
    assert declared.spec.generation.extra_body == NUM_FRAMES and declared.digest != SYNTHETIC.digest
    assert "extra_body" not in (SYNTHETIC.root / "workload.json").read_text()  # committed digests unchanged
    assert "extra_body" not in Generation().model_dump()


def test_extra_body_may_not_set_what_the_run_sets(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="extra_body may not set max_tokens, model"):
        with_extra_body(tmp_path, {"model": "x", "max_tokens": 1})


def test_a_changed_extra_body_is_refused_until_sealed(tmp_path: Path) -> None:
    path = with_extra_body(tmp_path, NUM_FRAMES)
    raw = json.loads(path.read_text())
    raw["generation"]["extra_body"] = {"chat_template_kwargs": {"num_frames": 32}}
    path.write_text(json.dumps(raw))
    with pytest.raises(WorkloadError, match="digest"):
        load_workload(path)


# --- the plan, the body limit, the reports ------------------------------------------------------------------------


def test_the_body_limit_holds_for_data_urls_only(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("qualify", "--endpoint", "http://127.0.0.1:9", "--model", MODEL, "--workload", "synthetic")
    args += ("--body-limit", "3000")
    refused = run_main(capsys, *args, "--dry-run")
    assert refused.returncode == 2 and "--video-transport http" in refused.stderr
    http = run_main(capsys, *args, "--dry-run", "--video-transport", "http")
    assert http.returncode == 0 and f"video transport: http ({CHOICES['http'].dry_run})" in http.stdout
    auto = run_main(capsys, *args, "--dry-run", "--video-transport", "auto")
    assert auto.returncode == 0 and "note: workload 'synthetic': clip 'forward' as a data URL" in auto.stdout
    assert "its data-url try is not sent, http is tried" in auto.stdout


def test_the_transport_asked_for_joins_both_ladders_cache_keys(tmp_path: Path) -> None:
    from trtmc_videoqa.aiperf.locate import AiperfInstall
    from trtmc_videoqa.inventory import run_inventory
    from trtmc_videoqa.plan.cache_keys import endpoint_key, trtmc_key
    from trtmc_videoqa.plan.endpoint_target import EndpointTarget
    from trtmc_videoqa.plan.job import QualifyJob

    aiperf = AiperfInstall(executable="aiperf", interpreter="python", version="0.13.0", source="PyPI release")
    inventory = run_inventory(Path(__file__).parent / "fixtures" / "trtmc_families")
    entry = next(e for e in inventory.entries if e.profile == "vidqa-2b")

    def keys(transport: str, clip_server: str = "") -> tuple[str, str]:
        job = QualifyJob(
            workload=SYNTHETIC,
            facts=None,  # type: ignore[arg-type]  # the keys never read it
            settings=RunSettings(video_transport=transport, out=tmp_path),
            aiperf=aiperf,
            tokenizer=tmp_path,
            tokenizer_label="t",
            command="c",
            clip_urls={"forward": clip_server} if clip_server else {},
        )
        endpoint = endpoint_key(job, EndpointTarget(profile="p", model=MODEL, identity="u"))
        return endpoint, trtmc_key(job, entry, inventory, "t")

    by_transport = {t: keys(t) for t in ("data-url", "http", "auto")}
    assert len({k[0] for k in by_transport.values()}) == 3 and len({k[1] for k in by_transport.values()}) == 3
    assert keys("http", "http://127.0.0.1:1/x") == by_transport["http"]  # the clip server's port never keys a row


def test_every_report_shows_the_transport_and_its_tries() -> None:
    attempts = [
        TransportAttempt(transport="data-url", http_status=500, accepted=False, detail=f"HTTP 500: {DATA_URL_REFUSAL}"),
        TransportAttempt(transport="http", http_status=200, accepted=True, detail="answered"),
    ]
    qualified = ResultRow(
        profile="p",
        status="endpoint-qualified",
        status_reason="ok",
        video_transport="http",
        transport_attempts=attempts,
        stages=[StageResult(name="capability", status="passed")],
    )
    failed = qualified.model_copy(
        update={"profile": "q", "status": "failed", "video_transport": None, "transport_attempts": attempts[:1]}
    )
    report = Report(
        title="t",
        generated_by="g",
        sources=["."],
        reference_self_test=False,
        group={"status": "endpoint", "line": "Group: endpoint"},
        rows=[qualified, failed],
        counts={},
    )
    markdown = render_markdown(report)
    assert "| transport |" in markdown and "| http |" in markdown and "| none accepted |" in markdown
    assert "- Video transport: http; tried data-url: refused (HTTP 500) — HTTP 500: Incorrect format" in markdown
    html = render_html(report)
    assert "<th>transport</th>" in html and "Video transport: http; tried data-url: refused (HTTP 500)" in html
    assert '<property name="video_transport" value="http" />' in render_junit(report)


# --- whole runs, through AIPerf: read from runs made once per test run (shared_runs.py) but one ---------------------


@pytest.mark.e2e
def test_the_self_test_passes_over_http(quick_http_run: SharedRun) -> None:
    # `qualify --workload synthetic --repeats 1 --warmup 1 --video-transport http`
    out, done = quick_http_run.out, quick_http_run.done()
    assert done.returncode == 0, done.stderr
    result = row(out, "reference-self-test.synthetic")
    assert result.status == "endpoint-qualified", result.status_reason
    assert result.video_transport == "http" and [a.transport for a in result.transport_attempts] == ["http"]
    assert result.identity.verdict == "held"
    inputs = (out / "checkpoints" / "reference-self-test.synthetic" / "aiperf" / "inputs.jsonl").read_text()
    videos = [json.loads(line)["video"] for line in inputs.splitlines()]
    assert videos and all(v.startswith("http://127.0.0.1:") and "/clips/synthetic/" in v for v in videos)
    assert "data:" not in inputs
    chat = [r for r in records(out / "private" / "reference" / "records.jsonl") if r["route"] == "/v1/chat/completions"]
    assert chat and {r["video_scheme"] for r in chat} == {"http"}  # capability, AIPerf and identity's chat alike
    assert result.provenance.settings["video_transport"] == "http"
    assert result.provenance.settings["video_transport_used"] == "http"
    assert "Video transport: http" in (out / "report.md").read_text()
    assert "GET /clips/synthetic/forward.mp4" in (out / "private" / "clip-server.log").read_text()


@pytest.mark.e2e
def test_a_clip_over_the_body_limit_runs_over_http(tmp_path: Path) -> None:
    # 3000 bytes, on our side (--body-limit) and on the server's: the synthetic clip as a data URL (about 5 KB of
    # body) is over it, an http URL far under. With auto the data URL is not even sent, and the whole run, AIPerf
    # included, goes over http under that limit. (--video-transport http with the same limit is accepted before
    # anything runs: test_the_body_limit_holds_for_data_urls_only; and runs end to end: the self-test over http.)
    with reference(tmp_path, max_body_bytes=3000) as url:
        auto = endpoint(url, tmp_path / "auto", "--body-limit", "3000", "--video-transport", "auto")
    assert auto.returncode == 0 and "note: workload 'synthetic'" in auto.stderr, auto.stderr
    fell_back = row(tmp_path / "auto", MODEL)
    assert fell_back.status == "endpoint-qualified" and fell_back.video_transport == "http", fell_back.status_reason
    assert fell_back.failed_requests == 0 and fell_back.profiling_requests_completed == 6
    not_sent = fell_back.transport_attempts[0]
    assert (not_sent.transport, not_sent.http_status) == ("data-url", None) and "not sent" in not_sent.detail
    served = records(tmp_path / "reference-records.jsonl")
    assert served and all(r["status"] == 200 for r in served)  # no body was over the server's limit


@pytest.mark.e2e
def test_auto_against_a_server_that_refuses_data_urls_qualifies_over_http(auto_key_run: SharedRun) -> None:
    # shared_runs.endpoint_auto_with_key: a server that refuses data URLs, --video-transport auto
    done = auto_key_run.done()
    assert done.returncode == 0, done.stderr
    result = row(auto_key_run.out, MODEL)
    assert result.status == "endpoint-qualified", result.status_reason
    assert result.video_transport == "http"
    first, second = result.transport_attempts
    assert (first.transport, first.http_status, first.accepted) == ("data-url", 500, False)
    assert DATA_URL_REFUSAL in first.detail and (second.transport, second.accepted) == ("http", True)
    assert "data-url refused first: HTTP 500" in result.stages[1].detail
    chat = [r for r in records(auto_key_run.folder / "server-records.jsonl") if r["route"] == "/v1/chat/completions"]
    assert {r["video_scheme"] for r in chat} == {"data", "http"}  # the refused try, then http only
    assert [r["video_scheme"] for r in chat].count("data") == 1


def test_data_url_alone_against_a_server_that_refuses_them_fails_at_capability(tmp_path: Path, capsys) -> None:
    # The data-url run stops at capability: a transport that failed, named with its fix; exit 3 like any failed row.
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(refuse_data_urls=True))) as server:
        args = ("--endpoint", server.url, "--model", MODEL, *QUICK, "--out", str(tmp_path / "data-url"))
        refused = run_main(capsys, "qualify", *args)  # in this process: nothing of it starts a child process
    assert refused.returncode == 3, refused.stderr
    failed = row(tmp_path / "data-url", MODEL)
    assert (failed.status, failed.failed_stage) == ("failed", "capability")
    assert "as data-url" in failed.status_reason and "--video-transport http" in failed.status_reason
    assert failed.video_transport is None and [a.http_status for a in failed.transport_attempts] == [500]


@pytest.mark.e2e
def test_a_workloads_extra_body_reaches_the_server_on_every_chat_request(native_route_run: SharedRun) -> None:
    # shared_runs.endpoint_with_native_route: the synthetic workload's copy declaring {"num_frames": 16}
    done, out = native_route_run.done(), native_route_run.out
    assert done.returncode == 0, done.stderr
    result = row(out, MODEL)
    assert result.status == "endpoint-qualified", result.status_reason
    chat = [r for r in records(native_route_run.folder / "extra-records.jsonl") if r["route"] == "/v1/chat/completions"]
    # the capability check, one warmup, six profiling requests, six identity chat requests
    assert len(chat) == 1 + 1 + 6 + 6
    assert all(r["body_fields"].get("chat_template_kwargs") == {"num_frames": 16} for r in chat)
    inputs = (out / "checkpoints" / MODEL / "aiperf" / "inputs.jsonl").read_text().splitlines()
    assert all(json.loads(line)["extra"]["chat_template_kwargs"] == {"num_frames": 16} for line in inputs)


@pytest.mark.e2e
def test_the_trtmc_ladder_sends_the_same_transport_to_trtmc_server(trtmc_resumed_run: SharedRun) -> None:
    # shared_runs.trtmc_resumed_after_faults: vidqa-2b through the TRTMC test doubles with --video-transport http;
    # the last of its three runs qualified
    out, done = trtmc_resumed_run.out, trtmc_resumed_run.done("resume")
    assert done.returncode == 0, done.stderr
    result = row(out, "vidqa-2b")
    assert result.status == "aiperf-qualified", result.status_reason
    assert result.video_transport == "http" and result.provenance.settings["video_transport_used"] == "http"
    served = records(out / "checkpoints" / "vidqa-2b" / "private" / "server-records.jsonl")
    chat = [r for r in served if r.get("route") == "/v1/chat/completions"]
    assert chat and {r["video_scheme"] for r in chat} == {"http"}
