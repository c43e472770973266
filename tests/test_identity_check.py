"""Native/HTTP identity: both clients against real HTTP servers, and the comparison's rules."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from trtmc_videoqa.aiperf.dataset import Prompt
from trtmc_videoqa.climb.prompts import workload_prompts
from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, FaultKnobs, ReferenceConfig, ReferenceServer
from trtmc_videoqa.results import Evidence, IdentityAnswer, IdentityCheck, NativeRequest
from trtmc_videoqa.stages.identity.compare import (
    ENDPOINT_NATIVE_REQUEST,
    chat_answers,
    clip_request_problem,
    compare,
    native_answers,
    native_body,
    normalised,
)
from trtmc_videoqa.stages.identity.verdict import blocked, identity_stage, not_applicable, write_identity
from trtmc_videoqa.workloads import load_workload

MAX_TOKENS = 16
BODY_LIMIT = 8 * 1024 * 1024
ROUTE = "POST /v1/tasks/generate"


@pytest.fixture(scope="module")
def prompts() -> list[Prompt]:
    return workload_prompts(load_workload("synthetic"))


@pytest.fixture(scope="module")
def drifting() -> Iterator[ReferenceServer]:
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(identity_drift_rate=1.0))) as running:
        yield running


class _Recorder(BaseHTTPRequestHandler):
    """Answers every POST with the server's canned (status, body), and keeps what it was sent."""

    status = 404
    reply: dict[str, Any] = {"detail": "Not Found"}
    received: list[tuple[str, dict[str, str], dict[str, Any]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        type(self).received.append((self.path, dict(self.headers), body))
        data = json.dumps(type(self).reply).encode()
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def plain_server(status: int, reply: dict[str, Any]) -> tuple[ThreadingHTTPServer, type[_Recorder]]:
    handler = type("Handler", (_Recorder,), {"status": status, "reply": reply, "received": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, handler


@pytest.fixture
def not_found() -> Iterator[tuple[str, type[_Recorder]]]:
    """A real HTTP server without the native route: 404 for every POST."""
    httpd, handler = plain_server(404, {"detail": "Not Found"})
    yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    httpd.shutdown()
    httpd.server_close()


def unreachable_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed again: nothing listens there


def answer(text: str | None, *, error: str | None = None, route: str = ROUTE) -> IdentityAnswer:
    return IdentityAnswer(route=route, request_id="r", answer=text, error=error, http_status=None if error else 200)


# --- against the reference endpoint ---------------------------------------------------------------------------


def test_identity_holds_on_the_reference_endpoint(server: ReferenceServer, prompts: list[Prompt]) -> None:
    chat = chat_answers(
        server.url,
        DEFAULT_MODEL_NAME,
        prompts,
        max_tokens=MAX_TOKENS,
        timeout_s=30,
        body_limit=BODY_LIMIT,
        api_key=None,
    )
    native = native_answers(server.url, ENDPOINT_NATIVE_REQUEST, prompts, max_tokens=MAX_TOKENS, timeout_s=30)
    assert all(item.error is None and item.http_status == 200 for item in chat + native), chat + native
    assert [item.route for item in native] == [ROUTE] * len(prompts)
    assert all(item.request_id.startswith("identity-native-synthetic-") for item in native)
    assert all(item.request_id.startswith("identity-chat-synthetic-") for item in chat)
    check = compare(prompts, chat, native, native_route=ROUTE, request=ENDPOINT_NATIVE_REQUEST)
    assert check.verdict == "held", check.reason
    assert [pair.verdict for pair in check.pairs] == ["same"] * len(prompts)
    assert check.request_fields == ["max_new_tokens", "prompt", "temperature", "video_path"]
    assert "perf_serving" in (check.request_source or "")
    assert identity_stage(check).status == "passed"


def test_drift_gives_differs_with_both_answers(drifting: ReferenceServer, prompts: list[Prompt]) -> None:
    chat = chat_answers(
        drifting.url,
        DEFAULT_MODEL_NAME,
        prompts,
        max_tokens=MAX_TOKENS,
        timeout_s=30,
        body_limit=BODY_LIMIT,
        api_key=None,
    )
    native = native_answers(drifting.url, ENDPOINT_NATIVE_REQUEST, prompts, max_tokens=MAX_TOKENS, timeout_s=30)
    check = compare(prompts, chat, native, native_route=ROUTE, request=ENDPOINT_NATIVE_REQUEST)
    assert check.verdict == "differs"
    assert f"{len(prompts)} of {len(prompts)}" in check.reason
    stage = identity_stage(check)
    assert stage.status == "failed"
    first = check.pairs[0]
    assert first.chat.answer and first.native.answer
    assert repr(first.chat.answer) in stage.detail and repr(first.native.answer) in stage.detail


def test_a_server_without_the_route_fails_with_its_status(
    not_found: tuple[str, type[_Recorder]], prompts: list[Prompt]
) -> None:
    url, _ = not_found
    native = native_answers(url, ENDPOINT_NATIVE_REQUEST, prompts[:2], max_tokens=MAX_TOKENS, timeout_s=10)
    assert [item.http_status for item in native] == [404, 404]
    assert all(item.answer is None and item.error and "HTTP 404" in item.error for item in native)
    chat = [answer("A", route="POST /v1/chat/completions")] * 2
    check = compare(prompts[:2], chat, native, native_route=ROUTE, request=ENDPOINT_NATIVE_REQUEST)
    assert check.verdict == "failed"
    assert "HTTP 404" in check.reason and "2 of 2" in check.reason
    assert identity_stage(check).status == "failed"


def test_chat_to_an_unreachable_port_is_an_error_answer(prompts: list[Prompt]) -> None:
    chat = chat_answers(
        unreachable_url(),
        DEFAULT_MODEL_NAME,
        prompts[:1],
        max_tokens=MAX_TOKENS,
        timeout_s=5,
        body_limit=BODY_LIMIT,
        api_key="sekrit-key-123",
    )
    assert len(chat) == 1
    assert chat[0].answer is None and chat[0].http_status is None
    assert chat[0].error and "no answer" in chat[0].error
    assert "sekrit-key-123" not in chat[0].model_dump_json()


def test_chat_sends_greedy_video_content_with_request_id_and_never_returns_the_key(prompts: list[Prompt]) -> None:
    httpd, handler = plain_server(200, {"choices": [{"message": {"content": "said sekrit-key-123"}}]})
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        chat = chat_answers(
            url,
            "m",
            prompts[:1],
            max_tokens=7,
            timeout_s=10,
            body_limit=BODY_LIMIT,
            api_key="sekrit-key-123",
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    path, headers, body = handler.received[0]
    assert path == "/v1/chat/completions"
    assert body["temperature"] == 0 and body["max_tokens"] == 7 and body["model"] == "m"
    parts = body["messages"][0]["content"]
    assert [part["type"] for part in parts] == ["text", "video_url"]
    assert parts[1]["video_url"]["url"].startswith("data:video/mp4;base64,")
    request_id = headers["X-Request-ID"]
    assert request_id == chat[0].request_id
    assert request_id.startswith("identity-chat-synthetic-direction-forward-")
    assert headers["Authorization"] == "Bearer sekrit-key-123"
    assert chat[0].answer == "said sekrit-key-123"  # the server's own answer text is what it is
    assert "sekrit" not in chat[0].model_copy(update={"answer": None}).model_dump_json()


def test_a_chat_answer_of_another_shape_is_a_named_malformed_answer(prompts: list[Prompt]) -> None:
    httpd, _ = plain_server(200, {"not": "a completion"})
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        chat = chat_answers(url, "m", prompts[:1], max_tokens=7, timeout_s=10, body_limit=BODY_LIMIT, api_key=None)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert chat[0].http_status == 200 and chat[0].answer is None
    assert "malformed answer (`choices` is missing)" in (chat[0].error or "")


def test_native_sends_only_the_fields_the_task_defines(prompts: list[Prompt]) -> None:
    httpd, handler = plain_server(200, {"text": "A"})
    request = NativeRequest(
        operation="answer_clip",
        fields=["clip_path", "question", "seed", "top_k", "use_chat_template"],
        clip_field="clip_path",
        prompt_field="question",
    )
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        native = native_answers(url, request, prompts[:1], max_tokens=9, timeout_s=10)
    finally:
        httpd.shutdown()
        httpd.server_close()
    path, headers, body = handler.received[0]
    assert path == "/v1/tasks/answer_clip"
    assert native[0].route == "POST /v1/tasks/answer_clip" and native[0].answer == "A"
    assert headers["X-Request-ID"].startswith("identity-native-synthetic-direction-forward-")
    sent = body["request"]
    assert sorted(sent) == ["clip_path", "question", "top_k"]
    assert sent["top_k"] == 1 and sent["question"] == prompts[0].text
    clip = Path(prompts[0].clip_path)
    assert sent["clip_path"] == {"$file": {"suffix": ".mp4", "b64": base64.b64encode(clip.read_bytes()).decode()}}


# --- pure rules ------------------------------------------------------------------------------------------------


def test_native_body_of_the_endpoint_shape(prompts: list[Prompt]) -> None:
    body = native_body(ENDPOINT_NATIVE_REQUEST, prompts[0], max_tokens=16)["request"]
    assert sorted(body) == ["max_new_tokens", "prompt", "temperature", "video_path"]
    assert body["max_new_tokens"] == 16 and body["temperature"] == 0
    assert body["video_path"]["$file"]["suffix"] == ".mp4"


def test_normalisation() -> None:
    assert normalised("  The Answer\n is\tB  ") == "the answer is b"
    assert normalised("Straße") == normalised("STRASSE")


def test_compare_rules(prompts: list[Prompt]) -> None:
    two = prompts[:2]
    chat = [answer("B", route="POST /v1/chat/completions"), answer("A.  Left", route="POST /v1/chat/completions")]
    same = compare(two, chat, [answer(" b "), answer("a. left")], native_route=ROUTE, request=ENDPOINT_NATIVE_REQUEST)
    assert same.verdict == "held" and [p.verdict for p in same.pairs] == ["same", "same"]
    assert same.normalisation == "whitespace collapsed, case folded"
    differs = compare(two, chat, [answer("B"), answer("C")], native_route=ROUTE, request=ENDPOINT_NATIVE_REQUEST)
    assert differs.verdict == "differs" and "1 of 2" in differs.reason
    broken = [answer("C"), answer(None, error="HTTP 500: boom")]
    failed = compare(two, chat, broken, native_route=ROUTE, request=ENDPOINT_NATIVE_REQUEST)
    assert failed.verdict == "failed" and "HTTP 500: boom" in failed.reason
    assert [p.verdict for p in failed.pairs] == ["different", "error"]
    short = compare(two, chat, [answer("B")], native_route=ROUTE, request=ENDPOINT_NATIVE_REQUEST)
    assert short.verdict == "failed" and short.pairs[1].verdict == "error"


def test_request_source_and_fields_from_task_evidence(prompts: list[Prompt]) -> None:
    request = NativeRequest(
        operation="generate",
        fields=["max_new_tokens", "prompt", "repetition_penalty", "video_path"],
        clip_field="video_path",
        prompt_field="prompt",
        evidence=Evidence(file="apps/benchmark/trtmc_benchmark/task_adapters.py", line=42, excerpt="if ..."),
    )
    check = compare(prompts[:1], [answer("x")], [answer("X")], native_route=ROUTE, request=request)
    assert check.request_source == "apps/benchmark/trtmc_benchmark/task_adapters.py:42"
    assert check.request_fields == ["max_new_tokens", "prompt", "video_path"]


def test_stages_of_each_verdict(tmp_path: Path) -> None:
    long_chat, long_native = "x" * 300, "y" * 300
    pairs = compare(
        [Prompt(question_id="q", clip_id="c", clip_path="/nowhere.mp4", text="?")],
        [answer(long_chat)],
        [answer(long_native)],
        native_route=ROUTE,
        request=ENDPOINT_NATIVE_REQUEST,
    )
    stage = identity_stage(pairs)
    assert stage.name == "identity" and stage.status == "failed" and stage.evidence == ["identity.json"]
    assert "x" * 117 + "..." in stage.detail and "y" * 117 + "..." in stage.detail and "x" * 130 not in stage.detail
    skipped = identity_stage(not_applicable("no native route named"))
    assert skipped.status == "skipped" and skipped.detail == "not-applicable: no native route named"
    assert not_applicable("r").pairs == [] and blocked("r").verdict == "blocked"
    blocked_stage = identity_stage(IdentityCheck(verdict="blocked", reason="perf_serving is absent"))
    assert blocked_stage.status == "blocked" and blocked_stage.detail == "perf_serving is absent"
    path = write_identity(tmp_path / "row", pairs)
    assert path == tmp_path / "row" / "identity.json"
    assert IdentityCheck.model_validate_json(path.read_text()) == pairs
    assert not list((tmp_path / "row").glob(".*tmp"))


def test_clip_request_problem(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.catalog import TASK_ADAPTERS
    from trtmc_videoqa.inventory.task_requests import native_request_for

    adapter = tmp_path / TASK_ADAPTERS
    adapter.parent.mkdir(parents=True)
    adapter.write_text(
        "def _words(case):\n"
        "    return {'prompt': case['p'], 'max_new_tokens': 8}\n\n\n"
        "def _request(task, case, root):\n"
        "    if task == 'vision_language_generation':\n"
        "        return {'image_path': case['i'], **_words(case)}\n"
        "    if task == 'clip_qa':\n"
        "        return {'video_path': case['v'], **_words(case)}\n"
    )
    image = native_request_for(tmp_path, "vision_language_generation", "generate")
    assert clip_request_problem(image) == (
        "the Task vision_language_generation defines no clip-plus-question native request "
        "(fields: image_path, max_new_tokens, prompt; apps/benchmark/trtmc_benchmark/task_adapters.py:6)"
    )
    assert clip_request_problem(native_request_for(tmp_path, "clip_qa", "generate")) is None
    assert clip_request_problem(ENDPOINT_NATIVE_REQUEST) is None
    assert "no native request" in (clip_request_problem(None) or "")


def test_native_task_times_come_from_perf_serving_records_by_request_id(tmp_path: Path) -> None:
    """perf_serving's --records shape (times nested under `timing`), one line of another request and one torn line:
    each native answer gets its own record's model_call_ms, a request without a record none, and the check says
    how many were found and from which field."""
    from trtmc_videoqa.results import IdentityPair
    from trtmc_videoqa.stages.identity.trtmc_native import with_native_records

    def pair(rid: str) -> IdentityPair:
        chat = IdentityAnswer(route="POST /v1/chat/completions", request_id=f"chat-{rid}", answer="A")
        native = IdentityAnswer(route="POST /v1/tasks/generate", request_id=rid, answer="A")
        return IdentityPair(question_id="q", clip_id=rid, chat=chat, native=native, verdict="same")

    records = tmp_path / "native-records.jsonl"
    lines = [
        {
            "request_id": "n-1",
            "route": "/v1/tasks/generate",
            "operation": "generate",
            "backend": "trtmc",
            "time": 1.0,
            "timing": {"queue_ms": 0.1, "model_call_ms": 41.5, "handler_ms": 43.0},
            "observation": {},
        },
        {"request_id": "other", "timing": {"model_call_ms": 9.0}},
    ]
    records.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"request_id": "n-2", "tim')
    check = IdentityCheck(verdict="held", reason="x", pairs=[pair("n-1"), pair("n-2")])
    joined = with_native_records(check, records)
    assert [p.native.server_task_ms for p in joined.pairs] == [41.5, None]
    assert joined.native_records.endswith("1 of 2 native task times found from `records.timing.model_call_ms`")
    assert joined.pairs[0].chat.server_task_ms is None  # the chat side's times are the row's, not perf_serving's
