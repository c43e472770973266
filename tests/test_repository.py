"""The repository's own promises: CI runs exactly the README's test command; the pin file is complete."""

from __future__ import annotations

import re
from pathlib import Path

from trtmc_videoqa.common.pins import load_pins

REPO = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    setup = text.split("## Set-up on a fresh machine")[1].split("\n## ")[0]
    return re.findall(r"```bash\n(.+?)\n```", setup, flags=re.S)


def test_readme_has_two_setup_commands_and_ci_runs_the_test_one() -> None:
    main_job, tests = _readme_commands()[:2]  # the two set-up commands come first
    assert main_job.startswith("python3 -m venv") and main_job.endswith("trtmc-videoqa qualify")
    assert tests.startswith("python3 -m venv") and "pytest" in tests
    ci = (REPO / ".ci" / "run").read_text()
    assert tests in ci.splitlines(), ".ci/run must call exactly the README's test command"


def test_pin_file_names_everything_the_recipes_need() -> None:
    pins = load_pins()
    assert re.fullmatch(r"[0-9a-f]{40}", pins.trtmc.commit)
    assert pins.trtmc.commit == "fd79ad26ca71a11b3ec086a7daaaead03e6c933f"
    assert pins.aiperf.requirement == "aiperf==0.13.0"
    assert {"cpu", "runtime"} <= set(pins.images)
    for image in pins.images.values():
        # an unknown digest is reported as unpinned, never invented
        assert image.digest == "" or re.fullmatch(r"sha256:[0-9a-f]{64}", image.digest)
        assert image.pinned or image.provenance.endswith("(unpinned)")


def test_package_does_not_load_dagger_on_import() -> None:
    import subprocess
    import sys

    code = "import sys, trtmc_videoqa, trtmc_videoqa.cli.main, trtmc_videoqa.inventory; print('dagger' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
