"""Fixtures shared by the test modules (plain helper functions are in helpers.py; the runs made once per test run,
whatever the number of xdist workers, are in shared_runs.py), AIPerf's interpreter without torch (aiperf_view.py),
the scratch folders in memory (scratch_root.py) and the AIPerf launch counter.

`TRTMC_TEST_COUNT_AIPERF=FILE .venv/bin/python -m pytest ...` puts a wrapper in aiperf's place
($TRTMC_VIDEOQA_AIPERF) that appends one JSON line per launch to FILE (the test that launched it, its arguments)
before it runs the real aiperf (under the view's interpreter where there is one), and the summary at the end
counts them by test module. Off unless asked for: it changes the aiperf path the runs record.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import aiperf_view
import pytest
import restore_bytecode  # noqa: F401 - before any test module is imported
import scratch_root
import suite_order

# What the fixtures below need is imported in them: the controller of an xdist run loads this file too, before it
# starts the workers, and runs no test (shared_runs.py alone brings FastAPI, httpx, NumPy and PyAV: about 0.5 s of CPU
# the run waited for). Each worker imports them with the first test module that does.
if TYPE_CHECKING:
    import shared_runs
    from media_clips import Clips

    from trtmc_videoqa.reference import ReferenceServer

# A test run started in the background by a non-interactive shell (`cmd &`, nohup, some CI runners) inherits
# SIGINT ignored, and an ignored signal stays ignored across exec: every process a test starts would then shrug off
# the Ctrl-C the signal tests send it. A handler, unlike SIG_IGN, is reset to the default on exec, so each child
# starts with SIGINT live, as it does from a terminal. (Each xdist worker loads this file too.)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The garbage collector runs every 10,000 allocations, not 700, from here on (the test modules' imports included), and
# from the end of collection leaves alone what collection built (pytest_collection_finish). Each worker spent 1.3-1.8 s
# of CPU in about 1,300 collections, 1.0-1.4 s of it in the ten full ones that walked every imported module again;
# about 0.6 s with both (gc.callbacks, the fast lane), and its collection 0.3 s less. Garbage is still collected, in
# larger batches; no test relies on when a collection runs (none calls gc.collect or holds a weak reference).
GC_THRESHOLDS = (10_000, 10, 10)
gc.set_threshold(*GC_THRESHOLDS)

COUNT_ENV = "TRTMC_TEST_COUNT_AIPERF"
AIPERF_ENV = aiperf_view.AIPERF_ENV
VIEW = pytest.StashKey[Path | None]()

COUNTING_AIPERF = """#!{python}
# TEST WRAPPER for aiperf (tests/conftest.py, {count_env}): one JSON line per launch to {log}, then aiperf itself
import re
import sys
{preload}
from aiperf.cli import app
if __name__ == "__main__":
    import json, os, time
    with open({log!r}, "a") as log:
        test = os.environ.get("PYTEST_CURRENT_TEST")
        log.write(json.dumps({{"test": test, "argv": sys.argv[1:3], "at": time.time()}}) + "\\n")
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(app())
"""


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # xdist workers inherit the controller's environment
        return
    # AIPerf without torch, where a test that launches it may run (aiperf_view.py says why)
    view = config.stash[VIEW] = aiperf_view.install(config.option.markexpr)
    log = os.environ.get(COUNT_ENV)
    if not log:
        return
    # In the view, the wrapper takes the place of its aiperf script: the run then records one environment for
    # aiperf and its interpreter, which the publish step names $AIPERF_VENV (a wrapper elsewhere left the view's
    # interpreter as a path of this machine in the public files).
    beside_log = Path(log).resolve().with_name(Path(log).name + ".bin") / "aiperf"
    wrapper = Path(os.environ[AIPERF_ENV]) if view else beside_log
    python = aiperf_view.python_of(str(wrapper)) if view else sys.executable
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(
        COUNTING_AIPERF.format(
            python=python, count_env=COUNT_ENV, log=str(Path(log).resolve()), preload=aiperf_view.PRELOAD
        )
    )
    wrapper.chmod(0o755)
    os.environ[AIPERF_ENV] = str(wrapper)


def pytest_report_header() -> str:
    return scratch_root.HEADER


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected: the order of what runs
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest modules first, so the xdist workers finish together (suite_order.py says how)."""
    items[:] = suite_order.ordered(items)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (the imported packages, the test modules, their items) lives as long as the process: the
    garbage collector stops walking it (GC_THRESHOLDS says what that saves)."""
    gc.collect()  # what is left of collection's garbage first: only what is alive is frozen
    gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Each process's objects are left to its exit, as the command line leaves its own (cli/main.py): Python's
    exit would otherwise walk every object a worker still holds in its last garbage collections, about a second
    for each worker while the run waits for the last of them."""
    aiperf_view.remove(config.stash.get(VIEW, None))
    gc.freeze()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    log = os.environ.get(COUNT_ENV)
    if not log or hasattr(config, "workerinput"):
        return
    lines = Path(log).read_text().splitlines() if Path(log).is_file() else []
    launches = [json.loads(line) for line in lines]
    profiles = [launch for launch in launches if launch["argv"][:1] == ["profile"]]
    by_module = Counter((launch["test"] or "?").split("::")[0] for launch in profiles)
    terminalreporter.write_sep("-", f"AIPerf launches ({COUNT_ENV}={log}): {len(profiles)} `aiperf profile`")
    for module, count in sorted(by_module.items()):
        terminalreporter.write_line(f"{count:4d}  {module}")


@pytest.fixture(scope="session")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Clips:
    """Every small media test clip (media_clips.py says what they show), made once per session."""
    from media_clips import build_clips

    return build_clips(tmp_path_factory.mktemp("media-clips"))


@pytest.fixture(scope="module")
def server() -> Iterator[ReferenceServer]:
    """The reference endpoint with its defaults, in this process on a free loopback port, one per test module."""
    from trtmc_videoqa.reference import ReferenceConfig, ReferenceServer

    with ReferenceServer(ReferenceConfig()) as running:
        yield running


# --- runs made once per test run (shared_runs.py says what each is and who reads it) ---------------------------


def _shared() -> ModuleType:
    """shared_runs, imported by the first fixture that makes or reads a run (the note at the top says why)."""
    import shared_runs

    return shared_runs


@pytest.fixture(scope="session")
def self_test_run(tmp_path_factory: pytest.TempPathFactory) -> shared_runs.SharedRun:
    return _shared().self_test(tmp_path_factory)


@pytest.fixture(scope="session")
def quick_http_run(tmp_path_factory: pytest.TempPathFactory) -> shared_runs.SharedRun:
    return _shared().quick_self_test_over_http(tmp_path_factory)


@pytest.fixture(scope="session")
def trtmc_rows_run(tmp_path_factory: pytest.TempPathFactory) -> shared_runs.SharedRun:
    return _shared().trtmc_every_row(tmp_path_factory)


@pytest.fixture(scope="session")
def trtmc_resumed_run(tmp_path_factory: pytest.TempPathFactory) -> shared_runs.SharedRun:
    return _shared().trtmc_resumed_after_faults(tmp_path_factory)


@pytest.fixture(scope="session")
def native_route_run(tmp_path_factory: pytest.TempPathFactory) -> shared_runs.SharedRun:
    return _shared().endpoint_with_native_route(tmp_path_factory)


@pytest.fixture(scope="session")
def auto_key_run(tmp_path_factory: pytest.TempPathFactory) -> shared_runs.SharedRun:
    return _shared().endpoint_auto_with_key(tmp_path_factory)


@pytest.fixture(scope="session")
def repeated_runs_run(tmp_path_factory: pytest.TempPathFactory) -> shared_runs.SharedRun:
    return _shared().endpoint_repeated_runs(tmp_path_factory)


@pytest.fixture(scope="session")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> shared_runs.SharedRun:
    return _shared().endpoint_sweep(tmp_path_factory)


@pytest.fixture(scope="session")
def key_file_run(tmp_path_factory: pytest.TempPathFactory) -> shared_runs.SharedRun:
    return _shared().endpoint_with_key_file(tmp_path_factory)
