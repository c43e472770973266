"""The order the xdist workers take the test modules in (suite_order.py): the slowest first, so that the long
modules (the container test, the real-server module) do not start last and run alone at the end."""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import suite_order

REPO = Path(__file__).resolve().parents[1]


@dataclass
class ItemDouble:
    """TEST DOUBLE of a collected pytest item: its node id and its marker names, all suite_order reads."""

    nodeid: str
    markers: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


def _modules(items: list[ItemDouble]) -> list[str]:
    order: list[str] = []
    for item in items:
        module = item.nodeid.split("::")[0]
        if module not in order:
            order.append(module)
    return order


def test_listed_modules_lead_then_unlisted_end_to_end_ones_then_the_most_tests_first() -> None:
    collected = [
        ItemDouble("tests/test_a_fast.py::test_one"),
        ItemDouble("tests/test_a_fast.py::test_two"),
        ItemDouble("tests/test_b_many.py::test_1"),
        ItemDouble("tests/test_b_many.py::test_2"),
        ItemDouble("tests/test_b_many.py::test_3"),
        ItemDouble("tests/test_container_run.py::test_engine", {"container", "e2e"}),
        ItemDouble("tests/test_new_sweeps.py::test_fast_part"),
        ItemDouble("tests/test_new_sweeps.py::test_a_sweep", {"e2e"}),
        ItemDouble("tests/test_real_server.py::test_serve", {"real_server", "e2e"}),
        ItemDouble("tests/test_real_server.py::test_compare", {"real_server", "e2e"}),
    ]
    ordered = suite_order.ordered(collected)  # type: ignore[arg-type]
    assert _modules(ordered) == [
        "tests/test_container_run.py",  # listed first
        "tests/test_real_server.py",
        "tests/test_new_sweeps.py",  # not listed, but it launches AIPerf: before the fast modules
        "tests/test_b_many.py",  # then the most tests first
        "tests/test_a_fast.py",
    ]
    # each module's tests keep their order
    assert [i.nodeid for i in ordered if "real_server" in i.nodeid][-1].endswith("test_compare")
    assert [i.nodeid.split("::")[1] for i in ordered if "new_sweeps" in i.nodeid] == ["test_fast_part", "test_a_sweep"]
    assert sorted(i.nodeid for i in ordered) == sorted(i.nodeid for i in collected)  # nothing dropped or added


def test_every_listed_module_exists() -> None:
    """A renamed module would otherwise fall back to the default place without a word."""
    missing = [name for name in suite_order.SLOWEST_FIRST if not (REPO / "tests" / name).is_file()]
    assert missing == []
    assert len(set(suite_order.SLOWEST_FIRST)) == len(suite_order.SLOWEST_FIRST)


def test_the_workers_take_the_modules_in_collection_order() -> None:
    """xdist's default reorders the modules by their number of tests, most first, whatever the collection order:
    the container test (five tests) came 64th of 85 modules and the real-server module (eight) 54th."""
    addopts = shlex.split(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    )
    assert "--no-loadscope-reorder" in addopts
    assert addopts[addopts.index("--dist") + 1] == "loadfile"


def test_this_run_collected_in_that_order(request: pytest.FixtureRequest) -> None:
    """The hook is in place: this session's items are in suite_order's order."""
    items = list(request.session.items)
    assert items == suite_order.ordered(items)
