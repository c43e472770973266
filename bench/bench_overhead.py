"""Harness overhead: our full `qualify --endpoint` of one checkpoint against bare `aiperf profile`, side by side.

    .venv/bin/python bench/bench_overhead.py [--rounds 3] [--repeats 5] [--warmup 2] [--quick]

One reference endpoint (a test double) is started first and serves every run; its start-up is in neither figure.
A first `trtmc-videoqa qualify --endpoint URL --model M --workload synthetic` run is the warm-up (page cache,
the tokenizer and input file that the bare runs reuse); it is not counted. Then each round runs, in alternating
order, (1) the full qualify in a fresh --out directory (nothing reused: the aiperf lookup, the local tokenizer,
the clips' probes and strips, the capability check, AIPerf, the join, grading, the reports) and (2) the bare
`aiperf profile` with exactly the argv our run recorded (same input file, tokenizer and settings; only
--artifact-dir differs). Figures are medians of wall time. Goal: our own work outside the AIPerf run (our wall time
minus the AIPerf run inside it, from aiperf/outcome.json) at most 0.5 s, printed on the last line; beside it the
ratio to bare AIPerf (it was at most 1.10x and under 2 s more).

The row records AIPerf's command as a user re-runs it: relative to the run's --out folder and naming `aiperf`
(result.json's commands, command.txt). The bare run therefore starts in the warm-up's --out folder, with `aiperf`
resolved as qualify resolves it and AIPerf's environment as qualify gives it.

--quick (about 20 s, for CI): one repeat and one warm-up request, and the warm-up qualify is the measured one
(cold caches: the figure reads higher), then one bare run.

The sweep case, in every round beside the single-level run: one qualify with `--concurrency 1,2` (two AIPerf
runs, docs/throughput.md). Our work outside its AIPerf runs, less the same round's single-level run's, is what the
extra level cost us beyond its AIPerf run; the median over the rounds, paired so that a busy
moment weighs on both sides. Goal: at most 0.2 s per extra level or run, printed on the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trtmc_videoqa.aiperf.locate import locate_aiperf
from trtmc_videoqa.aiperf.tokenizer import aiperf_environment
from trtmc_videoqa.common.pins import load_pins
from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, ReferenceConfig, argv_for_subprocess
from trtmc_videoqa.results.layout import AIPERF_DIR, RESULT_FILE, checkpoints_dir
from trtmc_videoqa.serving.process import ServerProcess, free_loopback_port

GOAL_OUTSIDE_S = 0.5  # our own work outside the AIPerf run, per checkpoint
GOAL_RATIO, GOAL_EXTRA_S = 1.10, 2.0  # the earlier goal, still printed beside it
GOAL_PER_LEVEL_S = 0.2  # our own work for each extra level or repeated run, beyond its AIPerf run
SWEEP = ("--concurrency", "1,2")
LEVELS = 2
PROFILE = DEFAULT_MODEL_NAME


def row_dir(out: Path) -> Path:
    return checkpoints_dir(out) / PROFILE


def aiperf_inside(out: Path) -> float:
    """The wall time of the AIPerf processes inside our run (every level's and run's), as our run recorded it."""
    outcomes = [row_dir(out) / AIPERF_DIR / "outcome.json", *sorted((row_dir(out) / AIPERF_DIR).glob("*/outcome.json"))]
    return sum(json.loads(path.read_text())["wall_s"] for path in outcomes)


def qualify(url: str, out: Path, repeats: int, warmup: int, extra: tuple[str, ...] = ()) -> float:
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
        *extra,
    ]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    wall = time.perf_counter() - started
    result = row_dir(out) / RESULT_FILE
    if done.returncode != 0 or not result.is_file():
        written = "written" if result.is_file() else "not written"
        raise SystemExit(f"qualify failed (exit {done.returncode}, {result} {written}):\n{done.stderr}")
    row = json.loads(result.read_text())
    if row["status"] != "endpoint-qualified" or row["reused"]:
        raise SystemExit(
            f"qualify did not measure cleanly ({row['status']}, reused {row['reused']}: {row['status_reason']}):\n"
            f"{done.stderr}"
        )
    return wall


def bare_argv(out: Path, artifact_dir: Path, executable: str) -> list[str]:
    """AIPerf's argv exactly as our run recorded it (paths relative to `out`), with the resolved executable and its
    own artifact directory."""
    row = json.loads((row_dir(out) / RESULT_FILE).read_text())
    argv = list(row["commands"]["aiperf"]["argv"])  # recorded as a list, the program by its name
    while argv and (argv[0] == "env" or argv[0] == "-u"):  # `env -u HF_HUB_OFFLINE ...`: aiperf_environment does it
        argv = argv[2:] if argv[0] == "-u" else argv[1:]
    if Path(argv[0]).name != "aiperf" or "--artifact-dir" not in argv:
        raise SystemExit(f"the recorded AIPerf command is not the one this bench expects: {argv[:3]} ...")
    argv[0] = executable
    argv[argv.index("--artifact-dir") + 1] = str(artifact_dir.resolve())
    return argv


def bare(argv: list[str], cwd: Path, artifact_dir: Path, expected: int) -> float:
    scratch = artifact_dir.with_name(artifact_dir.name + "-tmp")  # AIPerf's aiperf_mmap_* folder, not the machine's
    scratch.mkdir()
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=aiperf_environment({**os.environ, "TMPDIR": str(scratch)}),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    wall = time.perf_counter() - started
    export = artifact_dir / "profile_export.jsonl"
    records = len(export.read_text().splitlines()) if export.is_file() else 0
    if done.returncode != 0 or records != expected:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise SystemExit(
            f"bare aiperf did not run cleanly (exit {done.returncode}, {records}/{expected} records in {export}):\n"
            f"{tail}"
        )
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="measured runs of each (default 3)")
    parser.add_argument("--repeats", type=int, default=5, help="qualify --repeats (default 5, the default run)")
    parser.add_argument("--warmup", type=int, default=2, help="qualify --warmup (default 2)")
    parser.add_argument("--quick", action="store_true", help="one of each, one repeat; about 20 s (CI)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.repeats, args.warmup = 1, 1, 1
    executable = locate_aiperf(expected_version=load_pins().aiperf.version).executable
    with tempfile.TemporaryDirectory(prefix="trtmc-videoqa-overhead-") as scratch:
        root = Path(scratch)
        port = free_loopback_port()
        url = f"http://127.0.0.1:{port}"
        config = ReferenceConfig(port=port, records_path=root / "records.jsonl", max_body_bytes=4 * 1024 * 1024)
        with ServerProcess(argv_for_subprocess(config), url=url, log_path=root / "server.log", startup_timeout_s=60):
            first = root / "warm"
            warm = qualify(url, first, args.repeats, args.warmup)
            plan = json.loads((row_dir(first) / AIPERF_DIR / "plan.json").read_text())
            expected = len(plan["requests"])  # warmup and profiling: both are in profile_export.jsonl
            counted = "counted (--quick)" if args.quick else "not counted"
            print(f"warm-up qualify ({counted}): {warm:.2f} s; {expected} requests per run; endpoint {url}")
            ours: list[float] = []
            theirs: list[float] = []
            outside: list[float] = []  # our wall time minus the AIPerf run inside it
            per_level: list[float] = []  # each round's sweep outside its AIPerf runs, less its single run's
            for index in range(args.rounds):
                order = ("ours", "bare") if index % 2 == 0 else ("bare", "ours")
                for which in order:
                    if which == "ours" and args.quick:
                        ours.append(warm)
                        outside.append(warm - aiperf_inside(first))
                    elif which == "ours":
                        ours.append(qualify(url, root / f"ours-{index}", args.repeats, args.warmup))
                        outside.append(ours[-1] - aiperf_inside(root / f"ours-{index}"))
                    else:
                        artifacts = root / f"bare-{index}"
                        theirs.append(bare(bare_argv(first, artifacts, executable), first, artifacts, expected))
                swept = root / f"sweep-{index}"
                sweep_wall = qualify(url, swept, args.repeats, args.warmup, SWEEP)
                sweep_outside = sweep_wall - aiperf_inside(swept)
                per_level.append((sweep_outside - outside[-1]) / (LEVELS - 1))  # levels beyond the first
                print(
                    f"round {index + 1}: qualify {ours[-1]:.2f} s (outside its AIPerf run {outside[-1]:.2f} s), "
                    f"bare aiperf {theirs[-1]:.2f} s; sweep {sweep_wall:.2f} s (outside its AIPerf runs "
                    f"{sweep_outside:.2f} s, {per_level[-1]:+.2f} s a level)"
                )
    ours_s, bare_s = statistics.median(ours), statistics.median(theirs)
    ratio, extra = ours_s / bare_s, ours_s - bare_s
    print(
        f"median: qualify {ours_s:.2f} s, bare aiperf profile {bare_s:.2f} s, {extra:+.2f} s "
        f"(earlier goal <= {GOAL_RATIO:.2f}x and < {GOAL_EXTRA_S:.0f} s more)"
    )
    print(f"overhead {ratio:.2f}x")
    print(f"outside AIPerf {statistics.median(outside):.2f} s (goal <= {GOAL_OUTSIDE_S:.2f} s)")
    reads = " (quick: against the cold warm-up run, so it reads low)" if args.quick else ""
    print(
        f"sweep {' '.join(SWEEP)}: per extra level {statistics.median(per_level):+.2f} s, the median of "
        f"{len(per_level)} paired round(s){reads} (goal <= {GOAL_PER_LEVEL_S:.2f} s)"
    )


if __name__ == "__main__":
    main()
