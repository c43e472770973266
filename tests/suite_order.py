"""The order the test modules are handed to the xdist workers: the slowest first, so the workers finish together.

Under `--dist loadfile` a module is one unit of work, and the workers take units in collection order as they
drain. pytest-xdist's own default (`--loadscope-reorder`) puts the modules with the most tests first, which sent the
container test (4 to 16 minutes, five tests) and the real-server module (2 to 10 minutes, eight tests) near the end,
where each ran alone while the other workers had nothing left. pyproject's addopts turns that off
(`--no-loadscope-reorder`) and `conftest.py` orders the collection here instead:

1. the modules of `SLOWEST_FIRST`, in its order (measured: bench/README.md, "Suite timings");
2. any other module with a test marked container, real_server or e2e (one that launches AIPerf: a new end-to-end
   module lands here, before the fast ones, until it is measured and listed);
3. the rest with the most tests first, as xdist would have it.

It orders what is left after `-m` and `-k` have deselected (in the fast lane no module has a slow marker left, so
the listed ones come first and the rest by their number of selected tests). Within a module the tests keep their
order. The order is the same in every worker (xdist checks that each collected the same list).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

# The container and real-server modules lead: each takes minutes on one worker and cannot be split (the image's
# build and three AIPerf runs in it; four `transformers serve` starts and five AIPerf runs). Then the end-to-end
# modules by the time their tests took in a whole suite (`--durations=0`, setup, call and teardown summed per module;
# a shared run counts for the module that made it), with their AIPerf launches, then the fast lane's heaviest.
# Measured on 2026-12-07 under load (bench/README.md, "Suite timings"): compare the figures with each other only.
SLOWEST_FIRST: tuple[str, ...] = (
    "test_container_run.py",  # 948 s from nothing (about 70 s alone from a kept image store): build, self-test, stop
    "test_real_server.py",  # 630 s: six AIPerf runs (five since its random-weight run streams, read by two tests)
    "test_gates.py",  # 566 s: ten runs, eight of its own (each failing a gate)
    "test_faults.py",  # 336 s: five runs (three faults, each resumed, one shared)
    "test_qualify.py",  # 321 s: makes the README's self-test (two runs) and more shared runs; --force
    "test_throughput.py",  # 225 s: five runs (the shared sweep's two levels, three repeated runs)
    "test_server_capacity.py",  # 218 s: five runs (three since its scaling test reads the shared sweep)
    "test_streaming.py",  # 160 s: three runs
    "test_staged_rows.py",  # 140 s: three runs (now two: one starts from a shared run's copy)
    "test_faults_answers.py",  # 124 s: three runs
    "test_video_task_request.py",  # 114 s
    "test_hostile_input.py",  # 112 s: makes the shared key-file run, two runs stopped by a signal
    "test_no_orphans.py",  # 105 s: three runs
    "test_faults_server_text.py",  # 102 s: three runs
    "test_row_failures.py",  # 91 s
    "test_faults_fs.py",  # 75 s
    "test_guard_parser.py",  # 73 s
    "test_run_scratch.py",  # 65 s
    "test_video_transport.py",  # 62 s
    "test_accuracy_gate.py",  # 62 s: two runs
    "test_reproduce_commands.py",  # 60 s
    "test_qualify_options.py",  # 58 s
    "test_bounded_reads.py",  # 53 s
    "test_evidence_untouched.py",  # 53 s
    "test_secret_forms.py",  # 44 s
    "test_cli.py",  # 36 s, the fast lane's heaviest module: CLI processes, a terminal, serve-reference
    "test_exit_codes_round3.py",  # 23 s: the 64 MiB --against read, signals
    "test_dagger_module.py",  # 23 s: the Dagger SDK's client
)

SLOW_MARKERS = ("container", "real_server", "e2e")


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def ordered(items: Sequence[pytest.Item]) -> list[pytest.Item]:
    """`items` with their modules in the order above; a module's own tests in their collected order."""
    count: dict[str, int] = {}
    slow: set[str] = set()
    for item in items:
        module = module_of(item)
        count[module] = count.get(module, 0) + 1
        if any(item.get_closest_marker(marker) for marker in SLOW_MARKERS):
            slow.add(module)
    listed = {name: rank for rank, name in enumerate(SLOWEST_FIRST)}
    first_seen = {module: index for index, module in enumerate(count)}

    def rank(module: str) -> tuple[int, int, int]:
        name = module.rsplit("/", 1)[-1]
        if name in listed:
            return (0, listed[name], 0)
        return (1 if module in slow else 2, -count[module], first_seen[module])

    return sorted(items, key=lambda item: rank(module_of(item)))  # stable: a module's tests keep their order
