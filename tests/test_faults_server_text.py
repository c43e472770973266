"""Server text is data, never a crash (issue 32, item 4). What a server answers is read through typed, tolerant
models (answers/shapes.py): an answer of another shape is a named malformed answer that the output check
fails; a lone surrogate in its text is written escaped, the body's raw bytes kept under the row's private/ folder; a
number that cannot be held is a named invalid value. Each class is shown on the readers first, then end to end
through the published AIPerf against a loopback server whose every byte the test decides (raw_server.py).

Three AIPerf runs, each made once for this module: lone surrogates in the capability check's answer and in the
identity check's chat and native answers (AIPerf's own answers clean, so identity runs after the whole AIPerf run);
every malformed shape AIPerf passes on; and answers AIPerf refuses though they are well formed (a lone surrogate, an
integer of 4,301 digits). Chat requests reach the hostile server in order (concurrency 1): #1 the capability
check, #2 the warmup request, then the profiling requests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import QUICK, qualify, row, run_main
from raw_server import RawServer, chat, response

from trtmc_videoqa.aiperf.exports import ClientRecord, client_record, read_client_records
from trtmc_videoqa.answers.shapes import read_chat_completion
from trtmc_videoqa.climb.join import keep_raw_answers, read_server_records, server_task_time
from trtmc_videoqa.climb.prompts import workload_prompts
from trtmc_videoqa.common.server_json import MAX_DEPTH, parse_server_json, whole_count
from trtmc_videoqa.plan.settings import RunSettings
from trtmc_videoqa.results import RequestRow
from trtmc_videoqa.results.layout import RAW_ANSWERS_DIR, raw_answer_file
from trtmc_videoqa.serving.process import served_model
from trtmc_videoqa.stages.capability import CapabilityRequest, check_over_transports
from trtmc_videoqa.stages.identity.compare import ENDPOINT_NATIVE_REQUEST, chat_answers, native_answers
from trtmc_videoqa.stages.output_check import check_outputs
from trtmc_videoqa.workloads import builtin_workload

Captured = pytest.CaptureFixture[str]
MODEL = "hostile-model"
LONE = "\ud800"  # a lone surrogate: valid JSON as the escape \ud800, and no UTF-8 file can hold it
ESCAPED = "\\ud800"  # what a file holds instead: the six characters of the escape
HUGE = "1" * 4301  # one digit past what Python converts to an int
NATIVE_PATH = b"/v1/tasks/generate"
PROMPTS = workload_prompts(builtin_workload("synthetic"))


def _body(**fields: Any) -> dict[str, Any]:
    """A well-formed chat completion answering "A", with `fields` set over it."""
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    return body | fields


def _choices(**fields: Any) -> list[dict[str, Any]]:
    return [{"index": 0, "finish_reason": "stop", **fields}]


def _with_huge_task_time(body: dict[str, Any]) -> str:
    return json.dumps(body | {"trtmc_timing": {"model_call_ms": 0}}).replace(
        '"model_call_ms": 0', f'"model_call_ms": {HUGE}'
    )


# Answer shapes that crashed the reader of AIPerf's records: each a malformed answer, named where its shape breaks.
MALFORMED: dict[str, tuple[str, str]] = {
    "usage-list": (json.dumps(_body(usage=[1])), "`usage` should be an object, not a list"),
    "usage-string": (json.dumps(_body(usage="x")), "`usage` should be an object, not a string"),
    "choices-string": (json.dumps(_body(choices="A")), "`choices` should be a list, not a string"),
    "choices-dict": (json.dumps(_body(choices={"0": "A"})), "`choices` should be a list, not an object"),
    "choices-int": (json.dumps(_body(choices=1)), "`choices` should be a list, not a number"),
    "message-string": (json.dumps(_body(choices=_choices(message="A"))), "`choices.0.message` should be an object"),
    "delta-string": (json.dumps(_body(choices=_choices(delta="A"))), "`choices.0.delta` should be an object"),
    "nested-100000": ("[" * 100_000 + "]" * 100_000, f"JSON nested deeper than {MAX_DEPTH} levels"),
}


def _raw_record(text: str | None, *, error: dict[str, Any] | None = None, status: int | None = 200) -> dict[str, Any]:
    """One line of AIPerf's raw export, as AIPerf 0.13.0 writes it, for a request answered with `text`."""
    record: dict[str, Any] = {
        "metadata": {"conversation_id": "q.forward.r00", "x_request_id": "rid-1", "benchmark_phase": "profiling"},
        "responses": [] if text is None else [{"perf_ns": 1, "text": text, "content_type": "application/json"}],
        "status": status,
    }
    return record | ({"error": error} if error else {})


def _written(record: ClientRecord) -> RequestRow:
    """The request as requests.jsonl and result.json hold it: it must survive a JSON write."""
    requested = RequestRow(
        session_id=record.session_id,
        phase="profiling",
        question_id="q",
        clip_id="forward",
        repeat=0,
        answer=record.answer,
        error=record.error,
        malformed=record.malformed,
        invalid_values=record.invalid_values,
    )
    return RequestRow.model_validate_json(requested.model_dump_json())


# --- the readers -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_each_answer_shape_that_crashed_the_records_reader_is_a_named_malformed_answer(shape: str) -> None:
    text, why = MALFORMED[shape]
    # AIPerf's own reader raises on these and records the error beside an HTTP 200: the answer came back, malformed.
    aiperf_error = {"type": "TypeError", "message": "TypeError('raised by its own reader')"}
    for error in (None, aiperf_error):
        record = client_record(_raw_record(text, error=error), {})
        assert record is not None and record.error is None and record.answer is None
        assert record.malformed is not None and why in record.malformed, record.malformed
        assert _written(record).malformed == record.malformed


def test_a_failed_request_keeps_its_error_whatever_its_body_holds() -> None:
    """A timeout (or any error that is not AIPerf's reader raising on a whole HTTP 200 answer) is a failed request:
    a body cut off by it is not called malformed."""
    cut = '{"choices": [{"message": {"content": "A'
    timeout = {"type": "TimeoutError", "message": "TimeoutError()"}
    for status in (200, None):
        record = client_record(_raw_record(cut, error=timeout, status=status), {})
        assert record is not None and record.error and "TimeoutError" in record.error and record.malformed is None
    refused = client_record(_raw_record(cut, error={"type": "TypeError", "code": 500}, status=500), {})
    assert refused is not None and refused.http_status == 500 and refused.malformed is None


def test_a_record_not_in_aiperfs_shape_is_named_or_passed_over_never_raised(tmp_path: Path) -> None:
    record = client_record(_raw_record(None) | {"responses": ["x"]}, {})
    assert record is not None and record.malformed is not None
    assert "AIPerf's record of the answer: `responses.0` should be an object, not a string" in record.malformed
    streamed = client_record(_raw_record(None) | {"responses": [{"packets": [1]}]}, {})
    assert streamed is not None and streamed.malformed is not None and "`responses.0.packets.0`" in streamed.malformed
    for metadata in ([1], "x", {"conversation_id": 5}, None):
        assert client_record(_raw_record("{}") | {"metadata": metadata}, {}) is None  # names no request
    odd_error = client_record(_raw_record(None, error={"message": [[1]] * 3, "type": 5}), {})
    assert odd_error is not None and odd_error.error == "5: [[1], [1], [1]]"
    export = tmp_path / "export"
    export.mkdir()
    records = [
        {"metadata": {"conversation_id": "c1", "x_request_id": "r1"}, "metrics": [1]},
        {"metadata": {"conversation_id": "c2", "x_request_id": "r2"}, "metrics": {"request_latency": "slow"}},
        {"metadata": {"conversation_id": "c3", "x_request_id": "r3"}, "metrics": {"request_latency": {"value": 1e999}}},
        {"metadata": [], "metrics": {}},
    ]
    (export / "profile_export.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    read = read_client_records(export)
    assert [r.session_id for r in read] == ["c1", "c2", "c3"] and all(r.latency_ms is None for r in read)


def test_lone_surrogates_are_escaped_wherever_a_record_is_written_and_the_raw_bytes_kept(tmp_path: Path) -> None:
    body = _body(choices=_choices(message={"content": f"A {LONE}"}), note=f"own {LONE}", system_fingerprint=LONE)
    text = json.dumps(body)  # the escape, as a server sends it
    error = {"type": "InvalidInferenceResultError", "message": f"no content {LONE}"}
    record = client_record(_raw_record(text, error=error), {})
    assert record is not None and record.answer == f"A {ESCAPED}"
    assert record.error == f"InvalidInferenceResultError: no content {ESCAPED}"  # refused by AIPerf: still failed
    assert record.response_fields == {"note": f"own {ESCAPED}"} and record.raw_answer == text.encode()
    assert _written(record).answer == f"A {ESCAPED}"
    keep_raw_answers(tmp_path, [record])
    kept = tmp_path / raw_answer_file("rid-1")
    assert kept.read_bytes() == text.encode() and json.loads(kept.read_bytes())["system_fingerprint"] == LONE
    clean = client_record(_raw_record(json.dumps(_body())), {})
    assert clean is not None and clean.raw_answer is None  # nothing escaped: nothing kept


def test_a_task_time_of_4301_digits_is_an_invalid_value_named_not_a_crash() -> None:
    record = client_record(_raw_record(_with_huge_task_time(_body())), {"rid-1": 50.0})
    assert record is not None and record.answer == "A" and record.raw_answer is not None
    time = server_task_time(record, {})
    assert time.ms is None and time.invalid is not None
    assert "`response.trtmc_timing.model_call_ms` is not a finite number (<an integer of 4301 digits>)" in time.invalid


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("1e999", "is not a whole number (inf)"),
        ("NaN", "is not a whole number (nan)"),
        (HUGE, "is not a whole number (<an integer of 4301 digits>)"),
        ("-1", "is not a count from 0 to 2**53 (-1)"),
        (str(2**60), f"is not a count from 0 to 2**53 ({2**60})"),
        ("2.5", "is not a whole number (2.5)"),
        ('"5"', "is not a number ('5')"),
        ("true", "is not a number (True)"),
    ],
)
def test_a_token_count_that_cannot_be_held_is_a_named_invalid_value(value: str, why: str) -> None:
    text = json.dumps(_body()).replace('"completion_tokens": 1', f'"completion_tokens": {value}')
    answer = read_chat_completion(text)
    assert answer.malformed is None and answer.text == "A" and answer.completion_tokens is None
    assert answer.invalid_values == [f"`usage.completion_tokens` {why}"]
    assert whole_count(3.0) == (3, None) and whole_count(2**53) == (2**53, None)


def test_parsing_a_server_body_never_raises() -> None:
    assert parse_server_json("[" * 100_000 + "]" * 100_000).problem == f"JSON nested deeper than {MAX_DEPTH} levels"
    assert parse_server_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)).problem is not None
    assert parse_server_json("[" * MAX_DEPTH + "]" * MAX_DEPTH).problem is None
    assert (parse_server_json(b"\xff\xfe{").problem or "").startswith("not JSON")
    parsed = parse_server_json(f'{{"a": {HUGE}, "b": NaN, "c": Infinity, "{ESCAPED}": "{ESCAPED}"}}'.encode())
    assert parsed.problem is None and parsed.unheld == 3 and parsed.escaped == 2 and parsed.changed
    assert repr(parsed.value["a"]) == "<an integer of 4301 digits>" and parsed.value[ESCAPED] == ESCAPED


def test_a_malformed_answer_fails_the_output_check_by_name() -> None:
    malformed = RequestRow(
        session_id="s", phase="profiling", question_id="q", clip_id="forward", repeat=0, malformed="`choices` ..."
    )
    check = check_outputs([], [malformed])
    assert not check.passed and check.by_outcome["malformed"] == 1 and check.by_outcome["empty"] == 0
    assert check.examples[0].outcome == "malformed" and "`choices` ..." in check.examples[0].answer


def test_a_records_file_holding_lone_surrogates_is_read_escaped(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"request_id": "r", "task_ms": 3.0, "timing_scope": f"scope {LONE}"}) + "\n")
    found = read_server_records(records)
    assert found["r"]["timing_scope"] == f"scope {ESCAPED}"


@pytest.mark.parametrize(
    "listed", [b'{"data": 5}', b'{"data": "ab"}', b"[1]", b"[" * 100_000, b'{"data": [{"id": 7}]}']
)
def test_a_model_list_of_any_shape_falls_back_to_the_profile(listed: bytes) -> None:
    with RawServer(lambda n, request: response(listed, headers=("Content-Type: application/json",))) as server:
        assert served_model(server.url, "fallback") == "fallback"


# --- the capability and identity clients, against a loopback server ------------------------------------------------


def _json(text: str) -> bytes:
    return response(text.encode(), headers=("Content-Type: application/json",))


def _path(request: bytes) -> bytes:
    return request.split(b" ", 2)[1]


def _ours(request: bytes) -> bool:
    """A request this tool sends itself (the capability check, identity's chat), not one of AIPerf's."""
    return b"x-request-id: capability-" in request.lower() or b"x-request-id: identity-" in request.lower()


def _surrogate_answers(n: int, request: bytes) -> bytes:
    """Lone surrogates in every answer to a request of ours: in the answer's text, in a field of the server's own and
    in `system_fingerprint`, and in the native route's answer; AIPerf's requests get a clean answer."""
    if _path(request) == NATIVE_PATH:
        return _json(json.dumps({"text": f"A {LONE}"}))
    if not _ours(request):
        return chat("A", model=MODEL)
    body = _body(choices=_choices(message={"content": f"A {LONE}"}), note=f"own {LONE}", system_fingerprint=LONE)
    return _json(json.dumps(body))


def _capability(url: str, row_dir: Path) -> Any:
    request = CapabilityRequest(
        url=url, model=MODEL, api_key=None, prompt=PROMPTS[0], max_tokens=8, extra_body={}, clip_urls={}
    )
    return check_over_transports(request, RunSettings(), row_dir)


def test_the_capability_check_escapes_lone_surrogates_and_keeps_the_raw_body(tmp_path: Path) -> None:
    with RawServer(_surrogate_answers) as server:
        outcome = _capability(server.url, tmp_path)
    assert outcome.stage.status == "passed", outcome.stage.detail
    written = json.loads((tmp_path / "capability.json").read_text())
    assert written["answer"] == f"A {ESCAPED}" and written["response_fields"]["note"] == f"own {ESCAPED}"
    assert written["served_by"] == ESCAPED and written["raw_answer"].startswith(RAW_ANSWERS_DIR + "/capability-")
    kept = json.loads((tmp_path / written["raw_answer"]).read_bytes())
    assert kept["choices"][0]["message"]["content"] == f"A {LONE}" and kept["system_fingerprint"] == LONE


def test_a_capability_answer_of_another_shape_fails_the_check_by_name(tmp_path: Path) -> None:
    text, why = MALFORMED["choices-string"]
    with RawServer(lambda n, request: _json(text)) as server:
        outcome = _capability(server.url, tmp_path)
    assert outcome.stage.status == "failed" and f"not a chat completion ({why})" in outcome.stage.detail
    assert json.loads((tmp_path / "capability.json").read_text())["malformed"] == why


def test_identity_answers_with_lone_surrogates_are_escaped_and_kept_raw(tmp_path: Path) -> None:
    with RawServer(_surrogate_answers) as server:
        options: dict[str, Any] = {"max_tokens": 8, "timeout_s": 10, "row_dir": tmp_path}
        chat_side = chat_answers(server.url, MODEL, PROMPTS[:1], body_limit=4 << 20, api_key=None, **options)
        native_side = native_answers(server.url, ENDPOINT_NATIVE_REQUEST, PROMPTS[:1], **options)
    for answer in (*chat_side, *native_side):
        assert answer.error is None and answer.answer == f"A {ESCAPED}" and answer.raw_answer
        assert (tmp_path / answer.raw_answer).is_file()
        assert json.loads(answer.model_dump_json())["answer"] == f"A {ESCAPED}"  # identity.json holds it
    assert json.loads((tmp_path / native_side[0].raw_answer or "").read_bytes()) == {"text": f"A {LONE}"}


def test_a_native_answer_of_another_shape_is_the_pairs_named_error(tmp_path: Path) -> None:
    with RawServer(lambda n, request: _json(json.dumps({"text": ["A"]}))) as server:
        (answer,) = native_answers(server.url, ENDPOINT_NATIVE_REQUEST, PROMPTS[:1], max_tokens=8, timeout_s=10)
    assert answer.answer is None and "malformed answer (`text` should be a string, not a list)" in (answer.error or "")


# --- end to end: three AIPerf runs ---------------------------------------------------------------------------------


def _qualify(folder: Path, answer: Callable[[int, bytes], bytes], *extra: str, native: bool = False) -> Path:
    """`qualify --endpoint` against a RawServer answering with `answer`; the run's --out, with its outcome."""
    out = folder / "out"
    with RawServer(answer) as server:
        args = ("--endpoint", server.url, "--model", MODEL, *QUICK, "--out", str(out), *extra)
        done = qualify(*args, *(("--native-url", server.url) if native else ()))
    (folder / "done.json").write_text(json.dumps({"returncode": done.returncode, "output": done.stdout + done.stderr}))
    return out


def _ended_cleanly(out: Path, code: int) -> None:
    """The run ended with `code` (0 its row qualified, 3 it failed) and no traceback."""
    done = json.loads((out.parent / "done.json").read_text())
    assert done["returncode"] == code, done["output"]
    assert "Traceback" not in done["output"], done["output"]


def _reports_list_the_row_and_the_public_check_is_clean(out: Path, capsys: Captured) -> None:
    report = json.loads((out / "report.json").read_text())
    assert [r["profile"] for r in report["rows"]] == [MODEL]
    assert MODEL in (out / "report.md").read_text() and MODEL in (out / "report.html").read_text()
    checked = run_main(capsys, "report", "--check-public", str(out))
    assert checked.returncode == 0, checked.stderr


@pytest.fixture(scope="module")
def surrogate_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Lone surrogates in the capability check's answer and in identity's chat and native answers (--native-url),
    asked after the whole AIPerf run, whose own answers are clean. One AIPerf run."""
    return _qualify(tmp_path_factory.mktemp("surrogates"), _surrogate_answers, native=True)


@pytest.mark.e2e
def test_lone_surrogates_in_our_own_requests_answers_are_escaped_after_a_full_run(
    surrogate_run: Path, capsys: Captured
) -> None:
    out, row_dir = surrogate_run, surrogate_run / "checkpoints" / MODEL
    _ended_cleanly(out, 0)
    result = row(out, MODEL)
    capability = json.loads((row_dir / "capability.json").read_text())
    assert capability["answer"] == f"A {ESCAPED}" and capability["response_fields"]["note"] == f"own {ESCAPED}"
    assert capability["served_by"] == ESCAPED and (row_dir / capability["raw_answer"]).is_file()
    aiperf = next(s for s in result.stages if s.name == "aiperf")
    assert aiperf.status == "passed" and result.profiling_requests_completed == 6, aiperf.detail
    assert result.identity is not None and result.identity.verdict == "held", result.identity
    for pair in result.identity.pairs:
        for side in (pair.chat, pair.native):
            assert side.answer == f"A {ESCAPED}" and side.raw_answer and (row_dir / side.raw_answer).is_file()
    assert result.status == "endpoint-qualified", result.status_reason
    _reports_list_the_row_and_the_public_check_is_clean(out, capsys)


PROFILING_SHAPES = [*MALFORMED, "good", "good", "good", "good"]  # twelve profiling requests: --repeats 2


def _shaped_answers(n: int, request: bytes) -> bytes:
    """#1 (capability) and #2 (warmup) well formed; then each profiling request one of PROFILING_SHAPES."""
    shape = PROFILING_SHAPES[n - 3] if 3 <= n < 3 + len(PROFILING_SHAPES) else "good"
    return _json(MALFORMED[shape][0]) if shape in MALFORMED else chat("A", model=MODEL)


@pytest.fixture(scope="module")
def shapes_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every malformed shape once and four good answers, over twelve profiling requests. One AIPerf run."""
    return _qualify(tmp_path_factory.mktemp("shapes"), _shaped_answers, "--repeats", "2")


@pytest.mark.e2e
def test_answers_of_another_shape_are_named_malformed_and_fail_the_output_check(
    shapes_run: Path, capsys: Captured
) -> None:
    out = shapes_run
    _ended_cleanly(out, 3)
    result = row(out, MODEL)
    assert (result.status, result.failed_stage) == ("failed", "output-check"), result.status_reason
    aiperf = next(s for s in result.stages if s.name == "aiperf")
    assert aiperf.status == "passed" and f"{len(MALFORMED)} answer(s) were no chat completion" in aiperf.detail
    check = result.output_check
    assert check is not None and check.by_outcome["malformed"] == len(MALFORMED) and check.by_outcome["resolved"] == 4
    named = [r.malformed for r in result.requests if r.malformed]
    for _, why in MALFORMED.values():
        assert sum(why in (m or "") for m in named) == 1, (why, named)
    assert all("(AIPerf: " in (m or "") for m in named)  # AIPerf's own reader raised on each: said beside
    _reports_list_the_row_and_the_public_check_is_clean(out, capsys)


REFUSED = ["content", "field", "fingerprint", "task-time", "content", "task-time"]  # the six profiling requests


def _refused_answers(n: int, request: bytes) -> bytes:
    """#1 and #2 well formed; then well-formed answers AIPerf's reader (orjson) refuses: a lone surrogate in the
    answer, in a field of the server's own or in `system_fingerprint`, or a task time of 4,301 digits."""
    kind = REFUSED[n - 3] if 3 <= n < 3 + len(REFUSED) else None
    if kind == "task-time":
        return _json(_with_huge_task_time(_body()))
    surrogates = {
        "content": {"choices": _choices(message={"content": f"A {LONE}"})},
        "field": {"note": LONE},
        "fingerprint": {"system_fingerprint": LONE},
    }
    return _json(json.dumps(_body(**surrogates[kind]))) if kind else chat("A", model=MODEL)


@pytest.fixture(scope="module")
def refused_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six profiling answers AIPerf refuses though they are well formed. One AIPerf run."""
    return _qualify(tmp_path_factory.mktemp("refused"), _refused_answers)


@pytest.mark.e2e
def test_answers_aiperf_refuses_fail_its_stage_escaped_named_and_kept_raw(refused_run: Path, capsys: Captured) -> None:
    out, row_dir = refused_run, refused_run / "checkpoints" / MODEL
    _ended_cleanly(out, 3)
    result = row(out, MODEL)
    assert (result.status, result.failed_stage) == ("failed", "aiperf"), result.status_reason
    profiling = [r for r in result.requests if r.phase == "profiling"]
    assert len(profiling) == 6 and all(r.error and r.raw_answer for r in profiling)
    assert all((row_dir / r.raw_answer).is_file() for r in profiling if r.raw_answer)
    assert sorted(r.answer or "" for r in profiling) == ["A"] * 4 + [f"A {ESCAPED}"] * 2
    huge = [r for r in profiling if r.server_task_invalid]
    assert len(huge) == 2 and all("<an integer of 4301 digits>" in (r.server_task_invalid or "") for r in huge)
    aiperf = next(s for s in result.stages if s.name == "aiperf")
    assert "6 answer(s) held text written escaped" in aiperf.detail
    _reports_list_the_row_and_the_public_check_is_clean(out, capsys)
