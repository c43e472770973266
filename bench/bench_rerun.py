"""A re-run with unchanged inputs: the self-test's second `trtmc-videoqa qualify`, beside its first. Goal: < 1 s.

    .venv/bin/python bench/bench_rerun.py [--runs 5] [--out DIR] [--quick]

The first run is the README's main job (`trtmc-videoqa qualify --out DIR`: the reference endpoint, AIPerf on the
synthetic and Big Buck Bunny workloads, grading, reports); it is timed once. Then the same command runs again
`--runs` times, each a fresh process, as a user types it. A re-run must reuse every row and launch nothing: the
bench checks that every row says "(reused)", that no row's AIPerf log, outcome or result was rewritten, and that
the reference endpoint's log was not rewritten either (no server started). `--quick` qualifies only the synthetic
workload with one repeat (a faster set-up; the re-run figure is then of that smaller run).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 1.0


def run(argv: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    return time.perf_counter() - started, done


def untouched(out: Path) -> dict[str, int]:
    """mtimes of what a measurement would rewrite: every row's AIPerf log, outcome and result, the server log."""
    watched = [
        *out.glob("checkpoints/*/aiperf/aiperf.log"),
        *out.glob("checkpoints/*/aiperf/outcome.json"),
        *out.glob("checkpoints/*/result.json"),
        *out.glob("reference/server.log"),
    ]
    return {str(path): path.stat().st_mtime_ns for path in watched}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, help="artifact directory (default: a temporary one)")
    parser.add_argument("--quick", action="store_true", help="synthetic workload only, one repeat")
    args = parser.parse_args()
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
        for _ in range(args.runs):
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
            f"{launched}"
        )
    median = statistics.median(timings)
    print(
        f"re-run with unchanged inputs: {median:.2f} s (goal < {GOAL_S:g} s), {median / first:.3f} of the first "
        f"run ({first:.1f} s), no AIPerf launched: {'yes' if after == before else 'NO'}"
    )


if __name__ == "__main__":
    main()
