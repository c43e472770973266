"""Harness overhead: our full `qualify --endpoint` of one checkpoint against bare `aiperf profile`, side by side.

    .venv/bin/python bench/bench_overhead.py [--rounds 3] [--repeats 5] [--warmup 2]

One reference endpoint (a test double) is started first and serves every run; its start-up is in neither figure.
A first `trtmc-videoqa qualify --endpoint URL --model M --workload synthetic` run is the warm-up (page cache,
the tokenizer and input file that the bare runs reuse); it is not counted. Then each round runs, in alternating
order, (1) the full qualify in a fresh --out directory (nothing reused: the aiperf lookup, the local tokenizer,
the clips' probes and strips, the capability check, AIPerf, the join, grading, the reports) and (2) the bare
`aiperf profile` with exactly the argv our run recorded (same input file, tokenizer and settings; only
--artifact-dir differs). Figures are medians of wall time. Goal: at most 1.10x and under 2 s more.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, ReferenceConfig, argv_for_subprocess
from trtmc_videoqa.serving.process import ServerProcess, free_loopback_port

GOAL_RATIO, GOAL_EXTRA_S = 1.10, 2.0
PROFILE = DEFAULT_MODEL_NAME


def aiperf_inside(out: Path) -> float:
    """The wall time of the AIPerf process inside our run, as our run recorded it."""
    return json.loads((out / "checkpoints" / PROFILE / "aiperf" / "outcome.json").read_text())["wall_s"]


def qualify(url: str, out: Path, repeats: int, warmup: int) -> float:
    argv = [
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
        str(repeats),
        "--warmup",
        str(warmup),
    ]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    wall = time.perf_counter() - started
    row = json.loads((out / "checkpoints" / PROFILE / "result.json").read_text())
    if done.returncode != 0 or row["status"] != "endpoint-qualified" or row["reused"]:
        raise SystemExit(f"qualify did not measure cleanly (exit {done.returncode}, {row['status']}):\n{done.stderr}")
    return wall


def bare_argv(out: Path, artifact_dir: Path) -> list[str]:
    """AIPerf's argv exactly as our run recorded it, with its own artifact directory."""
    row = json.loads((out / "checkpoints" / PROFILE / "result.json").read_text())
    argv = shlex.split(row["commands"]["aiperf"])
    argv[argv.index("--artifact-dir") + 1] = str(artifact_dir)
    return argv


def bare(argv: list[str], artifact_dir: Path, expected: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False, stdin=subprocess.DEVNULL, start_new_session=True
    )
    wall = time.perf_counter() - started
    lines = (artifact_dir / "profile_export.jsonl").read_text().splitlines()
    if done.returncode != 0 or len(lines) != expected:
        raise SystemExit(f"bare aiperf did not run cleanly (exit {done.returncode}, {len(lines)} records)")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="measured runs of each (default 3)")
    parser.add_argument("--repeats", type=int, default=5, help="qualify --repeats (default 5, the default run)")
    parser.add_argument("--warmup", type=int, default=2, help="qualify --warmup (default 2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trtmc-videoqa-overhead-") as scratch:
        root = Path(scratch)
        port = free_loopback_port()
        url = f"http://127.0.0.1:{port}"
        config = ReferenceConfig(port=port, records_path=root / "records.jsonl", max_body_bytes=4 * 1024 * 1024)
        with ServerProcess(argv_for_subprocess(config), url=url, log_path=root / "server.log", startup_timeout_s=60):
            first = root / "warm"
            warm = qualify(url, first, args.repeats, args.warmup)
            argv = bare_argv(first, root / "unused")
            plan = json.loads((first / "checkpoints" / PROFILE / "aiperf" / "plan.json").read_text())
            expected = len(plan["requests"])  # warmup and profiling: both are in profile_export.jsonl
            print(f"warm-up qualify (not counted): {warm:.2f} s; {expected} requests per run; endpoint {url}")
            ours: list[float] = []
            theirs: list[float] = []
            outside: list[float] = []  # our wall time minus the AIPerf run inside it
            for index in range(args.rounds):
                order = ("ours", "bare") if index % 2 == 0 else ("bare", "ours")
                for which in order:
                    if which == "ours":
                        ours.append(qualify(url, root / f"ours-{index}", args.repeats, args.warmup))
                        outside.append(ours[-1] - aiperf_inside(root / f"ours-{index}"))
                    else:
                        artifacts = root / f"bare-{index}"
                        argv = bare_argv(first, artifacts)
                        theirs.append(bare(argv, artifacts, expected))
                print(
                    f"round {index + 1}: qualify {ours[-1]:.2f} s (outside its AIPerf run {outside[-1]:.2f} s), "
                    f"bare aiperf {theirs[-1]:.2f} s"
                )
    ours_s, bare_s = statistics.median(ours), statistics.median(theirs)
    ratio, extra = ours_s / bare_s, ours_s - bare_s
    print(
        f"median: qualify {ours_s:.2f} s, bare aiperf profile {bare_s:.2f} s, {extra:+.2f} s "
        f"(goal <= {GOAL_RATIO:.2f}x and < {GOAL_EXTRA_S:.0f} s more); our own work outside AIPerf: median "
        f"{statistics.median(outside):.2f} s"
    )
    print(f"overhead {ratio:.2f}x")


if __name__ == "__main__":
    main()
