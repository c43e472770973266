"""Imported by conftest.py before any test module: the test run caches bytecode, as Python does by default, even
where the shell sets PYTHONDONTWRITEBYTECODE. Without the cache every xdist worker rewrites every test module's
asserts again and every `python -m trtmc_videoqa` a test starts compiles the package from source, about 3 s of the
fast lane's wall time on two cores. The caches are the usual __pycache__ folders, which git and the container build
context leave out; installed packages keep the bytecode pip wrote for them either way."""

import compileall
import os
import sys
from pathlib import Path

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the processes the tests start
sys.dont_write_bytecode = False  # for this one, from the next import on

# The package compiled once, before the workers start, on a fresh clone (0.4 s; 40 ms when nothing changed): else
# the workers and the first processes they start all compile it at once, each for itself.
if "PYTEST_XDIST_WORKER" not in os.environ:
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "src" / "trtmc_videoqa", quiet=2)
