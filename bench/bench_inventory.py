"""Audit of a TRTMC-sized tree, in-process. Goal: a full checkout (~6,000 files, ~220 manifests) under 1 s.

    .venv/bin/python bench/bench_inventory.py [--trtmc PATH] [--runs 5] [--quick]

Without --trtmc it builds a tree of that size from the test fixtures (families replicated, filler source files
beside them) in a temporary directory; with --trtmc it audits that checkout too. The figure is the median.

Before it, three smaller goals that used to be wall-time asserts in the tests, each printed against its goal:
  * the audit of each fixture tree the tests use (tests/fixtures/trtmc_families, trtmc_e2e): under 1 s;
  * the time-axis marker search on long frame classes (no catastrophic backtracking): under 1 s;
  * the native requests read with `ast` from a 300-branch task adapter (the Task registry's helper): under 5 s.
--quick (a few seconds, for CI): one run of each instead of the median of --runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from trtmc_videoqa.inventory import run_inventory
from trtmc_videoqa.inventory.catalog import TASK_ADAPTERS
from trtmc_videoqa.inventory.family_source import TIME_AXIS
from trtmc_videoqa.inventory.task_requests import native_requests

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
GOAL_S = 1.0
FIXTURE_GOAL_S, TIME_AXIS_GOAL_S, ADAPTER_GOAL_S = 1.0, 1.0, 5.0
ADAPTER_BRANCHES = 300


def build_large_tree(root: Path, copies: int = 12, filler_per_family: int = 26) -> Path:
    """Replicate the fixture families until the tree has about 220 manifests and 6,000 files."""
    source = FIXTURES / "trtmc_families"
    shutil.copytree(source / "apps", root / "apps")
    for family in sorted((source / "families").iterdir()):
        for copy in range(copies):
            target = root / "families" / f"{family.name}{copy}"
            shutil.copytree(family, target)
            for manifest in (target / "tests" / "manifests").glob("*.json"):
                manifest.rename(manifest.with_name(f"{manifest.stem}-c{copy}.json"))
            for index in range(filler_per_family):
                (target / "tests" / f"test_filler_{index}.py").write_text("def test():\n    assert True\n" * 20)
                (target / "runtime" / f"kernel_{index}.cpp").parent.mkdir(exist_ok=True)
                (target / "runtime" / f"kernel_{index}.cpp").write_text("int kernel() { return 0; }\n" * 40)
    return root


def median_seconds(path: Path, runs: int) -> tuple[float, int, int]:
    times = []
    inventory = None
    for _ in range(runs):
        start = time.perf_counter()
        inventory = run_inventory(path)
        times.append(time.perf_counter() - start)
    files = sum(1 for p in path.rglob("*") if p.is_file())
    return statistics.median(times), files, inventory.summary.rows


def median_of(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_axis_search(runs: int) -> float:
    """The time-axis markers on 10,000 lines of frame classes with no time axis in them (the test's text)."""
    body = "".join(f"        field_{i} = {i}\n\n" for i in range(2000))
    text = ("class FooFrame:\n" + body + "x = 1\nstruct BarFrame {\n" + "  int x;\n" * 2000 + "};\n") * 5

    def search() -> None:
        if TIME_AXIS.regex.search(text) is not None:
            raise SystemExit("the time-axis markers matched text without a time axis")

    return median_of(runs, search)


def large_adapter(root: Path, runs: int) -> float:
    """native_requests on a task adapter of 300 Tasks, each run on a fresh file (the parse is cached per file)."""
    branches = "".join(
        f"    if task == 'task_{n}':\n        return {{**_text_part(case, root), 'field_{n}': 1}}\n"
        for n in range(ADAPTER_BRANCHES)
    )
    helper = "def _text_part(case, root):\n    return {'prompt': 1}\n\n\n"
    text = helper + "def _request(task, case, root):\n" + branches
    checkouts = []
    for run in range(runs):
        checkout = root / f"checkout-{run}"
        (checkout / TASK_ADAPTERS).parent.mkdir(parents=True)
        (checkout / TASK_ADAPTERS).write_text(text, encoding="utf-8")
        checkouts.append(checkout)
    times = []
    for checkout in checkouts:
        start = time.perf_counter()
        requests = native_requests(checkout)
        times.append(time.perf_counter() - start)
        if len(requests) != ADAPTER_BRANCHES or requests["task_7"].fields != ["field_7", "prompt"]:
            raise SystemExit(f"the adapter read {len(requests)} requests, not {ADAPTER_BRANCHES} as written")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trtmc", type=Path, help="also audit this real checkout")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one run of each (CI)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    for name in ("trtmc_families", "trtmc_e2e"):
        fixture, fixture_files, fixture_rows = median_seconds(FIXTURES / name, args.runs)
        print(
            f"audit of the fixture tree {name}, {fixture_files} files, {fixture_rows} manifests: "
            f"{fixture * 1000:.0f} ms (goal < {FIXTURE_GOAL_S * 1000:.0f} ms)"
        )
    search = time_axis_search(args.runs)
    print(f"time-axis markers on long frame classes: {search * 1000:.0f} ms (goal < {TIME_AXIS_GOAL_S * 1000:.0f} ms)")
    with tempfile.TemporaryDirectory() as temporary:
        read = large_adapter(Path(temporary), args.runs)
    print(f"native requests of a {ADAPTER_BRANCHES}-Task adapter: {read * 1000:.0f} ms (goal < {ADAPTER_GOAL_S:g} s)")
    with tempfile.TemporaryDirectory() as temporary:
        tree = build_large_tree(Path(temporary) / "trtmc")
        seconds, files, rows = median_seconds(tree, args.runs)
        print(f"audit of a generated tree, {files} files, {rows} manifests: {seconds * 1000:.0f} ms")
    if args.trtmc:
        real, real_files, real_rows = median_seconds(args.trtmc, args.runs)
        print(f"audit of {args.trtmc}, {real_files} files, {real_rows} manifests: {real * 1000:.0f} ms")
        seconds = max(seconds, real)
    print(f"audit: {seconds * 1000:.0f} ms (goal < {GOAL_S * 1000:.0f} ms) ratio {seconds / GOAL_S:.2f}")


if __name__ == "__main__":
    main()
