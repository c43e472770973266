"""The real step chain against a real third-party server: Hugging Face `transformers serve` (transformers[serving]
5.24.0) on the CPU, on loopback, serving a tiny random-weight Qwen2.5-VL built here offline (real_server/tiny_vlm.py),
qualified with the published AIPerf 0.13.0.

The model's answers are gibberish cut at the token limit (tiny_vlm.py makes that certain), so the row fails at
`output-check` with every answer `cut-off` and no failed request; the server's prompt-token counts show that the
clip really reached the model. That run streams (`--streaming`, one run read by two tests): the unstreamed path
runs against this server in `compare` and in the control runs below. Sent as a data URL, the clip is refused by
this server (HTTP 500), and the row fails at `capability` naming the transport. The workload steps around two
defects of that server (workloads/silent_audio_copy.py says which and how).

`trtmc-videoqa compare` runs the same chain itself: it starts `transformers serve` on the local tiny model, makes
the workload copy, and labels its row a comparison, which no report counts as TRTMC.

Needs the `real-server` extra (torch, torchvision, torchcodec, transformers[serving]) and Debian's ffmpeg, which
.ci/run installs: without them the tests are skipped saying why, except in CI (CI set), where they fail. About a
minute on two cores.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import execution_checks
import pytest
from helpers import cli, no_traceback, qualify, row
from real_server.serve import chat, offline_env, prompt_tokens, transformers_serve
from real_server.tiny_vlm import MODEL_DIR_NAME, build_tiny_vlm, parameter_count
from real_server.workload import audio_workload

from trtmc_videoqa.controls.shipped import CONTROL, TWINS, ControlModel
from trtmc_videoqa.results import COMPARISON_LABEL, Report, ResultRow

pytestmark = [pytest.mark.real_server, pytest.mark.e2e]

MODEL = MODEL_DIR_NAME  # the name the server knows the model by (no "/": the profile is the same name)
PROFILE = MODEL.replace("/", "--")
RUN = ("--endpoint", "{url}", "--model", MODEL, "--workload", "{workload}", "--repeats", "1", "--warmup", "1")
QUALIFY_TIMEOUT_S = 300
# What the extra brings that the server imports (transformers itself comes with aiperf).
EXTRA = ("torch", "torchvision", "torchcodec", "fastapi", "uvicorn", "openai", "accelerate")


def _missing() -> str | None:
    """Why the real server cannot run here, or None. The packages are looked up, not imported (importing them all
    took about 6 s of CPU in a process of its own); torchcodec is imported here, in the worker, which imports torch
    for the tiny model anyway and torchcodec for the in-process check: it loads ffmpeg's libraries as it is
    imported, the one failure a complete install can still have."""
    if shutil.which("ffmpeg") is None:
        return "ffmpeg is not installed (torchcodec decodes through its libraries): apt-get install -y ffmpeg"
    absent = [name for name in EXTRA if importlib.util.find_spec(name) is None]
    if absent:
        missing = ", ".join(absent)
        return f"the real-server extra is not installed ({missing}): .venv/bin/pip install -e '.[real-server]'"
    try:
        import torchcodec.decoders  # noqa: F401
    except Exception as error:  # torchcodec raises RuntimeError when no ffmpeg library it knows loads
        last = (str(error).strip().splitlines() or [type(error).__name__])[-1]
        return f"torchcodec cannot load ffmpeg's libraries ({last}): apt-get install -y ffmpeg"
    return None


@pytest.fixture(scope="module")
def real_server_packages() -> None:
    why = _missing()
    if why is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"the real-server test must run in CI, and cannot: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("real-server")


@pytest.fixture(scope="module")
def workload(real_server_packages: None, work: Path) -> Path:
    return audio_workload(work / "workload")


@pytest.fixture(scope="module")
def model_dir(real_server_packages: None, work: Path) -> Path:
    built = build_tiny_vlm(work / "models")
    assert 100_000 <= parameter_count(built) <= 400_000
    return built


@pytest.fixture(scope="module")
def server(model_dir: Path, work: Path) -> Iterator[str]:
    """`transformers serve` pinned to the tiny model, healthy; killed at the end of the module."""
    with transformers_serve(model_dir, work / "transformers-serve.log") as url:
        yield url


def _qualify(url: str, workload: Path, out: Path, transport: str, *extra: str) -> ResultRow:
    args = [a.format(url=url, workload=workload) for a in RUN]
    done = qualify(*args, "--video-transport", transport, "--out", str(out), *extra, timeout=QUALIFY_TIMEOUT_S)
    no_traceback(done)
    assert done.returncode == 3, done.stderr  # both callers' rows fail: the failed row's code
    return row(out, PROFILE)


def _text_only_prompt_tokens(url: str, workload: Path) -> dict[str, int]:
    """Question id -> prompt tokens of the same prompt text with no clip, from the same server."""
    prompts = json.loads(workload.read_text())["prompts"]
    return {p["question_id"]: prompt_tokens(chat(url, MODEL, p["text"])) for p in prompts}


def _aiperf_prompt_tokens(out: Path) -> dict[str, int]:
    """x_request_id -> the server's usage.prompt_tokens, as AIPerf recorded it (from a stream's last chunk)."""
    found = {}
    for line in (out / "checkpoints" / PROFILE / "aiperf" / "export" / "profile_export.jsonl").read_text().splitlines():
        record = json.loads(line)
        value = (record.get("metrics") or {}).get("usage_prompt_tokens", {}).get("value")
        if isinstance(value, int):
            found[record["metadata"]["x_request_id"]] = value
    return found


@pytest.fixture(scope="module")
def random_weights_streamed(server: str, workload: Path, work: Path) -> tuple[ResultRow, Path]:
    """The tiny random-weight model measured once over http with `--streaming`: its row and its --out. Read by the
    two tests below (one AIPerf run for both: each launch is about 4 s of CPU)."""
    out = work / "random-weights-streamed"
    return _qualify(server, workload, out, "http", "--streaming"), out


def test_random_weights_fail_at_output_check_with_every_answer_cut_off(
    server: str, workload: Path, random_weights_streamed: tuple[ResultRow, Path]
) -> None:
    failed, out = random_weights_streamed
    assert (failed.status, failed.failed_stage) == ("failed", "output-check"), failed.status_reason
    assert failed.video_transport == "http"
    assert failed.served_model is not None and failed.served_model.verdict == "same", failed.served_model
    check = failed.output_check
    assert check.checked == 8 and check.by_outcome["cut-off"] == check.checked, check
    assert "cut-off 8" in failed.status_reason
    assert all(example.outcome == "cut-off" and example.answer for example in check.examples)
    # A complete AIPerf run: no failed request, and a record for every planned one (1 warmup + 8 profiling).
    assert failed.failed_requests == 0
    plan = (out / "checkpoints" / PROFILE / "aiperf" / "inputs.jsonl").read_text().splitlines()
    assert len(failed.requests) == len(plan) == 9
    assert all(r.http_status == 200 and r.error is None and r.x_request_id for r in failed.requests)
    # The clip reached the model: each request's prompt is far longer than its question alone on the same server
    # (8 frames of 320x180 are several hundred video placeholder tokens; the question is under a hundred).
    text_only = _text_only_prompt_tokens(server, workload)
    recorded = _aiperf_prompt_tokens(out)
    added = set()
    for request in failed.requests:
        with_clip, alone = recorded[request.x_request_id], text_only[request.question_id]
        assert with_clip >= alone + 256 and with_clip >= 4 * alone, (request.session_id, with_clip, alone)
        added.add(with_clip - alone)
    assert len(added) == 1, added  # both clips are 8 frames of 320x180: the same number of video tokens


def test_a_streamed_run_has_time_to_first_token_and_inter_token_latency(
    random_weights_streamed: tuple[ResultRow, Path],
) -> None:
    """--streaming against the real server: AIPerf streams, every request is answered, its TTFT and ITL recorded,
    and the streamed answers are checked as the whole ones are (cut off at the token limit, every one)."""
    streamed, _ = random_weights_streamed
    assert (streamed.status, streamed.failed_stage) == ("failed", "output-check"), streamed.status_reason
    assert streamed.streamed and "--streaming" in streamed.commands["aiperf"].argv
    assert streamed.failed_requests == 0 and streamed.profiling_requests_completed == 8
    assert streamed.ttft and streamed.ttft.count == 8, streamed.ttft
    assert streamed.itl and streamed.itl.count == 8, streamed.itl
    assert streamed.output_tokens_per_s and streamed.output_tokens_per_s > 0
    assert streamed.output_check and streamed.output_check.by_outcome["cut-off"] == 8, streamed.output_check
    for request in streamed.requests:
        assert request.answer and request.ttft_ms and request.ttft_ms <= (request.client_latency_ms or 0), request


def test_a_clip_sent_as_a_data_url_fails_at_capability_naming_the_transport(
    server: str, workload: Path, tmp_path: Path
) -> None:
    failed = _qualify(server, workload, tmp_path / "out", "data-url")
    assert (failed.status, failed.failed_stage) == ("failed", "capability"), failed.status_reason
    assert [(a.transport, a.accepted) for a in failed.transport_attempts] == [("data-url", False)]
    assert "data-url" in failed.status_reason
    assert "--video-transport http" in failed.status_reason, failed.status_reason
    assert failed.requests == [] and not (tmp_path / "out" / "checkpoints" / PROFILE / "aiperf" / "export").exists()


def test_a_model_the_server_is_not_pinned_to_is_a_setup_error_not_unsupported(
    server: str, workload: Path, tmp_path: Path
) -> None:
    """`transformers serve` pinned to one model answers 400 "Server is pinned to ..." to a video request for another:
    the plain text request after it is refused the same way, so the row is a setup error with the fix."""
    args = ["--endpoint", server, "--model", "not-this-model", "--workload", str(workload), "--out", str(tmp_path)]
    done = qualify(*args, "--video-transport", "http", timeout=QUALIFY_TIMEOUT_S)
    no_traceback(done)
    failed = row(tmp_path, "not-this-model")
    assert (failed.status, failed.failed_stage) == ("failed", "capability"), failed.status_reason
    assert "Server is pinned to" in failed.status_reason and "check --model" in failed.status_reason
    assert "/v1/models" in failed.status_reason


def test_compare_serves_a_checkpoint_itself_and_labels_the_row_a_comparison(model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "compare out"
    env = offline_env(tmp_path / "hf-home")
    argv = ["--checkpoint", str(model_dir), "--device", "cpu", "--repeats", "1", "--warmup", "1", "--out", str(out)]
    done = cli("compare", *argv, env=env, timeout=QUALIFY_TIMEOUT_S)
    no_traceback(done)
    assert done.returncode == 3, done.stderr  # the verdict: its one row failed (docs/commands.md, exit codes)
    compared = row(out, f"{MODEL}.transformers-serve")
    # The same honest failure as the endpoint run above: the clip travelled (http), the answers are meaningless.
    assert (compared.status, compared.failed_stage) == ("failed", "output-check"), compared.status_reason
    assert compared.video_transport == "http" and compared.failed_requests == 0
    facts = compared.comparison
    assert facts is not None and facts.label == COMPARISON_LABEL
    assert (facts.server, facts.server_version, facts.device, facts.checkpoint) == (
        "transformers serve",
        "5.24.0",
        "cpu",
        MODEL,
    )
    assert facts.media_adaptation.startswith("workload copy bigbuckbunny-silent-audio"), facts.media_adaptation
    assert compared.provenance is not None and compared.provenance.workload == "bigbuckbunny-silent-audio"
    assert (out / "private" / "transformers-serve.log").stat().st_size > 0
    # aiperf_qual's evidence from a server we did not write: the upstream checkpoint is aiperf_qual's native
    # (reference) side, and a server that reports no task time leaves every record without one, so none is valid
    batch = execution_checks.check_execution(out / "checkpoints" / f"{MODEL}.transformers-serve", compared)[0]
    assert batch["identity"]["side"] == "reference" and batch["records"]
    assert all(
        r["model_call_ms"] is None and not r["valid"] and r["capacity_rejection"] is None for r in batch["records"]
    )
    assert compared.aiperf_qual_verdict == "acc-issue"  # failed at output-check
    report = Report.model_validate_json((out / "report.json").read_text())
    assert report.group.status == "comparison" and COMPARISON_LABEL in report.group.line
    assert COMPARISON_LABEL in (out / "report.md").read_text()


# --- the positive control and its order-blind twin (trtmc_videoqa/controls) ------------------------------------------

TWIN = TWINS["order-blind"]
CONTROL_WORKLOADS = ("synthetic", "bigbuckbunny")
SHOTS = Path(__file__).resolve().parent.parent / Path(
    os.environ.get("REPORT_SCREENSHOTS_DIR") or "build/report-screenshots"
)


@pytest.fixture(scope="module")
def silent_workloads(real_server_packages: None, work: Path) -> dict[str, Path]:
    """The silent-audio copies of both built-in workloads: name -> workload file."""
    return {name: audio_workload(work / f"workload-{name}", name) for name in CONTROL_WORKLOADS}


def _served_runs(
    model: ControlModel, names: tuple[str, ...], workloads: dict[str, Path], work: Path, repeats: int = 1
) -> dict[str, Path]:
    """`transformers serve` pinned to the shipped folder by its path, as a user serves it, and `qualify --endpoint`
    with that path as `--model`, once per workload: workload name -> the run's --out."""
    outs = {}
    with transformers_serve(model.path, work / f"{model.folder}.log", by_path=True) as url:
        for name in names:
            out = work / f"{model.folder}-{name}"
            args = ["--endpoint", url, "--model", str(model.path), "--workload", str(workloads[name])]
            done = qualify(*args, "--repeats", str(repeats), "--warmup", "1", "--video-transport", "http",
                           "--out", str(out), timeout=QUALIFY_TIMEOUT_S)  # fmt: skip
            no_traceback(done)
            assert done.returncode == 0, done.stderr
            outs[name] = out
    return outs


@pytest.fixture(scope="module")
def control_runs(silent_workloads: dict[str, Path], work: Path) -> dict[str, Path]:
    # two repeats: the control keeps its answers from one repeat to the next
    return _served_runs(CONTROL, CONTROL_WORKLOADS, silent_workloads, work, repeats=2)


@pytest.fixture(scope="module")
def twin_runs(silent_workloads: dict[str, Path], work: Path) -> dict[str, Path]:
    return _served_runs(TWIN, ("bigbuckbunny",), silent_workloads, work)


def _right_both_ways(found: ResultRow) -> dict[str, tuple[bool, bool]]:
    """question id -> (right on the clip, right on the reversed clip) in every repeat, from the row's graded
    profiling requests."""
    graded: dict[str, dict[str, bool]] = {}
    for request in found.requests:
        if request.phase == "profiling":
            clips = graded.setdefault(request.question_id, {})
            clips[request.clip_id] = clips.get(request.clip_id, True) and request.grade == "correct"
    return {question: (clips["forward"], clips["reversed"]) for question, clips in graded.items()}


def test_the_shipped_weights_answer_every_framing_in_process(real_server_packages: None, work: Path) -> None:
    import torch

    from trtmc_videoqa.controls.verify import answer_all

    torch.set_num_threads(1)  # see offline_env: a second thread only waits for a core beside the other workers
    answered, twin = answer_all([(CONTROL.path, CONTROL), (TWIN.path, TWIN)], work / "in-process")
    assert answered and [a.example.name for a in answered if not a.right] == []
    # the twin: every answer an option, and the same answer for a clip and its reversed twin in every framing
    assert all(a.answer.strip() in {"A", "B", "C", "D"} for a in twin), {a.answer for a in twin}
    by_framing: dict[tuple[object, ...], set[str]] = {}
    for a in twin:
        e = a.example
        by_framing.setdefault((e.workload, e.question, e.order, e.num_frames, e.silent_audio), set()).add(a.answer)
    assert all(len(answers) == 1 for answers in by_framing.values()), by_framing


def test_the_control_is_endpoint_qualified_with_every_question_right_both_ways(control_runs: dict[str, Path]) -> None:
    for name, out in control_runs.items():
        found = row(out, CONTROL.folder)  # a local folder as --model names the row by the folder
        assert found.status == "endpoint-qualified", (name, found.status_reason)
        assert found.video_transport == "http" and found.failed_requests == 0
        assert found.accuracy is not None and found.accuracy.both_right == 1.0, (name, found.accuracy)
        assert set(_right_both_ways(found).values()) == {(True, True)}, name
        assert found.output_check is not None and found.output_check.checked == 2 * 2 * found.accuracy.questions


def test_the_order_blind_twin_passes_the_output_check_and_fails_the_reversed_controls(
    twin_runs: dict[str, Path],
) -> None:
    found = row(twin_runs["bigbuckbunny"], TWIN.folder)
    assert found.output_check is not None and found.output_check.passed, found.output_check
    assert found.status == "endpoint-qualified", found.status_reason  # accuracy is a figure, not a gate
    assert found.accuracy is not None and found.accuracy.both_right is not None
    assert found.accuracy.both_right <= 0.5, found.accuracy
    assert not any(forward and reversed for forward, reversed in _right_both_ways(found).values())


def test_report_shows_the_control_beside_the_twin(
    control_runs: dict[str, Path], twin_runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from browser import WIDTH, chromium_or_skip, evaluate, open_page, screenshot

    monkeypatch.chdir(tmp_path)  # the report names its sources relative to here: no machine path in a screenshot
    for name, out in (("control", control_runs["bigbuckbunny"]), ("twin", twin_runs["bigbuckbunny"])):
        shutil.copytree(out, tmp_path / name)
    done = cli("report", "control", "twin", "--out", "side-by-side", timeout=120)
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    report = Report.model_validate_json((tmp_path / "side-by-side" / "report.json").read_text())
    assert [r.profile for r in report.rows] == [CONTROL.folder, TWIN.folder]
    both = {r.profile: r.accuracy.both_right if r.accuracy else None for r in report.rows}
    assert both == {CONTROL.folder: 1.0, TWIN.folder: 0.0}
    chromium_or_skip()
    browser, session = open_page(tmp_path / "side-by-side" / "report.html", tmp_path)
    try:
        SHOTS.mkdir(parents=True, exist_ok=True)
        # the whole page: the summary, then each row's question grid (right both ways against right one way)
        height = evaluate(browser, session, "document.documentElement.scrollHeight")
        page = {"x": 0, "y": 0, "width": WIDTH, "height": height}
        screenshot(browser, session, SHOTS / "report-control-vs-twin.png", page)
    finally:
        browser.close()
    assert (SHOTS / "report-control-vs-twin.png").stat().st_size > 10_000
