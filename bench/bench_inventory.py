"""Audit of a TRTMC-sized tree, in-process. Goal: a full checkout (~6,000 files, ~220 manifests) under 1 s.

    .venv/bin/python bench/bench_inventory.py [--trtmc PATH] [--runs 5]

Without --trtmc it builds a tree of that size from the test fixtures (families replicated, filler source files
beside them) in a temporary directory; with --trtmc it audits that checkout too. The figure is the median.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from trtmc_videoqa.inventory import run_inventory

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
GOAL_S = 1.0


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trtmc", type=Path, help="also audit this real checkout")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
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
