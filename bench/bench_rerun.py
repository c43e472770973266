"""A re-run with unchanged inputs: the self-test's second `trtmc-videoqa qualify`, beside its first. Goal: < 1 s.

    .venv/bin/python bench/bench_rerun.py [--runs 5] [--out DIR] [--quick]

The first run is the README's main job (`trtmc-videoqa qualify --out DIR`: the reference endpoint, AIPerf on the
synthetic and Big Buck Bunny workloads, grading, reports); it is timed once. Then the same command runs again
`--runs` times, each a fresh process, as a user types it. A re-run must reuse every row and launch nothing: the
bench checks that every row says "(reused)", that no row's result, AIPerf outcome or raw log (everything under the
row's private/ folder: AIPerf's log, its own log folder) was rewritten, and that nothing under the run's private/
folder was either (the reference endpoint's log and records: no server started). It refuses to measure when there
is nothing to watch (an output layout it does not know). This goal replaces the test suite's old wall-time bound on
the same re-run (under 15 s). `--quick` (about 15 s, for CI) qualifies only the synthetic workload with one repeat
and re-runs it twice (a faster set-up; the re-run figure is then of that smaller run).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trtmc_videoqa.results.layout import AIPERF_DIR, PRIVATE_DIR, RESULT_FILE, checkpoints_dir

GOAL_S = 1.0


def run(argv: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    return time.perf_counter() - started, done


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


def untouched(out: Path) -> dict[str, int]:
    """mtimes of what a measurement would rewrite: every row's result, AIPerf outcome and raw logs (its private/
    folder), and the run's private/ folder (the reference endpoint's log and records)."""
    rows = sorted(result.parent for result in checkpoints_dir(out).glob(f"*/{RESULT_FILE}"))
    watched: list[Path] = []
    for row in rows:
        raw = files_under(row / PRIVATE_DIR)
        outcome = row / AIPERF_DIR / "outcome.json"
        if not raw or not outcome.is_file():
            raise SystemExit(
                f"{row.name}: no {AIPERF_DIR}/outcome.json or no {PRIVATE_DIR}/ files to watch: update the bench"
            )
        watched += [row / RESULT_FILE, outcome, *raw]
    server = files_under(out / PRIVATE_DIR)
    if not rows or not any(path.name == "server.log" for path in server):
        raise SystemExit(f"{out}: no rows or no server.log under {PRIVATE_DIR}/ to watch: update the bench")
    return {str(path): path.stat().st_mtime_ns for path in [*watched, *server]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, help="re-runs (default 5; 2 with --quick)")
    parser.add_argument("--out", type=Path, help="artifact directory (default: a temporary one)")
    parser.add_argument("--quick", action="store_true", help="synthetic workload only, one repeat, 2 re-runs (CI)")
    args = parser.parse_args()
    runs = args.runs or (2 if args.quick else 5)
    with tempfile.TemporaryDirectory(prefix="trtmc-videoqa-rerun-") as scratch:
        out = args.out or Path(scratch) / "artifacts"
        argv = [str(Path(sys.executable).parent / "trtmc-videoqa"), "qualify", "--out", str(out)]
        if args.quick:
            argv += ["--workload", "synthetic", "--repeats", "1", "--warmup", "1"]
        first, done = run(argv)
        if done.returncode != 0:
            raise SystemExit(f"the first run failed (exit {done.returncode}):\n{done.stderr}")
        rows = sum(1 for line in done.stdout.splitlines() if line.startswith("reference-self-test."))
        print(f"first run (measures): {first:.2f} s, {rows} rows: {' '.join(argv[1:])}")
        before = untouched(out)
        timings = []
        for _ in range(runs):
            wall, again = run(argv)
            reused = again.stdout.count("(reused)")
            if again.returncode != 0 or reused != rows:
                raise SystemExit(
                    f"the re-run did not reuse every row (exit {again.returncode}, {reused}/{rows}):\n"
                    f"{again.stdout}{again.stderr}"
                )
            timings.append(wall)
        after = untouched(out)
        launched = "none" if after == before else "SOMETHING WAS MEASURED AGAIN"
        print(
            f"re-runs: {', '.join(f'{t:.2f}' for t in timings)} s; every row reused; AIPerf and servers launched: "
            f"{launched} ({len(before)} files watched)"
        )
    median = statistics.median(timings)
    print(
        f"re-run with unchanged inputs: {median:.2f} s (goal < {GOAL_S:g} s), {median / first:.3f} of the first "
        f"run ({first:.1f} s), no AIPerf launched: {'yes' if after == before else 'NO'}"
    )


if __name__ == "__main__":
    main()
