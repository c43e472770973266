"""The reference endpoint's stream setting and its capacity, over loopback with a real HTTP client: stream=true is
refused by default (as trtmc-server's text schema refuses it) and, with the setting on, answered in OpenAI's
server-sent events with the task time in the last chunk; the capacity is how many tasks run at once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest
from helpers import HTTP

from trtmc_videoqa.answers.shapes import read_chat_stream
from trtmc_videoqa.media import chat_request_body, video_data_url
from trtmc_videoqa.reference import (
    FaultKnobs,
    ReferenceConfig,
    ReferenceServer,
    argv_from_config,
    config_from_arguments,
)
from trtmc_videoqa.reference.cli_args import build_parser
from trtmc_videoqa.workloads import builtin_workload
from trtmc_videoqa.workloads.synthetic import make_clip

MODEL = "trtmc-videoqa-reference"
PROMPT = builtin_workload("synthetic").prompt("synthetic-direction").text
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> str:
    return video_data_url(make_clip(tmp_path_factory.mktemp("reference-stream") / "forward.mp4"))


def streamed_body(video: str) -> dict:
    return chat_request_body(MODEL, PROMPT, video, max_tokens=16, extra={"stream": True})


def test_stream_true_is_refused_by_default(server: ReferenceServer, video: str) -> None:
    response = HTTP.post(server.url + CHAT, json=streamed_body(video), timeout=30)
    assert response.status_code == 400, response.text
    assert "stream=true is not supported" in response.json()["error"]["message"]


def test_streamed_answer_is_server_sent_events_with_the_timing_in_the_last_chunk(tmp_path: Path, video: str) -> None:
    records = tmp_path / "records.jsonl"
    with ReferenceServer(ReferenceConfig(stream=True, records_path=records)) as streaming:
        whole = HTTP.post(streaming.url + CHAT, json=chat_request_body(MODEL, PROMPT, video, max_tokens=16), timeout=30)
        with HTTP.stream("POST", streaming.url + CHAT, json=streamed_body(video), timeout=30) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = [line for line in response.iter_lines() if line]
    assert all(line.startswith("data: ") for line in events), events
    payloads = [line.removeprefix("data: ") for line in events]
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert len(chunks) >= 4  # role, at least one word, finish reason, usage
    assert chunks[-1]["choices"] == [] and "trtmc_timing" in chunks[-1]
    assert all("trtmc_timing" not in chunk for chunk in chunks[:-1])
    answer = read_chat_stream(payloads)
    assert answer.malformed is None
    # The streamed text is the answer the endpoint gives unstreamed, word for word.
    assert answer.text == whole.json()["choices"][0]["message"]["content"]
    assert answer.finish_reason == whole.json()["choices"][0]["finish_reason"]
    assert answer.completion_tokens == len(answer.text.split())
    timing = answer.fields["trtmc_timing"]
    assert timing["model_call_ms"] > 0 and timing["handler_ms"] >= timing["model_call_ms"]
    # The record of the streamed request names the same answer.
    last = json.loads(records.read_text().splitlines()[-1])
    assert last["answer"] == answer.text and last["model_call_ms"] is not None


def test_a_streamed_refusal_is_a_plain_json_error(tmp_path: Path, video: str) -> None:
    with ReferenceServer(ReferenceConfig(stream=True, faults=FaultKnobs(error_rate=1.0))) as failing:
        response = HTTP.post(failing.url + CHAT, json=streamed_body(video), timeout=30)
    assert response.status_code == 500 and "injected fault" in response.json()["error"]["message"]


def test_capacity_and_stream_survive_the_trip_through_flags() -> None:
    config = ReferenceConfig(capacity=6, stream=True)
    back = config_from_arguments(vars(build_parser().parse_args(argv_from_config(config))))
    assert (back.capacity, back.stream) == (6, True)
    default = config_from_arguments(vars(build_parser().parse_args(argv_from_config(ReferenceConfig()))))
    assert (default.capacity, default.stream) == (1, False)


@pytest.mark.parametrize("capacity", [0, 65])
def test_capacity_is_bounded(capacity: int) -> None:
    with pytest.raises(ValueError, match=r"capacity\n  Input should be (greater|less) than or equal to (1|64)"):
        ReferenceConfig(capacity=capacity)


def _queue_times(url: str, video: str, count: int) -> list[float]:
    """The queue_ms the endpoint reports for `count` requests sent at once."""
    waits: list[float] = []

    def send() -> None:
        body = chat_request_body(MODEL, PROMPT, video, max_tokens=16)
        with httpx.Client(trust_env=False) as client:
            waits.append(client.post(url + CHAT, json=body, timeout=60).json()["trtmc_timing"]["queue_ms"])

    threads = [threading.Thread(target=send) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return sorted(waits)


def test_capacity_lets_that_many_tasks_run_at_once(video: str) -> None:
    """With a 300 ms task, three requests at once on one lane queue behind each other (the last waits two tasks);
    with three lanes none waits a whole task."""
    knobs = FaultKnobs(added_task_ms=300)
    with ReferenceServer(ReferenceConfig(faults=knobs)) as one_lane:
        single = _queue_times(one_lane.url, video, 3)
    with ReferenceServer(ReferenceConfig(capacity=3, faults=knobs)) as three_lanes:
        wide = _queue_times(three_lanes.url, video, 3)
    assert single[-1] >= 300, single
    assert wide[-1] < 300, wide
