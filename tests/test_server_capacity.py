"""Throughput against concurrency where theory says it must bend: the reference endpoint with a capacity (tasks at
once) and an added task time T saturates near capacity / T. One `qualify --url ... --concurrency N` per level, each
its own real AIPerf run, against one endpoint process; the server without that bend is the sweep the throughput
tests read (one `qualify --concurrency 1,4`, shared_runs.endpoint_sweep).

Ratios, never timings, with wide margins: this runs on a machine of two busy cores. Twelve profiling requests a
level (the synthetic workload's six, twice), a 600 ms task, so that what the clock adds (request handling, AIPerf)
is small beside the task itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import QUICK, reference, row, run_main
from shared_runs import SWEEP_CAPACITY, SWEEP_TASK_MS, SharedRun

from trtmc_videoqa.results import ResultRow

pytestmark = pytest.mark.e2e

MODEL = "trtmc-videoqa-reference"
TASK_MS = 600
LEVEL = (*QUICK, "--repeats", "2")  # twelve profiling requests


def levels(capsys: pytest.CaptureFixture[str], tmp: Path, url: str, concurrencies: list[int]) -> dict[int, ResultRow]:
    """One qualify run per concurrency against `url`: its row by concurrency, each measured whole."""
    rows = {}
    for concurrency in concurrencies:
        out = tmp / f"c{concurrency}"
        args = ("qualify", "--url", url, "--model", MODEL, "--out", str(out), *LEVEL, "--concurrency", str(concurrency))
        done = run_main(capsys, *args)
        measured = row(out, MODEL)
        aiperf = next(stage for stage in measured.stages if stage.name == "aiperf")
        assert aiperf.status == "passed", (done.stderr, aiperf.detail)
        assert measured.requests_per_s and measured.client_latency and measured.client_latency.p50_ms, measured
        rows[concurrency] = measured
    return rows


def test_a_server_of_capacity_two_saturates_past_concurrency_two(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Capacity 2, 600 ms a task: throughput grows from 1 to 2 requests in flight, then stops (at 4 the extra two
    only queue), and the latency grows instead, by about a task's wait."""
    with reference(tmp_path, capacity=2, added_task_ms=TASK_MS) as url:
        rows = levels(capsys, tmp_path, url, [1, 2, 4])
    rate = {c: r.requests_per_s or 0.0 for c, r in rows.items()}
    p50 = {c: (r.client_latency.p50_ms if r.client_latency else None) or 0.0 for c, r in rows.items()}
    assert rate[2] >= 1.3 * rate[1], rate  # below the knee: two lanes, more work done (ideally 2x)
    assert rate[4] <= 1.3 * rate[2], rate  # past it: no more lanes (ideally 1x)
    assert rate[4] <= 1.3 * 2 / (TASK_MS / 1000), rate  # never past capacity / task time
    assert p50[4] >= p50[2] + 0.5 * TASK_MS, p50  # the extra requests wait a task (ideally +600 ms)
    # The wait is the server's queue, and the server says so: its task time stays one task.
    task = {c: (r.server_task_time.p50_ms if r.server_task_time else None) or 0.0 for c, r in rows.items()}
    assert task[4] <= 1.5 * task[2], task


def test_a_server_that_answers_every_request_at_once_scales_with_concurrency(sweep_run: SharedRun) -> None:
    """Capacity 8 (more than the requests in flight), 600 ms a task, measured at concurrency 1 and 4 in one sweep
    (shared_runs.endpoint_sweep): four requests at once take about as long as one, so throughput grows with
    concurrency (ideally 4x; six requests a level, so two rounds at 4, about 3x) and the latency stays near one
    task."""
    assert sweep_run.done().returncode == 0, sweep_run.done().stderr
    sweep = row(sweep_run.out, MODEL).sweep
    assert sweep is not None and (SWEEP_CAPACITY, SWEEP_TASK_MS) == (8, TASK_MS)
    levels = {level.concurrency: level for level in sweep.levels}
    assert sorted(levels) == [1, 4] and all(level.passed for level in levels.values())
    rate = {c: level.requests_per_s or 0.0 for c, level in levels.items()}
    p50 = {c: (level.client_latency.p50_ms if level.client_latency else None) or 0.0 for c, level in levels.items()}
    assert rate[4] >= 1.6 * rate[1], rate
    assert p50[4] <= p50[1] + TASK_MS, p50  # no request waits a whole task behind another
