"""A second run on a busy output directory is refused fast. Goal: under 10 s from the command to its exit 2.

    .venv/bin/python bench/bench_busy.py [--runs 5] [--quick]

A helper process holds the output directory's lock as a live run does (its pid in the lock file, an flock on it
while it lives). Then the README's main job, `trtmc-videoqa qualify --out DIR`, runs `--runs` times against that
directory, each a fresh process as a user types it; each must exit 2 saying the directory is in use by that pid,
with no traceback, and leave the holder's lock as it was. The figure is the median wall time, process start
included. The goal is the bound two tests used to assert on the same refusal (tests/test_qualify.py and
tests/test_faults.py, under 10 s each). --quick (a few seconds, for CI): one run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trtmc_videoqa.common.output_lock import LOCK_NAME

GOAL_S = 10.0
HOLD_LOCK = (
    "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o644); "
    "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, str(os.getpid()).encode()); print('held', flush=True); "
    "time.sleep(600)"
)


def refused(argv: list[str], out: Path, holder: int) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    said = f"in use by another run (pid {holder})" in done.stderr
    if done.returncode != 2 or not said or "Traceback" in done.stderr:
        raise SystemExit(f"the busy directory was not refused as it should be (exit {done.returncode}):\n{done.stderr}")
    if (out / LOCK_NAME).read_text() != str(holder):
        raise SystemExit("the refused run changed the holder's lock file")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one run (CI)")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    with tempfile.TemporaryDirectory(prefix="trtmc-videoqa-busy-") as scratch:
        out = Path(scratch) / "out"
        out.mkdir()
        argv = [str(Path(sys.executable).parent / "trtmc-videoqa"), "qualify", "--out", str(out)]
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(out / LOCK_NAME)], stdout=subprocess.PIPE, text=True
        )
        try:
            if holder.stdout is None or holder.stdout.readline().strip() != "held":
                raise SystemExit("the helper did not take the lock")
            timings = [refused(argv, out, holder.pid) for _ in range(runs)]
        finally:
            holder.kill()
            holder.wait()
    print(f"refusals: {', '.join(f'{t:.2f}' for t in timings)} s; each exit 2, naming the holder, lock left alone")
    median = statistics.median(timings)
    print(f"busy output directory refused: {median:.2f} s (goal < {GOAL_S:g} s) ratio {median / GOAL_S:.2f}")


if __name__ == "__main__":
    main()
