"""Timing fidelity: the client's end-to-end latency (AIPerf) beside the server's own task time, joined per request.

    .venv/bin/python bench/bench_timing.py [--added-task-ms 50] [--repeats 3] [--quick]

The reference endpoint (a test double) runs as its own process with an added task time D slept inside its timed
section, so the true task time is known to be at least D. `trtmc-videoqa qualify --endpoint` measures the synthetic
workload through AIPerf; the bench then checks, from result.json and the server's own records file:
  * every profiling request has both figures, joined by identity (the X-Request-ID AIPerf sent is the request id
    the server recorded, and the task time in the row is the one the server recorded for that id);
  * every server task time is at least D;
  * the reported client p50 minus the reported server task-time p50 is at most 5 ms (what the client adds:
    loopback HTTP, the request body, the server's parsing of it, AIPerf's own bookkeeping).
Side by side it prints both p50s, the per-request difference and the figure last. --quick (about 10 s, for CI):
one repeat (6 profiling requests) instead of three.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, FaultKnobs, ReferenceConfig, argv_for_subprocess
from trtmc_videoqa.results.layout import RESULT_FILE, checkpoints_dir
from trtmc_videoqa.serving.process import ServerProcess, free_loopback_port

GOAL_MS = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--added-task-ms", type=float, default=50.0, help="D: slept inside the server's task")
    parser.add_argument("--repeats", type=int, default=3, help="qualify --repeats (6 prompts each; default 3)")
    parser.add_argument("--quick", action="store_true", help="one repeat; about 10 s (CI)")
    args = parser.parse_args()
    if args.quick:
        args.repeats = 1
    added = args.added_task_ms
    with tempfile.TemporaryDirectory(prefix="trtmc-videoqa-timing-") as scratch:
        root = Path(scratch)
        port = free_loopback_port()
        url = f"http://127.0.0.1:{port}"
        records = root / "server-records.jsonl"
        config = ReferenceConfig(port=port, records_path=records, faults=FaultKnobs(added_task_ms=added))
        with ServerProcess(argv_for_subprocess(config), url=url, log_path=root / "server.log", startup_timeout_s=60):
            out = root / "out"
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "trtmc_videoqa",
                    "qualify",
                    "--endpoint",
                    url,
                    "--model",
                    DEFAULT_MODEL_NAME,
                    "--workload",
                    "synthetic",
                    "--out",
                    str(out),
                    "--repeats",
                    str(args.repeats),
                    "--warmup",
                    "1",
                ],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        result = checkpoints_dir(out) / DEFAULT_MODEL_NAME / RESULT_FILE
        if done.returncode != 0 or not result.is_file():
            written = "written" if result.is_file() else "not written"
            raise SystemExit(f"qualify failed (exit {done.returncode}, {result} {written}):\n{done.stderr}")
        row = json.loads(result.read_text())
        served = {}
        for line in records.read_text().splitlines():
            record = json.loads(line)
            served[record["request_id"]] = record
    profiling = [r for r in row["requests"] if r["phase"] == "profiling"]
    joined = [
        r
        for r in profiling
        if r["x_request_id"] in served
        and r["client_latency_ms"] is not None
        and r["server_task_ms"] is not None
        and abs(served[r["x_request_id"]]["model_call_ms"] - r["server_task_ms"]) < 0.01
    ]
    if not joined:
        raise SystemExit(f"no request joined by X-Request-ID ({len(profiling)} in the row, {len(served)} served)")
    tasks = [r["server_task_ms"] for r in joined]
    differences = [r["client_latency_ms"] - r["server_task_ms"] for r in joined]
    client_p50, task_p50 = row["client_latency"]["p50_ms"], row["server_task_time"]["p50_ms"]
    gap = client_p50 - task_p50
    print(f"status {row['status']}; task time from {row['task_time_field']}; D = {added:g} ms")
    print(
        f"joined by X-Request-ID: {len(joined)}/{len(profiling)} profiling requests "
        f"(both figures, and the server's record for that id)"
    )
    print(
        f"server task time: min {min(tasks):.2f} ms, p50 {task_p50:.2f} ms "
        f"({'every one' if min(tasks) >= added else 'NOT every one'} >= D)"
    )
    print(
        f"client latency (AIPerf): p50 {client_p50:.2f} ms; per request client - task: "
        f"median {statistics.median(differences):.2f} ms, max {max(differences):.2f} ms"
    )
    ok = len(joined) == len(profiling) > 0 and min(tasks) >= added and gap <= GOAL_MS
    print(
        f"timing fidelity: client p50 - task p50 = {gap:.2f} ms (goal <= {GOAL_MS:g} ms), "
        f"task >= D {'yes' if min(tasks) >= added else 'no'}, joined {len(joined)}/{len(profiling)}: "
        f"{'meets the goal' if ok else 'MISSES the goal'}"
    )


if __name__ == "__main__":
    main()
