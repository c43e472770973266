"""The AIPerf room without running AIPerf: the request plan, the argv, the exports reader, scrubbing, the runner."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import eventually

from trtmc_videoqa.aiperf.command import (
    API_KEY_PLACEHOLDER,
    AiperfSettings,
    key_config_yaml,
    key_environment,
    profile_argv,
)
from trtmc_videoqa.aiperf.dataset import Prompt, input_file_lines, plan_requests
from trtmc_videoqa.aiperf.exports import read_client_records
from trtmc_videoqa.aiperf.locate import AiperfProblem, locate_aiperf
from trtmc_videoqa.aiperf.scrub import scrub_exports
from trtmc_videoqa.climb.stats import latency_stats, min_samples, requests_per_second
from trtmc_videoqa.common.processes import run_in_group
from trtmc_videoqa.common.shell_quoting import reproducible_command

PROMPTS = [
    Prompt(question_id=q, clip_id=c, clip_path=f"/clips/{c}.mp4", text=f"{q}?")
    for q in ("q1", "q2")
    for c in ("forward", "reversed")
]


def test_plan_puts_warmup_first_and_covers_every_row_once() -> None:
    plan = plan_requests(PROMPTS, repeats=3, warmup=2, max_tokens=16)
    phases = [r.phase for r in plan.requests]
    assert phases == ["warmup"] * 2 + ["profiling"] * 12  # one shared sequential sampler: warmup rows first
    ids = [r.session_id for r in plan.requests]
    assert len(set(ids)) == len(ids)
    counted = {(r.question_id, r.clip_id): 0 for r in plan.profiling}
    for r in plan.profiling:
        counted[(r.question_id, r.clip_id)] += 1
    assert set(counted.values()) == {3}
    rows = [json.loads(line) for line in input_file_lines(plan)]
    assert rows[0]["session_id"] == ids[0] and rows[2]["video"] == "/clips/forward.mp4"
    assert rows[0]["extra"] == {"max_tokens": 16, "temperature": 0.0}


@pytest.mark.parametrize(("repeats", "warmup"), [(0, 1), (1, -1)])
def test_plan_refuses_nonsense(repeats: int, warmup: int) -> None:
    with pytest.raises(ValueError):
        plan_requests(PROMPTS, repeats=repeats, warmup=warmup, max_tokens=8)


def test_argv_sets_counts_timeout_and_hides_the_key_when_reproduced() -> None:
    settings = AiperfSettings(
        url="http://127.0.0.1:1",
        model="m",
        tokenizer="/tok",
        input_file="/in.jsonl",
        artifact_dir="/art",
        warmup_requests=2,
        profiling_requests=12,
        request_timeout_s=30,
        api_key="s3cret-token",
        config_file="/aiperf-config.yaml",
    )
    argv = profile_argv("/bin/aiperf", settings)
    assert argv[argv.index("--request-count") + 1] == "12"
    assert argv[argv.index("--warmup-request-count") + 1] == "2"
    assert argv[argv.index("--request-timeout-seconds") + 1] == "30"
    assert argv[argv.index("--custom-dataset-type") + 1] == "single_turn"
    # the key never goes on the command line (`ps` shows it): the config file names the variable that carries it
    assert "s3cret-token" not in " ".join(argv) and "--api-key" not in argv
    assert argv[argv.index("--config") + 1] == "/aiperf-config.yaml"
    assert key_environment(settings) == {"TRTMC_SERVE_TOKEN": "s3cret-token"}
    config = key_config_yaml("/in.jsonl")
    assert "api_key: ${TRTMC_SERVE_TOKEN}" in config and "s3cret" not in config and 'path: "/in.jsonl"' in config
    assert API_KEY_PLACEHOLDER == "$TRTMC_SERVE_TOKEN"
    # the placeholders publish writes for this machine's folders stay for the shell too; any other `$` is quoted
    assert reproducible_command(["aiperf", API_KEY_PLACEHOLDER, "$HOME", "$HOMEX"]) == (
        "aiperf $TRTMC_SERVE_TOKEN \"$HOME\" '$HOMEX'"
    )
    with pytest.raises(ValueError, match="config file"):
        profile_argv("/bin/aiperf", settings.model_copy(update={"config_file": None}))
    assert "--config" not in profile_argv("/bin/aiperf", settings.model_copy(update={"api_key": None}))


def _raw(session: str, request_id: str, phase: str, body: dict | None, error: dict | None = None) -> dict:
    record = {
        "metadata": {
            "conversation_id": session,
            "x_request_id": request_id,
            "benchmark_phase": phase,
            "session_num": 0,
            "request_start_ns": 1_000_000_000,
            "request_end_ns": 1_050_000_000,
        },
        "request_headers": {"Authorization": "Bearer s3cret-token", "X-Request-ID": request_id},
        "payload": {
            "messages": [{"content": [{"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAAAAAA"}}]}]
        },
        "status": 200 if error is None else None,
    }
    if body is not None:
        record["responses"] = [{"perf_ns": 1, "text": json.dumps(body)}]
    if error is not None:
        record["error"] = error
    return record


def test_exports_are_read_by_identity_and_scrubbed(tmp_path: Path) -> None:
    ok = {
        "choices": [{"message": {"content": "B"}, "finish_reason": "stop"}],
        "usage": {"completion_tokens": 1},
        "trtmc_timing": {"model_call_ms": 12.5},
    }
    raw = [
        _raw("warm-0", "r0", "warmup", ok),
        _raw("q1.forward.r00", "r1", "profiling", ok),
        _raw(
            "q1.reversed.r00",
            "r2",
            "profiling",
            None,
            {"code": 500, "type": "Internal Server Error", "message": "boom"},
        ),
    ]
    (tmp_path / "profile_export_raw.jsonl").write_text("".join(json.dumps(r) + "\n" for r in raw) + '{"cut off')
    (tmp_path / "profile_export.jsonl").write_text(
        json.dumps(
            {"metadata": {"x_request_id": "r1", "session_num": 0}, "metrics": {"request_latency": {"value": 50.0}}}
        )
        + "\n"
    )
    records = {r.session_id: r for r in read_client_records(tmp_path)}
    assert set(records) == {"warm-0", "q1.forward.r00", "q1.reversed.r00"}  # the truncated line is skipped
    assert records["warm-0"].phase == "warmup" and records["warm-0"].answer == "B"
    good = records["q1.forward.r00"]
    assert (good.latency_ms, good.answer, good.finish_reason, good.completion_tokens) == (50.0, "B", "stop", 1)
    assert good.response_fields["trtmc_timing"]["model_call_ms"] == 12.5
    bad = records["q1.reversed.r00"]
    assert not bad.ok and bad.http_status == 500 and "boom" in bad.error and bad.latency_ms is None
    scrub_exports(tmp_path, ["s3cret-token"])
    text = (tmp_path / "profile_export_raw.jsonl").read_text()
    assert "s3cret-token" not in text and "<redacted>" in text
    assert "base64,AAAA" not in text and "sha256=" in text


def test_a_secret_is_redacted_wherever_it_sits_in_a_line_of_any_bytes(tmp_path: Path) -> None:
    """Lines are passed on untouched unless they may hold what is redacted (a bytes test first): a secret with
    non-ASCII letters, one beside bytes that are not UTF-8, one in a pretty-printed JSON line, all still go."""
    secret = "cl\u00e9-s3cr\u00e8t"
    export = tmp_path / "aiperf.log"
    lines = [
        b"plain line, nothing to redact\n",
        b"\xff\xfe before " + secret.encode() + b" after\n",
        b'    "api_key": "' + secret.encode() + b'",\n',
        b"untouched \xff bytes\n",
    ]
    export.write_bytes(b"".join(lines))
    scrub_exports(tmp_path, [secret])
    scrubbed = export.read_bytes().splitlines(keepends=True)
    assert scrubbed[0] == lines[0] and scrubbed[3] == lines[3]  # byte for byte
    assert scrubbed[1] == b"\xff\xfe before <redacted> after\n"
    assert scrubbed[2] == b'    "api_key": "<redacted>",\n'


def test_a_file_with_nothing_to_redact_is_left_as_written_and_a_secret_across_a_read_edge_is_found(
    tmp_path: Path,
) -> None:
    """The scrub reads a file in 1 MiB pieces before it rewrites anything: one that holds nothing to redact is never
    rewritten (the same inode), and a secret that straddles two pieces is still seen and redacted."""
    from trtmc_videoqa.aiperf import exports

    plain = tmp_path / "profile_export_aiperf.json"
    plain.write_text('{\n  "request_count": 6,\n  "url": "http://127.0.0.1:8000"\n}\n')
    before = plain.stat()
    secret = "s3cret-across-the-edge"
    edge = tmp_path / "aiperf.log"
    head = b"x" * (exports.READ_PIECE - 5)  # the secret starts 5 bytes before the first piece ends
    edge.write_bytes(head + secret.encode() + b" tail\n")
    scrub_exports(tmp_path, [secret])
    after = plain.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert edge.read_bytes() == head + b"<redacted> tail\n"


def test_a_file_the_scrub_reads_line_by_line_is_replaced_only_when_a_line_changed(tmp_path: Path) -> None:
    """A file that holds request headers goes through the line-by-line pass: with nothing in them to redact it stays
    the same file (the same inode, no temporary left beside it); with a key in them it is replaced, readable by all."""
    plain = tmp_path / "profile_export_raw.jsonl"
    plain.write_text(json.dumps({"request_headers": {"Accept": "application/json"}}) + "\n")
    keyed = tmp_path / "profile_export.jsonl"
    keyed.write_text(json.dumps({"request_headers": {"Authorization": "Bearer s3cret"}}) + "\n")
    before = plain.stat()
    scrub_exports(tmp_path, ["s3cret"])
    after = plain.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert json.loads(keyed.read_text())["request_headers"]["Authorization"] == "<redacted>"
    assert keyed.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile_export.jsonl", "profile_export_raw.jsonl"]


def test_a_streamed_answer_is_read_from_its_chunks_with_aiperfs_stream_metrics(tmp_path: Path) -> None:
    """AIPerf 0.13.0 records a streamed answer as its SSE packets, and its TTFT, ITL and output token count (display
    units: ms, tokens) in the records export; a figure it did not give stays None."""
    chunks = [
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "The"}}]},
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": " answer is B"}}]},
        {"choices": [], "usage": {"completion_tokens": 4}, "trtmc_timing": {"model_call_ms": 9.5}},
    ]
    raw = _raw("q1.forward.r00", "r1", "profiling", None)
    raw["responses"] = [{"perf_ns": 1, "packets": [{"value": json.dumps(c)} for c in chunks] + [{"value": "[DONE]"}]}]
    raw_two = _raw("q1.reversed.r00", "r2", "profiling", {"choices": [{"message": {"content": "B"}}]})
    (tmp_path / "profile_export_raw.jsonl").write_text(json.dumps(raw) + "\n" + json.dumps(raw_two) + "\n")
    metrics = {
        "request_latency": {"value": 40.0, "unit": "ms"},
        "time_to_first_token": {"value": 12.5, "unit": "ms"},
        "inter_token_latency": {"value": 3.25, "unit": "ms"},
        "output_token_count": {"value": 4, "unit": "tokens"},
    }
    lines = [
        {"metadata": {"x_request_id": "r1"}, "metrics": metrics},
        {"metadata": {"x_request_id": "r2"}, "metrics": {"request_latency": {"value": 30.0}}},
    ]
    (tmp_path / "profile_export.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    records = {r.session_id: r for r in read_client_records(tmp_path)}
    streamed = records["q1.forward.r00"]
    assert streamed.answer == "The answer is B" and streamed.response_fields["trtmc_timing"]["model_call_ms"] == 9.5
    assert (streamed.latency_ms, streamed.ttft_ms, streamed.itl_ms, streamed.output_tokens) == (40.0, 12.5, 3.25, 4)
    whole = records["q1.reversed.r00"]
    assert (whole.latency_ms, whole.ttft_ms, whole.itl_ms, whole.output_tokens) == (30.0, None, None, None)


def test_latency_figures_need_enough_samples() -> None:
    assert (min_samples(0.5), min_samples(0.9), min_samples(0.99)) == (2, 10, 100)
    few = latency_stats([10.0, 20.0, 30.0])
    assert few.p50_ms == 20.0 and few.p90_ms is None and few.p99_ms is None and few.mean_ms == 20.0
    many = latency_stats([float(v) for v in range(1, 11)])
    assert many.p90_ms == pytest.approx(9.1) and many.p99_ms is None
    assert latency_stats([]).count == 0
    assert requests_per_second([(0, 500_000_000), (500_000_000, 1_000_000_000)]) == 2.0


def test_runner_ends_the_whole_group_past_its_wall_limit(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = (
        f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; "
        f"time.sleep(60)']); open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    outcome = run_in_group([sys.executable, "-c", script], wall_limit_s=1.5, log_path=tmp_path / "log")
    assert outcome.timed_out  # ended by the 1.5 s limit: a script left to its own 60 s ends untimed
    child = int(pid_file.read_text())

    def gone() -> bool:  # gone (or a zombie awaiting its reaper), never left running
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(child)], capture_output=True, text=True).stdout
        return state.strip()[:1] in ("", "Z")

    assert eventually(gone, within_s=30)  # a process just killed may take a moment to leave the table


def fake_aiperf(tmp_path: Path, metadata: dict) -> Path:
    """An `aiperf` script whose interpreter answers the metadata probe with `metadata`, as installed aiperf would."""
    (tmp_path / "metadata.json").write_text(json.dumps({"entry": "aiperf.cli:app"} | metadata))
    venv_python = tmp_path / "python"
    venv_python.write_text(f"#!/bin/sh\nexec cat {tmp_path / 'metadata.json'}\n")
    venv_python.chmod(0o755)
    fake = tmp_path / "aiperf"
    fake.write_text(f"#!{venv_python}\nfrom aiperf.cli import app\n")  # the entry point pip's script runs
    fake.chmod(0o755)
    return fake


def test_locate_refuses_a_wrong_version(tmp_path: Path) -> None:
    fake = fake_aiperf(tmp_path, {"version": "0.12.0", "direct_url": None})
    with pytest.raises(AiperfProblem, match="0.12.0.*needs the published 0.13.0"):
        locate_aiperf(str(fake), expected_version="0.13.0")
    with pytest.raises(AiperfProblem, match="not found"):
        locate_aiperf(str(tmp_path / "none"), expected_version="0.13.0")


def test_locate_refuses_a_source_checkout(tmp_path: Path) -> None:
    """aiperf 0.13.0 installed with `pip install -e` (or from git) is a source checkout: refused, not used."""
    for direct in (
        {"url": "file:///src/aiperf", "dir_info": {"editable": True}},
        {"url": "https://github.com/ai-dynamo/aiperf", "vcs_info": {"vcs": "git", "commit_id": "0" * 40}},
    ):
        fake = fake_aiperf(tmp_path, {"version": "0.13.0", "direct_url": json.dumps(direct)})
        with pytest.raises(AiperfProblem, match="source checkout"):
            locate_aiperf(str(fake), expected_version="0.13.0")


def test_a_request_sent_in_the_wrong_phase_or_twice_is_not_trusted() -> None:
    from trtmc_videoqa.climb.join import phase_problem

    assert phase_problem("profiling", "profiling", 1) is None
    assert "'warmup' phase" in phase_problem("profiling", "warmup", 1)  # warmup never enters steady state
    assert "'profiling' phase" in phase_problem("warmup", "profiling", 1)
    assert "sent this conversation 2 times" in phase_problem("profiling", "profiling", 2)


def test_the_servers_task_time_comes_from_its_response_else_its_records_by_request_id() -> None:
    from trtmc_videoqa.aiperf.exports import ClientRecord
    from trtmc_videoqa.climb.join import server_task_time

    records = {"req-1": {"request_id": "req-1", "handler_ms": 41.5}}
    plain = ClientRecord(session_id="s", x_request_id="req-1", phase="profiling")
    plain_time = server_task_time(plain, records)  # trtmc-server --records: a handler-wide time, named so
    assert (plain_time.ms, plain_time.field) == (41.5, "records.handler_ms")
    assert plain_time.scope.startswith("handler: wider than the task call")
    timed = plain.model_copy(update={"response_fields": {"trtmc_timing": {"model_call_ms": 39.0}}})
    timed_time = server_task_time(timed, records)
    assert (timed_time.ms, timed_time.field, timed_time.scope) == (
        39.0,
        "response.trtmc_timing.model_call_ms",
        "public_task_call_wall",
    )
    other = plain.model_copy(update={"x_request_id": "req-2"})
    assert server_task_time(other, records).ms is None  # never another request's figure
    # perf_serving's records nest the times under "timing"; its model_call_ms is the task call itself
    nested = {"req-3": {"request_id": "req-3", "timing": {"model_call_ms": 12.0, "handler_ms": 15.0}}}
    perf = server_task_time(plain.model_copy(update={"x_request_id": "req-3"}), nested)
    assert (perf.ms, perf.field, perf.scope) == (12.0, "records.timing.model_call_ms", "public_task_call_wall")
    said = {"req-4": {"request_id": "req-4", "task_ms": 9.0, "timing_scope": "decode+generate"}}
    own = server_task_time(plain.model_copy(update={"x_request_id": "req-4"}), said)
    assert (own.field, own.scope) == ("records.task_ms", "decode+generate")  # the server's own word wins


def test_a_records_file_with_lines_that_are_not_records_is_read_around_them(tmp_path: Path) -> None:
    from trtmc_videoqa.climb.join import read_server_records

    records = tmp_path / "records.jsonl"
    records.write_text('[1, 2]\n"text"\nnot json\n{"request_id": "req-1", "handler_ms": 3.5}\n')
    assert read_server_records(records) == {"req-1": {"request_id": "req-1", "handler_ms": 3.5}}


def test_server_records_must_name_a_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trtmc_videoqa",
            "qualify",
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--server-records",
            str(tmp_path / "absent.jsonl"),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--server-records" in done.stderr and "no such file" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()
