"""The test run's AIPerf without torch (aiperf_view.py): the package accepts it as the published aiperf, and its
interpreter has every package of the test environment but torch's."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import aiperf_view
import pytest

from trtmc_videoqa.aiperf.locate import locate_aiperf

PROBE = "import importlib.util as u; print(u.find_spec('torch') is None, u.find_spec('transformers') is not None)"


def test_the_view_is_the_published_aiperf_without_torch(tmp_path: Path) -> None:
    script = aiperf_view.make_view(tmp_path / "view")
    found = locate_aiperf(str(script), expected_version="0.13.0")
    assert found.source == "PyPI release" and Path(found.interpreter) == tmp_path / "view" / "bin" / "python"
    done = subprocess.run([found.interpreter, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["True", "True"], done.stderr  # no torch; the rest of the environment, linked


def test_this_run_gives_aiperf_the_view_where_torch_is_installed(request: pytest.FixtureRequest) -> None:
    markexpr = request.config.option.markexpr
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed here: AIPerf runs from the test environment as it is")
    made = os.environ.get(aiperf_view.MADE_ENV)
    if not made and (os.environ.get(aiperf_view.SWITCH_ENV) == "0" or os.environ.get(aiperf_view.AIPERF_ENV)):
        pytest.skip("the view is turned off, or $TRTMC_VIDEOQA_AIPERF was set for this run")
    if not made and not aiperf_view.launches_aiperf(markexpr):
        pytest.skip("no test that launches AIPerf runs in this selection (-m): no view")
    assert made, "torch is installed and nothing chose AIPerf's place, yet no view was made"
    # the view's aiperf, or the launch counter's wrapper in its place (conftest.py): either runs the view's Python
    assert aiperf_view.python_of(os.environ[aiperf_view.AIPERF_ENV]) == str(Path(made) / "bin" / "python")


def test_the_left_out_names_are_torchs_and_only_torchs() -> None:
    left = ["torch", "torch-2.14.1.dist-info", "torchvision.libs", "torchcodec", "triton", "functorch"]
    kept = ["transformers", "tokenizers", "aiperf", "torchmetrics_like", "nvidia_ml_py-13.615.71.dist-info", "six.py"]
    assert all(aiperf_view.LEFT_OUT.match(name) for name in left)
    assert not any(aiperf_view.LEFT_OUT.match(name) for name in kept)


def test_the_view_is_made_only_where_a_test_that_launches_aiperf_may_run() -> None:
    assert aiperf_view.launches_aiperf("") and aiperf_view.launches_aiperf("e2e and not container")
    assert not aiperf_view.launches_aiperf("not e2e and not container and not real_server")  # the fast lane
