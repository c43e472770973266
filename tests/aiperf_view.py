"""AIPerf's interpreter for the test run: the test environment without torch, where the `real-server` extra put it.

transformers 5 imports torch whenever torch is installed, and AIPerf 0.13.0 loads its tokenizer through transformers
three times a run (the main process, the dataset manager, the record processor): with torch, about 10 s more CPU per
AIPerf run of about 30 (measured on 2 cores, bench/README.md, "Suite timings"), and the suite launches AIPerf about
fifty times. AIPerf needs no torch: a plain install of this package (`pip install -e .`) has none, and the container
runs aiperf in an environment of its own (containers/install-python.sh). torch comes only with the `real-server`
extra, which .ci/run installs into the test environment for `transformers serve`.

So where torch is installed, the run gives AIPerf a view of the test environment without the extra's torch packages:
a virtual environment in a temporary folder whose site-packages holds a link to each entry of the test environment's
but torch's (the same files, nothing installed or copied), and an `aiperf` console script as pip writes it, with one
import more (below). The package finds it through $TRTMC_VIDEOQA_AIPERF, as it finds the container's. A test that
sets that variable itself still wins. `TRTMC_TEST_AIPERF_VIEW=0` turns the view off.

The view's `aiperf` imports transformers' tokenizer classes before AIPerf's own entry point (`PRELOAD`). AIPerf
0.13.0 forks its services on Linux, and the dataset manager and the record processor each imported transformers
after the fork, for their tokenizer: now they inherit it. The same AIPerf, arguments and files; about a third less
CPU a run (one `qualify --workload synthetic --repeats 1 --warmup 1`: 6.9–7.3 s of CPU before, 4.6–5.0 s after;
bench/README.md, "fourth round"). It then imports the AIPerf modules its services run from and freezes what is
loaded (`gc.freeze`): each timing-critical service AIPerf forks runs `gc.collect()` three times as it starts (and the
dataset manager twice once its dataset is sent), and with transformers inherited each of those walked every object
the parent had loaded, about a sixth of a run's CPU; frozen objects are never walked. About a sixth less CPU again
(bench/README.md, "fifth round"). The collector is off while those modules load (the objects they make are
frozen at once, so a collection then only walked what was about to be frozen) and on again before AIPerf's app
runs: about 0.3 s less CPU a run (bench/README.md, "sixth round").
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import sysconfig
import tempfile
import venv
from pathlib import Path

AIPERF_ENV = "TRTMC_VIDEOQA_AIPERF"
SWITCH_ENV = "TRTMC_TEST_AIPERF_VIEW"
MADE_ENV = "TRTMC_TEST_AIPERF_VIEW_DIR"  # set by the controller once it made the view: the workers read it
# What the real-server extra installs that transformers would import: torch and its companions (their packages,
# dist-info folders and bundled libraries). torch's CUDA wheels (nvidia-*) are loaded only by torch.
LEFT_OUT = re.compile(r"^(torch|torchvision|torchcodec|torchgen|functorch|triton)([-.].*)?$")
# Run by the view's aiperf before AIPerf's app: what the services it forks would each import after the fork, loaded
# with the garbage collector off, then frozen for it to leave alone, and the collector on again (above).
PRELOAD = """import gc
gc.disable()
from transformers import AutoTokenizer, PreTrainedTokenizerFast  # noqa: F401
import aiperf.cli, aiperf.common.bootstrap, aiperf.controller, aiperf.dataset.dataset_manager  # noqa: E401, F401
gc.freeze()
gc.enable()"""
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
{preload}
from aiperf.cli import app
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(app())
"""


def launches_aiperf(markexpr: str) -> bool:
    """Whether `-m markexpr` lets a test marked e2e alone run (every test that launches AIPerf is marked e2e). The
    fast lane's leaves none, and there the view only costs: the package reads a separate interpreter's aiperf
    metadata in a child process, where its own it reads in process."""
    if not markexpr:
        return True
    from _pytest.mark.expression import Expression

    return Expression.compile(markexpr).evaluate(lambda name, **_: name == "e2e")


def wanted(markexpr: str = "") -> bool:
    """A view is worth making: torch is importable here, nothing has chosen AIPerf's place already, and a test
    that launches AIPerf may run."""
    if os.environ.get(SWITCH_ENV, "1") == "0" or os.environ.get(AIPERF_ENV) or not launches_aiperf(markexpr):
        return False
    beside = Path(sys.executable).with_name("aiperf")
    return beside.is_file() and importlib.util.find_spec("torch") is not None


def make_view(folder: Path) -> Path:
    """The view in `folder` (made here); the path of its `aiperf` script."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    source = Path(sysconfig.get_paths()["purelib"])
    target = Path(sysconfig.get_paths(vars={"base": str(folder), "platbase": str(folder)})["purelib"])
    for entry in source.iterdir():
        if not LEFT_OUT.match(entry.name):
            (target / entry.name).symlink_to(entry)
    script = folder / "bin" / "aiperf"
    script.write_text(CONSOLE_SCRIPT.format(python=folder / "bin" / "python", preload=PRELOAD))
    script.chmod(0o755)
    return script


def install(markexpr: str = "") -> Path | None:
    """In the controller, before the workers start: make the view and point $TRTMC_VIDEOQA_AIPERF at it (the
    workers and every process the tests start inherit it); its folder, to remove at the end, or None."""
    if not wanted(markexpr):
        return None
    folder = Path(tempfile.mkdtemp(prefix="trtmc-aiperf-view-"))
    os.environ[AIPERF_ENV] = str(make_view(folder))
    os.environ[MADE_ENV] = str(folder)
    return folder


def remove(folder: Path | None) -> None:
    if folder is not None:
        os.environ.pop(AIPERF_ENV, None)
        os.environ.pop(MADE_ENV, None)
        shutil.rmtree(folder, ignore_errors=True)


def python_of(aiperf: str) -> str:
    """The interpreter of an aiperf console script (its shebang line)."""
    with open(aiperf, encoding="utf-8") as handle:
        return handle.readline()[2:].strip()


if __name__ == "__main__":
    # .ci/run: the benchmarks' quick modes, run before the suite, launch AIPerf in a view too (made in the folder
    # given; the path of its aiperf printed, nothing where no view is wanted)
    if wanted("e2e"):
        print(make_view(Path(sys.argv[1])))
