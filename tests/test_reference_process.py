"""The reference endpoint as a separate process: slow readiness, the error knob's status carried by its flags, the
crash knob that kills it mid-run, and the trtmc-server test double's knobs that reach it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from doubles.toolchain import install_doubles
from helpers import HTTP
from pydantic import ValidationError

from trtmc_videoqa.media import chat_request_body, video_data_url
from trtmc_videoqa.reference import (
    CHAT_ROUTE,
    CRASH_EXIT_CODE,
    TEST_DOUBLE_LABEL,
    FaultKnobs,
    ReferenceConfig,
    argv_for_subprocess,
    argv_from_config,
    config_from_arguments,
)
from trtmc_videoqa.reference.cli_args import build_parser
from trtmc_videoqa.serving.process import ServerProcess, free_loopback_port
from trtmc_videoqa.workloads import builtin_workload
from trtmc_videoqa.workloads.synthetic import make_clip

START_TIMEOUT_S = 30


@contextmanager
def reference_process(tmp_path: Path, faults: FaultKnobs) -> Iterator[tuple[subprocess.Popen, str]]:
    """Start ``python -m trtmc_videoqa.reference`` and wait for the URL it writes once its port is bound."""
    url_file = tmp_path / "url"
    config = ReferenceConfig(url_file=url_file, records_path=tmp_path / "records.jsonl", faults=faults)
    with (tmp_path / "stderr.log").open("wb") as stderr:
        process = subprocess.Popen(argv_for_subprocess(config), stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not url_file.exists():
            assert process.poll() is None, (tmp_path / "stderr.log").read_text()
            assert time.monotonic() < deadline, "the reference process did not bind a port in time"
            time.sleep(0.02)
        yield process, url_file.read_text().strip()
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


def test_the_process_that_starts_one_loads_no_web_stack_and_no_clip_decoding() -> None:
    """The self-test and the tests build the server's argv: FastAPI, uvicorn and PyAV load in the server alone."""
    code = (
        "import sys\nfrom trtmc_videoqa.reference import ReferenceConfig, argv_for_subprocess\n"
        "argv = argv_for_subprocess(ReferenceConfig())\n"
        "assert argv[1:3] == ['-m', 'trtmc_videoqa.reference'], argv\n"
        "print(sorted({'fastapi', 'uvicorn', 'starlette', 'av', 'numpy'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.fixture(scope="module")
def chat_body(tmp_path_factory: pytest.TempPathFactory) -> dict:
    url = video_data_url(make_clip(tmp_path_factory.mktemp("reference-process") / "forward.mp4"))
    prompt = builtin_workload("synthetic").prompt("synthetic-direction").text
    return chat_request_body("trtmc-videoqa-reference", prompt, url, max_tokens=16)


def test_subprocess_is_live_at_once_and_ready_only_when_told(tmp_path):
    # Ready only once the test says so (the file appears): no clock to race, however busy the machine; the wait for
    # ready is bounded far above what it takes (it only ends a server that never gets ready).
    trigger = tmp_path / "ready"
    with reference_process(tmp_path, FaultKnobs(ready_when_file=trigger)) as (process, url):
        assert HTTP.get(url + "/health/live").status_code == 200
        before = [HTTP.get(url + "/health/ready").status_code for _ in range(3)]
        trigger.touch()
        started = time.monotonic()
        statuses = []
        while time.monotonic() - started < 60:
            status = HTTP.get(url + "/health/ready").status_code
            statuses.append(status)
            if status == 200:
                break
            time.sleep(0.05)
        assert before == [503, 503, 503] and statuses[-1] == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(10) == 128 + signal.SIGINT  # a graceful stop, not a traceback
    listening = (tmp_path / "stderr.log").read_text().strip().splitlines()
    assert listening == [f"{TEST_DOUBLE_LABEL} listening on {url}"]


def test_crash_after_n_exits_hard_and_keeps_the_earlier_records(tmp_path, chat_body):
    with reference_process(tmp_path, FaultKnobs(crash_after=2)) as (process, url):
        for request_id in ("first", "second"):
            response = HTTP.post(
                url + "/v1/chat/completions", json=chat_body, headers={"X-Request-ID": request_id}, timeout=30
            )
            assert response.status_code == 200
        # The third request dies with the process, unanswered: a closed or reset connection, as AIPerf would see it.
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            HTTP.post(url + "/v1/chat/completions", json=chat_body, headers={"X-Request-ID": "third"}, timeout=30)
        assert process.wait(10) == CRASH_EXIT_CODE
        with pytest.raises(httpx.ConnectError):
            HTTP.get(url + "/health/live", timeout=5)
    lines = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert [(line["request_id"], line["status"]) for line in lines] == [("first", 200), ("second", 200)]


def test_error_status_reaches_the_subprocess_and_answers_the_injected_errors(tmp_path, chat_body):
    faults = FaultKnobs(error_rate=0.5, error_status=400)
    assert (
        config_from_arguments(vars(build_parser().parse_args(argv_from_config(ReferenceConfig(faults=faults))))).faults
        == faults
    )
    with reference_process(tmp_path, faults) as (process, url):
        responses = [
            HTTP.post(url + "/v1/chat/completions", json=chat_body, headers={"X-Request-ID": f"r{n}"}, timeout=30)
            for n in (1, 2)
        ]
    assert [r.status_code for r in responses] == [200, 400]
    error = responses[1].json()["error"]
    assert "injected fault" in error["message"] and "#2" in error["message"]
    assert error["type"] == "invalid_request_error"
    lines = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert [(line["request_id"], line["status"]) for line in lines] == [("r1", 200), ("r2", 400)]


@pytest.mark.parametrize("status", [200, 399, 600])
def test_error_status_outside_4xx_and_5xx_is_refused(status):
    with pytest.raises(ValidationError, match="error_status"):
        FaultKnobs(error_status=status)
    with pytest.raises(ValidationError, match="error_status"):
        config_from_arguments(vars(build_parser().parse_args(["--error-status", str(status)])))


def test_the_trtmc_server_double_passes_its_task_time_and_answer_knobs_through(tmp_path, chat_body):
    env = install_doubles(tmp_path / "bin") | {
        "TRTMC_SERVER_DOUBLE_OMIT_TASK_TIME_RATE": "1",
        "TRTMC_SERVER_DOUBLE_ANSWER_TEXT": "I cannot tell from this clip.",
    }
    bundle = tmp_path / "m.bundle"
    bundle.write_bytes(json.dumps({"test_double": True}).encode() + b"\n")
    port = free_loopback_port()
    records = tmp_path / "records.jsonl"
    argv = [str(tmp_path / "bin" / "trtmc-server"), str(bundle), "--model-name", "vidqa-2b", "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    argv += ["--records", str(records)]
    with ServerProcess(argv, url=url, log_path=tmp_path / "server.log", startup_timeout_s=60, env=env):
        body = HTTP.post(url + "/v1/chat/completions", json=chat_body, timeout=30).json()
    assert body["choices"][0]["message"]["content"] == "I cannot tell from this clip."
    assert "trtmc_timing" not in body
    (line,) = [json.loads(line) for line in records.read_text().splitlines()]
    assert (line["answer"], line["model_call_ms"], line["route"]) == ("I cannot tell from this clip.", None, CHAT_ROUTE)
