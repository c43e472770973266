"""Issue 26, item 5: a server's task time is checked before it is believed, and no value crashes the statistics.

The attacks of the issue, reproduced without AIPerf: `model_call_ms: -5000` (an endpoint-qualified row with a p50 task
time of -5000 ms) and `model_call_ms: 1e308` (an OverflowError in stats.latency_stats: exit 1, no result.json), with
NaN, infinity, an integer past a float's range, a string, a boolean and a task time longer than the request's own
client latency beside them. Each is recorded invalid on its request, counted and named by the timing stage, kept out
of every figure, and fails a TRTMC row at `timing`; an endpoint row says so and goes on.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from trtmc_videoqa.aiperf.dataset import PlannedRequest, RequestPlan
from trtmc_videoqa.aiperf.exports import ClientRecord
from trtmc_videoqa.climb.join import (
    TASK_TIME_TOLERANCE_MS,
    join_requests,
    read_server_records,
    record_task_time,
    server_task_time,
)
from trtmc_videoqa.climb.stats import latency_stats, percentile, requests_per_second
from trtmc_videoqa.results import RequestRow
from trtmc_videoqa.rows.status import status_from_stages
from trtmc_videoqa.stages.timing import timing_stage
from trtmc_videoqa.workloads import builtin_workload

CLIENT_MS = 120.0
QUESTION = "synthetic-direction"
# (value the server gave, what the rule says about it)
HOSTILE: list[tuple[Any, str]] = [
    (-5000, "is below zero"),
    (1e308, "is over the request's own client latency"),
    (float("nan"), "is not a finite number"),
    (float("inf"), "is not a finite number"),
    (float("-inf"), "is not a finite number"),
    (10**400, "is not a finite number"),
    ("12.5", "is not a number"),
    (True, "is not a number"),
    ({"ms": 3}, "is not a number"),
    (CLIENT_MS * 2, "is over the request's own client latency"),
]


def _client(value: Any, *, request_id: str = "x-1", latency: float | None = CLIENT_MS) -> ClientRecord:
    return ClientRecord(
        session_id="s",
        x_request_id=request_id,
        phase="profiling",
        latency_ms=latency,
        answer="A",
        response_fields={"trtmc_timing": {"model_call_ms": value}},
    )


@pytest.mark.parametrize(("value", "why"), HOSTILE, ids=[repr(v)[:20] for v, _ in HOSTILE])
def test_a_hostile_task_time_in_the_response_is_invalid_and_says_why(value: Any, why: str) -> None:
    found = server_task_time(_client(value), {})
    assert found.ms is None and found.field is None
    assert found.invalid is not None and why in found.invalid
    assert "`response.trtmc_timing.model_call_ms`" in found.invalid


@pytest.mark.parametrize("value", [0, 0.0, 12.5, CLIENT_MS, CLIENT_MS + TASK_TIME_TOLERANCE_MS])
def test_a_task_time_from_zero_to_the_client_latency_with_its_tolerance_is_believed(value: float) -> None:
    found = server_task_time(_client(value), {})
    assert (found.ms, found.invalid) == (float(value), None)
    assert found.field == "response.trtmc_timing.model_call_ms"


def test_the_tolerance_is_the_larger_of_a_millisecond_and_one_percent() -> None:
    assert server_task_time(_client(1009.0, latency=1000.0), {}).ms == 1009.0  # 1 % of 1 s is 10 ms
    assert server_task_time(_client(1011.0, latency=1000.0), {}).invalid is not None
    assert server_task_time(_client(5.9, latency=5.0), {}).ms == 5.9  # 1 ms on a 5 ms request
    assert server_task_time(_client(6.1, latency=5.0), {}).invalid is not None


def test_without_a_client_latency_only_the_number_itself_is_checked() -> None:
    assert server_task_time(_client(1e6, latency=None), {}).ms == 1e6  # a failed request: nothing to compare with
    assert server_task_time(_client(-1, latency=None), {}).invalid is not None


def test_the_first_field_present_decides_and_null_is_absent() -> None:
    # A hostile model_call_ms is not papered over by a believable handler_ms beside it.
    both = ClientRecord(
        session_id="s",
        x_request_id="x",
        phase="profiling",
        latency_ms=CLIENT_MS,
        response_fields={"trtmc_timing": {"model_call_ms": -1, "handler_ms": 3.0}},
    )
    assert server_task_time(both, {}).invalid is not None
    null = both.model_copy(update={"response_fields": {"trtmc_timing": {"model_call_ms": None, "handler_ms": 3.0}}})
    assert server_task_time(null, {}).field == "response.trtmc_timing.handler_ms"


def test_a_records_file_with_hostile_values_is_read_checked_and_never_crashes(tmp_path: Path) -> None:
    lines = [
        '{"request_id": "nan", "model_call_ms": NaN}',  # Python's json takes NaN and Infinity
        '{"request_id": "inf", "timing": {"model_call_ms": Infinity}}',
        '{"request_id": "neg", "timing": {"model_call_ms": -5000}}',
        '{"request_id": "big", "handler_ms": 1' + "0" * 400 + "}",
        '{"request_id": "huge-int", "handler_ms": ' + "9" * 5000 + "}",  # past Python's int digits: held, named
        "[" * 100_000,  # too deep to parse: skipped
        '{"request_id": "ok", "task_ms": 7.5}',
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(lines) + "\n")
    found = read_server_records(path)
    assert sorted(found) == ["big", "huge-int", "inf", "nan", "neg", "ok"]
    for request_id in ("nan", "inf", "neg", "big", "huge-int"):
        time = record_task_time(found[request_id])
        assert time.ms is None and time.invalid and "`records." in time.invalid, request_id
    huge = record_task_time(found["huge-int"]).invalid or ""
    assert "is not a finite number (<an integer of 5000 digits>)" in huge
    assert record_task_time(found["ok"]).ms == 7.5
    over = server_task_time(ClientRecord(session_id="s", x_request_id="ok", phase="profiling", latency_ms=5.0), found)
    assert over.ms is None and "client latency" in (over.invalid or "")


def _plan(count: int) -> RequestPlan:
    requests = [
        PlannedRequest(
            session_id=f"p{i}",
            phase="profiling",
            question_id=QUESTION,
            clip_id="forward",
            repeat=i,
            clip_path="c.mp4",
            text="q",
        )
        for i in range(count)
    ]
    return RequestPlan(requests=requests, max_tokens=16)


def _joined(values: list[Any]) -> list[RequestRow]:
    clients = [
        _client(value, request_id=f"x{i}").model_copy(update={"session_id": f"p{i}"}) for i, value in enumerate(values)
    ]
    joined = join_requests(_plan(len(values)), clients, {}, builtin_workload("synthetic"), 16)
    return joined.records


def test_the_join_records_each_invalid_time_on_its_request_and_keeps_it_out_of_the_figures() -> None:
    values = [10.0, -5000, 1e308, float("nan"), 20.0]
    records = _joined(values)
    assert [r.server_task_ms for r in records] == [10.0, None, None, None, 20.0]
    assert [bool(r.server_task_invalid) for r in records] == [False, True, True, True, False]
    assert "below zero" in (records[1].server_task_invalid or "")
    # What requests.jsonl and result.json hold: JSON that reads back, no NaN or Infinity in it.
    for record in records:
        text = record.model_dump_json()
        assert "NaN" not in text and "Infinity" not in text
        assert RequestRow.model_validate_json(text) == record
    stats = latency_stats([r.server_task_ms for r in records if r.server_task_ms is not None])
    assert (stats.count, stats.min_ms, stats.max_ms) == (2, 10.0, 20.0)


def test_in_trtmc_mode_invalid_task_times_fail_the_row_at_timing_counted_and_named() -> None:
    records = _joined([-5000] * 3 + [10.0])
    stage = timing_stage(
        records, required=True, task_time_field="response.trtmc_timing.model_call_ms", timing_scope="s"
    )
    assert stage.status == "failed"
    assert stage.detail.startswith("3 of 4 profiling requests have an invalid server task time")
    assert "p0, X-Request-ID x0" in stage.detail and "below zero (-5000 ms)" in stage.detail
    status, reason, failed, _ = status_from_stages([stage], "aiperf-qualified")
    assert (status, failed) == ("failed", "timing") and "invalid server task time" in reason


def test_in_trtmc_mode_missing_and_invalid_are_both_named() -> None:
    records = _joined([-1, 10.0])
    records.append(records[1].model_copy(update={"session_id": "p9", "x_request_id": "x9", "server_task_ms": None}))
    stage = timing_stage(records, required=True, task_time_field="f", timing_scope="s")
    assert stage.status == "failed"
    assert "1 of 3 profiling requests have an invalid" in stage.detail
    assert "1 of 3 profiling requests have no server task time" in stage.detail and "p9" in stage.detail


def test_an_endpoint_row_states_its_invalid_task_times_and_goes_on() -> None:
    some = timing_stage(_joined([float("inf"), 10.0]), required=False, task_time_field="f", timing_scope="s")
    assert some.status == "passed"
    assert "server task time for 1 of 2" in some.detail and "1 of 2 profiling requests have an invalid" in some.detail
    every = timing_stage(_joined([-5000, -5000]), required=False, task_time_field=None, timing_scope=None)
    assert every.status == "passed"  # it did report: never "not reported by this server"
    assert "server task time for 0 of 2" in every.detail and "2 of 2 profiling requests have an invalid" in every.detail
    assert status_from_stages([every], "endpoint-qualified")[1].count("invalid server task time") == 1


@pytest.mark.parametrize(
    "values",
    [
        [1e308] * 120,
        [-1e308, 1e308] * 60,
        [1.7976931348623157e308] * 3,
        [-5000.0, -1.0, 0.0],
        [float("nan"), float("inf"), float("-inf"), 2.0],
        [float("nan")],
        [10**400, 4.0],
        [],
    ],
    ids=["1e308", "both-extremes", "max-float", "negatives", "non-finite", "only-nan", "huge-int", "empty"],
)
def test_no_value_crashes_the_statistics(values: list[float]) -> None:
    stats = latency_stats(values)
    figures = [stats.mean_ms, stats.p50_ms, stats.p90_ms, stats.p99_ms, stats.min_ms, stats.max_ms]
    assert all(f is None or math.isfinite(f) for f in figures)
    assert stats.count == sum(1 for v in values if isinstance(v, float) and math.isfinite(v))
    json.loads(stats.model_dump_json())  # writable as JSON


def test_the_figures_are_unchanged_for_ordinary_values() -> None:
    stats = latency_stats([float(v) for v in range(1, 11)])
    assert (stats.mean_ms, stats.p50_ms, stats.p90_ms, stats.min_ms, stats.max_ms) == (5.5, 5.5, 9.1, 1.0, 10.0)
    assert percentile([-1e308, 1e308], 0.5) == 0.0  # the difference would overflow: a weighted mean instead
    assert requests_per_second([(0, 10**400)]) is None and requests_per_second([(0, 10**9)]) == 1.0


def test_a_large_records_file_is_streamed_keeping_only_the_run_s_requests(tmp_path: Path) -> None:
    """--server-records was read whole (a 256 MB file took 576 MB): now one line at a time, keeping only the records
    of the run's own request ids, and an overlong line is passed over whole."""
    import tracemalloc

    path = tmp_path / "records.jsonl"
    pad = b"x" * 8000  # few long lines: the bound is on bytes held, and tracing many small objects is slow
    filler = b"".join(b'{"request_id": "other-%05d", "handler_ms": 1.5, "pad": "%s"}\n' % (i, pad) for i in range(3000))
    with path.open("wb") as handle:
        handle.write(b'{"request_id": "first", "handler_ms": 2.0}\n')
        handle.write(b'{"request_id": "too-long", "pad": "' + b"y" * (3 << 20) + b'"}\n')  # over the line cap
        handle.write(filler)
        handle.write(b'{"request_id": "last", "task_ms": 4.0}\n')
    assert path.stat().st_size > 24 << 20
    tracemalloc.start()
    try:
        found = read_server_records(path, {"first", "last", "too-long"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sorted(found) == ["first", "last"]
    assert record_task_time(found["last"]).ms == 4.0
    assert peak < 8 << 20, peak  # one line (at most the cap) and the kept records, never the file
