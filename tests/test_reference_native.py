"""The reference endpoint's native Task route (perf_serving's request shape) over loopback: the same answers as chat,
its refusals, records, the identity and timing fault knobs, and the perf_serving test double that serves it."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from doubles.toolchain import install_doubles
from helpers import HTTP

from trtmc_videoqa.media import chat_request_body, data_url
from trtmc_videoqa.reference import (
    CANNOT_TELL,
    DRIFT_MARKER,
    OBSERVATION_FIELD,
    SERVED_BY,
    TEST_DOUBLE_LABEL,
    FaultKnobs,
    ReferenceConfig,
    ReferenceServer,
)
from trtmc_videoqa.serving.process import ServerProcess, free_loopback_port
from trtmc_videoqa.workloads import builtin_workload
from trtmc_videoqa.workloads.synthetic import SYNTHETIC_QUESTION_IDS, make_clip

MODEL = "trtmc-videoqa-reference"
WORKLOAD = builtin_workload("synthetic")
PROMPTS = [WORKLOAD.prompt(question_id).text for question_id in SYNTHETIC_QUESTION_IDS]
NATIVE = "/v1/tasks/generate"
CHAT = "/v1/chat/completions"
CHECKOUT = Path(__file__).parent / "fixtures" / "trtmc_families"
FORWARD_ANSWERS = ["A", "A", "B"]  # what the forward clip computes for PROMPTS, on either route


@pytest.fixture(scope="module")
def clip_bytes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("reference-native")
    return {
        "forward": make_clip(root / "forward.mp4").read_bytes(),
        "reversed": make_clip(root / "reversed.mp4", reversed=True).read_bytes(),
    }


def inline(data: bytes) -> dict:
    return {"$file": {"suffix": ".mp4", "b64": base64.b64encode(data).decode()}}


def task_body(prompt: str, data: bytes, **fields) -> dict:
    return {"request": {"prompt": prompt, "video_path": inline(data), "max_new_tokens": 16, **fields}}


def native(url: str, body: dict | bytes, operation: str = "generate", **kwargs) -> httpx.Response:
    sent = {"content": body} if isinstance(body, bytes) else {"json": body}
    return HTTP.post(f"{url}/v1/tasks/{operation}", timeout=30, **sent, **kwargs)


def chat(url: str, prompt: str, data: bytes, **kwargs) -> httpx.Response:
    body = chat_request_body(MODEL, prompt, data_url(data, "video/mp4"), max_tokens=16)
    return HTTP.post(url + CHAT, json=body, timeout=30, **kwargs)


def native_text(url: str, prompt: str, data: bytes) -> str:
    response = native(url, task_body(prompt, data))
    assert response.status_code == 200, response.text
    return response.json()["text"]


def chat_text(url: str, prompt: str, data: bytes) -> str:
    response = chat(url, prompt, data)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def normalised(text: str) -> str:
    return " ".join(text.split()).casefold()


def assert_refused(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    for word in words:
        assert word in message, message
    assert response.json()["served_by"] == SERVED_BY


# --- the route ---------------------------------------------------------------------------------------------------


def test_native_answers_every_question_with_the_same_text_as_chat(server, clip_bytes):
    for data in clip_bytes.values():
        native_answers = [native_text(server.url, prompt, data) for prompt in PROMPTS]
        assert native_answers == [chat_text(server.url, prompt, data) for prompt in PROMPTS]
    assert [native_text(server.url, prompt, clip_bytes["forward"]) for prompt in PROMPTS] == FORWARD_ANSWERS


def test_a_task_result_has_perf_servings_shape_and_the_chat_observation(server, clip_bytes):
    data = clip_bytes["forward"]
    response = native(server.url, task_body(PROMPTS[0], data), headers={"X-Request-ID": "native-0001"})
    body = response.json()
    assert response.headers["X-Request-ID"] == "native-0001" and response.headers["X-Served-By"] == SERVED_BY
    assert (body["id"], body["object"], body["operation"], body["text"]) == (
        "native-0001",
        "task.result",
        "generate",
        "A",
    )
    assert set(body["trtmc_timing"]) == {"queue_ms", "model_call_ms", "handler_ms", "model_call_scope"}
    assert body["trtmc_timing"]["model_call_ms"] <= body["trtmc_timing"]["handler_ms"]
    assert (body["label"], body["test_double"], body["served_by"]) == (TEST_DOUBLE_LABEL, True, SERVED_BY)
    chat_observation = chat(server.url, PROMPTS[0], data).json()[OBSERVATION_FIELD]
    observation = body["trtmc_observation"]
    assert set(observation) == set(chat_observation)
    assert observation["request_id"] == "native-0001"
    for key in ("frame_indices", "question_id", "outcome", "clip_sha256", "sampling_policy"):
        assert observation[key] == chat_observation[key], key


def test_max_new_tokens_cuts_the_answer_like_max_tokens(server, clip_bytes):
    data = clip_bytes["forward"]
    assert native_text(server.url, "What is the weather like?", data) == CANNOT_TELL
    cut = native(server.url, task_body("What is the weather like?", data, max_new_tokens=2)).json()["text"]
    assert cut == "I cannot"


def test_a_model_key_and_a_temperature_are_accepted(server, clip_bytes):
    body = task_body(PROMPTS[0], clip_bytes["forward"], temperature=0) | {"model": "any-profile"}
    assert native(server.url, body).json()["text"] == "A"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda body: body["request"].update(video_path="/data/clip.mp4"), ("inline", '{"$file"')),
        (lambda body: body["request"].update(frames=[1]), ("'frames'",)),
        (lambda body: body.update(stream=True), ("'stream'",)),
        (lambda body: body["request"].pop("prompt"), ("'prompt'", "required")),
        (lambda body: body["request"].pop("video_path"), ("'video_path'", "required")),
        (lambda body: body["request"].update(max_new_tokens=True), ("max_new_tokens", "integer")),
        (lambda body: body["request"].update(temperature="hot"), ("temperature", "number")),
        (lambda body: body["request"]["video_path"]["$file"].update(b64="@@@"), ("not valid base64",)),
        (lambda body: body["request"]["video_path"]["$file"].update(suffix=".png"), ("'.png'", "video")),
        (lambda body: body["request"]["video_path"].update(path="x"), ('{"$file"',)),
    ],
)
def test_a_malformed_task_request_is_refused_naming_what_is_wrong(server, clip_bytes, change, words):
    body = task_body(PROMPTS[0], clip_bytes["forward"])
    change(body)
    assert_refused(native(server.url, body), 400, *words)


def test_another_operation_bytes_not_a_video_and_not_json_are_refused(server, clip_bytes):
    refused = native(server.url, task_body(PROMPTS[0], clip_bytes["forward"]), operation="decide")
    assert_refused(refused, 400, "this server serves 'generate', not 'decide'")
    assert_refused(native(server.url, task_body(PROMPTS[0], b"not a video" * 20)), 400, "video_path clip cannot be")
    assert_refused(native(server.url, b"{not json"), 400, "not valid JSON")


def test_the_key_and_readiness_apply_as_for_chat(monkeypatch, clip_bytes):
    monkeypatch.setenv("REFERENCE_NATIVE_KEY", "s3cret")
    config = ReferenceConfig(api_key_env="REFERENCE_NATIVE_KEY", faults=FaultKnobs(ready_after_s=30))
    with ReferenceServer(config) as keyed:
        body = task_body(PROMPTS[0], clip_bytes["forward"])
        assert_refused(native(keyed.url, body), 401, "API key")
        assert_refused(native(keyed.url, body, headers={"Authorization": "Bearer s3cret"}), 503, "not ready")


# --- records -----------------------------------------------------------------------------------------------------


def test_records_name_the_route_and_number_each_route_on_its_own(tmp_path, clip_bytes):
    records = tmp_path / "records.jsonl"
    data = clip_bytes["forward"]
    with ReferenceServer(ReferenceConfig(records_path=records)) as recorded:
        answered = native(recorded.url, task_body(PROMPTS[0], data), headers={"X-Request-ID": "n-1"}).json()
        chat(recorded.url, PROMPTS[0], data, headers={"X-Request-ID": "c-1"})
        native(recorded.url, task_body(PROMPTS[0], data), operation="embed", headers={"X-Request-ID": "n-2"})
        lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert [(line["request_id"], line["route"], line["sequence"], line["status"]) for line in lines] == [
        ("n-1", NATIVE, 1, 200),
        ("c-1", CHAT, 1, 200),
        ("n-2", "/v1/tasks/embed", 2, 400),
    ]
    first = lines[0]
    assert first["model_call_ms"] == answered["trtmc_timing"]["model_call_ms"]
    assert (first["answer"], first["question_id"], first["clip_bytes"]) == ("A", SYNTHETIC_QUESTION_IDS[0], len(data))
    assert "not 'embed'" in lines[2]["error"] and lines[2]["model_call_ms"] is None


# --- fault knobs -------------------------------------------------------------------------------------------------


def test_full_identity_drift_makes_every_native_answer_differ_from_chat(clip_bytes):
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(identity_drift_rate=1))) as drifting:
        for data in clip_bytes.values():
            for prompt in PROMPTS:
                native_answer, chat_answer = (
                    native_text(drifting.url, prompt, data),
                    chat_text(drifting.url, prompt, data),
                )
                assert native_answer.strip() and normalised(native_answer) != normalised(chat_answer)
                assert native_answer == f"{DRIFT_MARKER} {chat_answer}"


def test_half_drift_differs_on_the_even_native_requests_and_leaves_chat_positions_alone(clip_bytes):
    data = clip_bytes["forward"]
    knobs = FaultKnobs(identity_drift_rate=0.5, error_rate=0.5)
    with ReferenceServer(ReferenceConfig(faults=knobs)) as half:
        differs, chat_statuses = [], []
        for position in range(6):
            prompt = PROMPTS[position % len(PROMPTS)]
            differs.append(native_text(half.url, prompt, data) != FORWARD_ANSWERS[position % len(PROMPTS)])
            chat_statuses.append(chat(half.url, prompt, data).status_code)
    assert differs == [False, True, False, True, False, True]
    assert chat_statuses == [200, 500, 200, 500, 200, 500]  # native traffic in between moved no chat position


def test_answer_text_replaces_both_routes_and_the_records_keep_it(tmp_path, clip_bytes):
    records = tmp_path / "records.jsonl"
    config = ReferenceConfig(records_path=records, faults=FaultKnobs(answer_text=CANNOT_TELL))
    with ReferenceServer(config) as garbage:
        assert native_text(garbage.url, PROMPTS[0], clip_bytes["forward"]) == CANNOT_TELL
        assert chat_text(garbage.url, PROMPTS[0], clip_bytes["forward"]) == CANNOT_TELL
        answers = [json.loads(line)["answer"] for line in records.read_text().splitlines()]
    assert answers == [CANNOT_TELL, CANNOT_TELL]


def test_omitted_task_times_leave_chat_responses_and_records_without_them(tmp_path, clip_bytes):
    records = tmp_path / "records.jsonl"
    data = clip_bytes["forward"]
    with ReferenceServer(ReferenceConfig(records_path=records, faults=FaultKnobs(omit_task_time_rate=1))) as hiding:
        bodies = [chat(hiding.url, PROMPTS[0], data).json() for _ in range(2)]
        native_body = native(hiding.url, task_body(PROMPTS[0], data)).json()
        lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert all("trtmc_timing" not in body and body["choices"][0]["message"]["content"] == "A" for body in bodies)
    for line in lines[:2]:
        assert (line["queue_ms"], line["model_call_ms"], line["handler_ms"]) == (None, None, None)
    assert native_body["trtmc_timing"]["model_call_ms"] > 0 and lines[2]["model_call_ms"] is not None
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(omit_task_time_rate=0.5))) as half:
        timed = ["trtmc_timing" in chat(half.url, PROMPTS[0], data).json() for _ in range(4)]
    assert timed == [True, False, True, False]


# --- the perf_serving test double --------------------------------------------------------------------------------


def _bundle(path: Path, *, test_double: bool) -> Path:
    path.write_bytes(json.dumps({"format": 1, "test_double": test_double}).encode() + b"\n" + b"\0" * 16)
    return path


def _perf_serving_argv(tmp_path: Path, bundle: Path, worker: Path, port: int) -> list[str]:
    return [
        *(sys.executable, "-m", "trtmc_perf_serving", "serve", "--backend", "trtmc", "--profile", "vidqa-2b"),
        *("--bundle", str(bundle), "--runtime-root", str(worker.parent), "--worker", str(worker)),
        *("--records", str(tmp_path / "native.jsonl"), "--scratch", str(tmp_path / "scratch")),
        *("--port", str(port), "--host", "127.0.0.1", "--max-queue", "4"),
    ]


def perf_serving(tmp_path: Path, **env: str) -> tuple[str, list[str], dict[str, str]]:
    """How to start the double: its URL, argv (with a test-double bundle) and environment (PYTHONPATH set)."""
    run_env = install_doubles(tmp_path / "bin") | env
    # As the qualification runs it: the checkout's perf_serving first on the path.
    paths = (str(CHECKOUT / "apps" / "perf_serving"), os.environ.get("PYTHONPATH"))
    run_env["PYTHONPATH"] = os.pathsep.join(path for path in paths if path)
    port = free_loopback_port()
    worker = tmp_path / "bin" / "trtmc_benchmark_worker"
    argv = _perf_serving_argv(tmp_path, _bundle(tmp_path / "m.bundle", test_double=True), worker, port)
    return f"http://127.0.0.1:{port}", argv, run_env


def test_the_perf_serving_double_serves_the_task_route_without_a_key(tmp_path, clip_bytes):
    url, argv, env = perf_serving(tmp_path, TRTMC_SERVE_TOKEN="t0ken", TRTMC_PERF_SERVING_DOUBLE_DRIFT_RATE="1")
    with ServerProcess(argv, url=url, log_path=tmp_path / "perf.log", startup_timeout_s=60, env=env):
        assert HTTP.get(url + "/health/ready").status_code == 200
        assert native_text(url, PROMPTS[0], clip_bytes["forward"]) == f"{DRIFT_MARKER} A"
    records = [json.loads(line) for line in (tmp_path / "native.jsonl").read_text().splitlines()]
    assert [(line["route"], line["status"], line["test_double"]) for line in records] == [(NATIVE, 200, True)]
    assert (tmp_path / "scratch").is_dir()


def test_the_perf_serving_double_refuses_a_real_bundle_and_a_missing_worker(tmp_path):
    _, argv, env = perf_serving(tmp_path)
    real = argv.copy()
    real[real.index("--bundle") + 1] = str(_bundle(tmp_path / "real.bundle", test_double=False))
    done = subprocess.run(real, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "not a test-double bundle" in done.stderr
    no_worker = argv.copy()
    no_worker[no_worker.index("--worker") + 1] = str(tmp_path / "absent")
    done = subprocess.run(no_worker, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "does not exist" in done.stderr
