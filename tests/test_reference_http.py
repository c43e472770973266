"""The reference endpoint's HTTP surface over loopback: health, models, identity, timing, records, refusals, faults."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from pathlib import Path

import httpx
import pytest
from helpers import HTTP, eventually
from pydantic import ValidationError

from trtmc_videoqa.media import chat_request_body, data_url, video_data_url
from trtmc_videoqa.reference import (
    DEFAULT_MAX_BODY_BYTES,
    SERVED_BY,
    TASK_TIME_FIELD,
    TEST_DOUBLE_LABEL,
    FaultKnobs,
    NonLoopbackHostError,
    ReferenceConfig,
    ReferenceServer,
    argv_for_subprocess,
    argv_from_config,
    config_from_arguments,
    error_positions,
)
from trtmc_videoqa.reference.cli_args import build_parser
from trtmc_videoqa.workloads import builtin_workload
from trtmc_videoqa.workloads.synthetic import make_clip

MODEL = "trtmc-videoqa-reference"
WORKLOAD = builtin_workload("synthetic")
PROMPT = WORKLOAD.prompt("synthetic-direction").text
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_clip(tmp_path_factory.mktemp("reference-http") / "forward.mp4")


@pytest.fixture(scope="module")
def video(clip: Path) -> str:
    return video_data_url(clip)


def chat_body(url: str, **extra) -> dict:
    return chat_request_body(MODEL, PROMPT, url, max_tokens=16, extra=extra or None)


def with_content(body: dict, content: list[dict]) -> dict:
    body["messages"][0]["content"] = content
    return body


def post(server: ReferenceServer, body: dict | bytes, **kwargs) -> httpx.Response:
    if isinstance(body, bytes):
        return HTTP.post(server.url + CHAT, content=body, timeout=30, **kwargs)
    return HTTP.post(server.url + CHAT, json=body, timeout=30, **kwargs)


def assert_refused(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    for word in words:
        assert word in message, message
    assert response.json()["served_by"] == SERVED_BY


# --- health and models -------------------------------------------------------------------------------------------


def test_health_and_models_are_labelled_as_the_test_double(server):
    live = HTTP.get(server.url + "/health/live")
    ready = HTTP.get(server.url + "/health/ready")
    models = HTTP.get(server.url + "/v1/models")
    assert (live.status_code, ready.status_code, models.status_code) == (200, 200, 200)
    assert ready.json()["ready"] is True and ready.json()["degraded"] is False
    assert [model["id"] for model in models.json()["data"]] == [MODEL]
    assert models.json()["data"][0]["owned_by"] == TEST_DOUBLE_LABEL
    for response in (live, ready, models):
        assert response.headers["X-Served-By"] == SERVED_BY
        assert response.json().get("label", TEST_DOUBLE_LABEL) == TEST_DOUBLE_LABEL


def test_slow_readiness_says_503_until_ready_and_refuses_chat_meanwhile(video, tmp_path):
    # Ready only once the test says so (the file appears): no clock to race, however busy the machine.
    trigger = tmp_path / "ready"
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(ready_when_file=trigger))) as slow:
        early = HTTP.get(slow.url + "/health/ready")
        assert early.status_code == 503 and early.json()["ready"] is False
        assert_refused(post(slow, chat_body(video)), 503, "not ready")
        assert HTTP.get(slow.url + "/health/ready").status_code == 503  # still, until the file appears
        trigger.touch()
        assert eventually(lambda: HTTP.get(slow.url + "/health/ready").status_code == 200, within_s=60, every_s=0.05)
        late = HTTP.get(slow.url + "/health/ready")
        assert late.status_code == 200 and late.json()["status"] == "ready"
        assert post(slow, chat_body(video)).status_code == 200


# --- identity and timing -----------------------------------------------------------------------------------------


def test_incoming_request_id_is_honoured_and_echoed(server, video):
    response = post(server, chat_body(video), headers={"X-Request-ID": "aiperf-0001"})
    assert response.status_code == 200
    assert response.headers["X-Request-ID"] == "aiperf-0001"
    assert response.json()["id"] == "chatcmpl-aiperf-0001"
    assert response.json()["system_fingerprint"] == TEST_DOUBLE_LABEL
    assert response.headers["X-Served-By"] == SERVED_BY


def test_a_request_without_id_gets_a_generated_one(server, video):
    generated = post(server, chat_body(video)).headers["X-Request-ID"]
    assert re.fullmatch(r"req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", generated)
    assert post(server, chat_body(video)).headers["X-Request-ID"] != generated


def test_an_unusable_request_id_is_refused_not_replaced(server, video):
    assert_refused(post(server, chat_body(video), headers={"X-Request-ID": "x" * 201}), 400, "X-Request-ID")


def test_task_time_is_reported_and_covers_the_added_delay(video):
    assert TASK_TIME_FIELD == "trtmc_timing.model_call_ms"
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(added_task_ms=150))) as delayed:
        started = time.monotonic()
        body = post(delayed, chat_body(video)).json()
        client_ms = (time.monotonic() - started) * 1000
    timing = body["trtmc_timing"]
    assert timing["model_call_ms"] >= 150
    assert timing["model_call_ms"] <= timing["handler_ms"] <= client_ms
    assert timing["queue_ms"] >= 0
    assert body["choices"][0]["message"]["content"] == "A"


# --- records -----------------------------------------------------------------------------------------------------


def test_records_hold_one_line_per_request_id(tmp_path, clip, video):
    records = tmp_path / "records" / "reference.jsonl"
    with ReferenceServer(ReferenceConfig(records_path=records)) as recorded:
        bodies = {}
        for request_id in ("id-1", "id-2", "id-3"):
            response = post(recorded, chat_body(video), headers={"X-Request-ID": request_id})
            bodies[request_id] = response.json()
        part = {"type": "video_url", "video_url": {"url": video}}
        refused = post(
            recorded,
            with_content(chat_body(video), [{"type": "text", "text": "?"}, part, part]),
            headers={"X-Request-ID": "id-bad"},
        )
        assert refused.status_code == 400
        # Written as each request finishes, not at shutdown.
        lines = [json.loads(line) for line in records.read_text().splitlines()]
    assert [line["request_id"] for line in lines] == ["id-1", "id-2", "id-3", "id-bad"]
    assert [line["status"] for line in lines] == [200, 200, 200, 400]
    assert [line["sequence"] for line in lines] == [1, 2, 3, 4]
    assert {line["route"] for line in lines} == {CHAT}
    clip_sha256 = hashlib.sha256(clip.read_bytes()).hexdigest()
    for line in lines[:3]:
        response = bodies[line["request_id"]]
        assert line["model_call_ms"] == response["trtmc_timing"]["model_call_ms"]
        assert line["answer"] == response["choices"][0]["message"]["content"] == "A"
        assert line["frame_indices"] == response["reference_observation"]["frame_indices"]
        assert line["clip_sha256"] == clip_sha256 and line["clip_bytes"] == clip.stat().st_size
        assert line["question_id"] == "synthetic-direction"
        assert line["received_at"] <= line["finished_at"]
        assert line["error"] is None
    for line in lines:
        assert (line["label"], line["test_double"], line["served_by"]) == (TEST_DOUBLE_LABEL, True, SERVED_BY)
    assert "video_url" in lines[3]["error"] and lines[3]["model_call_ms"] is None


# --- refusals ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("part_type", ["image_url", "input_audio", "input_video"])
def test_any_other_content_part_is_refused_by_name(server, video, part_type):
    extra_part = {"type": part_type, part_type: {"url": "data:image/png;base64,AAAA"}}
    body = chat_body(video)
    body["messages"][0]["content"].append(extra_part)
    assert_refused(post(server, body), 400, repr(part_type))


def test_two_videos_are_refused(server, video):
    part = {"type": "video_url", "video_url": {"url": video}}
    assert_refused(
        post(server, with_content(chat_body(video), [{"type": "text", "text": PROMPT}, part, part])),
        400,
        "2 video_url parts",
    )


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("data:video/mp4;base64,@@@not-base64@@@", ("not valid base64",)),
        ("data:video/mp4,plain", ("not base64",)),
        (data_url(b"\x89PNG\r\n\x1a\n", "image/png"), ("image/png",)),
    ],
)
def test_a_malformed_data_url_is_refused(server, url, words):
    assert_refused(post(server, chat_body(url)), 400, "data URL", *words)


@pytest.mark.parametrize("url", ["https://example.com/clip.mp4", "http://10.0.0.1/clip.mp4"])
def test_a_video_url_off_this_machine_is_refused_unfetched(server, url):
    assert_refused(post(server, chat_body(url)), 400, "not loopback")


def test_a_scheme_that_is_neither_data_nor_http_is_refused(server):
    assert_refused(post(server, chat_body("file:///etc/passwd")), 400, "not a data URL")


def test_bytes_that_are_not_a_video_are_refused(server):
    assert_refused(post(server, chat_body(data_url(b"not a video at all" * 20, "video/mp4"))), 400, "cannot be decoded")


def test_requests_trtmc_server_would_not_take_are_refused(server, video):
    assert_refused(post(server, b"{not json"), 400, "not valid JSON")
    assert_refused(post(server, chat_body(video, stream=True)), 400, "stream")
    assert_refused(post(server, chat_body(video) | {"model": "someone-else"}), 404, "someone-else")


def test_an_optional_system_message_is_accepted(server, video):
    body = chat_body(video)
    body["messages"].insert(0, {"role": "system", "content": "Answer briefly."})
    response = post(server, body)
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "A"


def test_oversized_bodies_get_413_by_declared_and_by_read_size(video):
    assert DEFAULT_MAX_BODY_BYTES == 1 << 20  # trtmc-server's --max-body-bytes default
    with ReferenceServer(ReferenceConfig(max_body_bytes=64 * 1024)) as small:
        over = json.dumps(chat_body(video, padding="x" * 64 * 1024)).encode()
        assert_refused(post(small, over), 413, "65,536-byte limit")

        def chunked():  # no Content-Length: the limit applies to what is actually read
            for start in range(0, len(over), 8192):
                yield over[start : start + 8192]

        assert_refused(HTTP.post(small.url + CHAT, content=chunked(), timeout=30), 413, "more than 65,536")
        assert post(small, chat_body(video)).status_code == 200  # a body under the limit still works
    with ReferenceServer(ReferenceConfig()) as default:
        just_over = json.dumps(chat_body(video)).encode()
        just_over += b" " * (DEFAULT_MAX_BODY_BYTES + 1 - len(just_over))
        assert_refused(post(default, just_over), 413, "1,048,577 bytes")
        assert post(default, just_over[:-1]).status_code == 200


# --- faults ------------------------------------------------------------------------------------------------------


def test_error_rate_fails_the_documented_positions(video):
    assert error_positions(0.5, 6) == [2, 4, 6]
    assert error_positions(0.25, 8) == [4, 8]
    assert error_positions(0.1, 20) == [10, 20]
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(error_rate=0.5))) as flaky:
        statuses = [post(flaky, chat_body(video)).status_code for _ in range(6)]
        seventh, eighth = post(flaky, chat_body(video)), post(flaky, chat_body(video))
    assert statuses == [200, 500, 200, 500, 200, 500]
    assert (seventh.status_code, eighth.status_code) == (200, 500)
    assert_refused(eighth, 500, "injected fault", "#8")


# --- configuration -----------------------------------------------------------------------------------------------


def test_binding_refuses_a_non_loopback_host_by_default():
    for host in ("0.0.0.0", "192.0.2.10", "::"):
        with pytest.raises(ValidationError, match="not a loopback address"):
            ReferenceConfig(host=host)
    assert ReferenceConfig(host="192.0.2.10", allow_non_loopback=True).host == "192.0.2.10"
    assert ReferenceConfig(host="localhost").host == "localhost"
    # A config that skipped validation is still refused where the socket is bound.
    with pytest.raises(NonLoopbackHostError):
        ReferenceServer(ReferenceConfig.model_construct(host="0.0.0.0", allow_non_loopback=False)).start()


def test_ipv6_loopback_serves(video):
    with ReferenceServer(ReferenceConfig(host="::1")) as six:
        assert six.url.startswith("http://[::1]:")
        assert HTTP.get(six.url + "/health/live").status_code == 200


def test_config_refuses_a_model_name_that_hides_the_test_double_and_a_bad_policy():
    with pytest.raises(ValidationError, match="must contain 'reference'"):
        ReferenceConfig(model_name="Qwen/Qwen2.5-VL-3B-Instruct")
    with pytest.raises(ValidationError, match="sampling"):
        ReferenceConfig(sampling_policy="every-other-frame")


def test_flags_carry_a_config_to_a_subprocess_unchanged(tmp_path):
    config = ReferenceConfig(
        port=8123,
        model_name="my-reference",
        sampling_policy="uniform:8,floor",
        max_body_bytes=5000,
        records_path=tmp_path / "r.jsonl",
        url_file=tmp_path / "url",
        faults=FaultKnobs(
            added_task_ms=12.5,
            error_rate=0.1,
            crash_after=3,
            ready_after_s=2.0,
            ready_when_file=tmp_path / "ready",
            identity_drift_rate=0.25,
            answer_text="-- I cannot tell from this clip.",  # a text that looks like a flag survives too
            omit_task_time_rate=0.5,
            refuse_data_urls=True,
        ),
    )
    assert config_from_arguments(vars(build_parser().parse_args(argv_from_config(config)))) == config
    assert (
        config_from_arguments(vars(build_parser().parse_args(argv_from_config(ReferenceConfig())))) == ReferenceConfig()
    )
    argv = argv_for_subprocess(config)
    assert argv[:3] == [sys.executable, "-m", "trtmc_videoqa.reference"]
    assert all(isinstance(arg, str) for arg in argv)


def test_usage_counts_whitespace_tokens(server, video):
    usage = post(server, chat_body(video)).json()["usage"]
    assert usage["completion_tokens"] == 1
    assert usage["prompt_tokens"] == len(PROMPT.split())
    assert usage["total_tokens"] == usage["prompt_tokens"] + 1


def test_a_chat_with_no_video_is_answered_without_a_task(server, video):
    """A video chat server answers plain text too: the capability check's text-only request tells a server that
    refuses video from one set up wrong by it. No task runs, so no task time is reported."""
    from trtmc_videoqa.reference.app import TEXT_ONLY_ANSWER

    for content in ("just text", [{"type": "text", "text": "just text"}]):
        response = post(server, with_content(chat_body(video), content))  # type: ignore[arg-type]
        body = response.json()
        assert response.status_code == 200 and body["model"] == MODEL, body
        assert body["choices"][0]["message"]["content"] == TEXT_ONLY_ANSWER and "trtmc_timing" not in body
    assert_refused(post(server, with_content(chat_body(video), "x") | {"model": "someone-else"}), 404, "someone-else")  # type: ignore[arg-type]
