"""An `aiperf` console script in a virtual environment whose path has a space: pip writes a `#!/bin/sh` trampoline
instead of `#!/path/to/python`, and the locator reads the interpreter from the trampoline's `exec` line."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from trtmc_videoqa.aiperf.locate import AiperfProblem, _interpreter, locate_aiperf

TAIL = "\n' '''\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom aiperf.cli import app\n"


def script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "aiperf"
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    "quoted, expected",
    [
        ("'/tmp/a b/venv/bin/python3'", "/tmp/a b/venv/bin/python3"),
        ('"/tmp/a b/venv/bin/python3"', "/tmp/a b/venv/bin/python3"),  # distlib's own quoting
        ('"/tmp/it\'s here/venv/bin/python3"', "/tmp/it's here/venv/bin/python3"),
        ("'/tmp/say \"hi\"/venv/bin/python3'", '/tmp/say "hi"/venv/bin/python3'),
        ("'/tmp/it'\\''s/venv/bin/python3'", "/tmp/it's/venv/bin/python3"),
        ("/tmp/a\\ b/venv/bin/python3", "/tmp/a b/venv/bin/python3"),
    ],
)
def test_the_interpreter_is_read_from_pips_sh_trampoline(tmp_path: Path, quoted: str, expected: str) -> None:
    path = script(tmp_path, f"#!/bin/sh\n'''exec' {quoted} \"$0\" \"$@\"" + TAIL)
    assert _interpreter(path) == Path(expected)


def test_the_trampoline_under_env_sh(tmp_path: Path) -> None:
    path = script(tmp_path, "#!/usr/bin/env sh\n'''exec' '/tmp/a b/venv/bin/python3' \"$0\" \"$@\"" + TAIL)
    assert _interpreter(path) == Path("/tmp/a b/venv/bin/python3")


def test_plain_shebangs_still_work(tmp_path: Path) -> None:
    assert _interpreter(script(tmp_path, "#!/opt/venv/bin/python3\nimport sys\n")) == Path("/opt/venv/bin/python3")
    env = _interpreter(script(tmp_path, "#!/usr/bin/env python3\nimport sys\n"))
    assert env.name.startswith("python3") and env.is_absolute()


@pytest.mark.parametrize(
    "text",
    [
        '#!/bin/sh\nexec /opt/aiperf/bin/aiperf "$@"\n',  # a shell wrapper: no trampoline to read
        "#!/bin/sh\n",
        "#!/bin/sh\n'''exec' '/tmp/a b/python3 \"$0\" \"$@\"\n",  # unbalanced quote
        "#!/bin/sh\n'''exec' \"$0\" \"$@\"\n",  # no interpreter named
        "#!\n",
        "import sys\n",
    ],
)
def test_a_script_that_names_no_python_is_a_clear_problem(tmp_path: Path, text: str) -> None:
    with pytest.raises(AiperfProblem, match="not a Python console script"):
        _interpreter(script(tmp_path, text))


def test_locate_aiperf_in_a_venv_whose_path_has_a_space(tmp_path: Path) -> None:
    """A real venv under a spaced path, which sees our installed aiperf 0.13.0 through a .pth file, and an `aiperf`
    script written there by pip's own script writer (distlib's ScriptMaker, run by that venv's python as pip is)."""
    venv = tmp_path / "with space" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()
    (Path(purelib) / "ours.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    maker = (
        "import importlib.metadata as m, sys\n"
        "from pip._vendor.distlib.scripts import ScriptMaker\n"
        "(entry,) = m.entry_points(group='console_scripts', name='aiperf')\n"
        "maker = ScriptMaker(None, sys.argv[1])\n"
        "maker.variants = {''}\n"
        "print(maker.make(f'{entry.name} = {entry.value}'))\n"
    )
    subprocess.run([str(python), "-c", maker, str(venv / "bin")], check=True, timeout=60)
    aiperf = venv / "bin" / "aiperf"
    lines = aiperf.read_text().splitlines()
    assert lines[0] == "#!/bin/sh" and lines[1].startswith("'''exec' "), lines[:3]  # the trampoline, as pip writes
    ran = subprocess.run([str(aiperf), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert ran.returncode == 0 and "0.13.0" in ran.stdout, (ran.stdout, ran.stderr)  # a working script, not a mock-up

    found = locate_aiperf(str(aiperf), expected_version="0.13.0")
    assert found.interpreter == str(python) and " " in found.interpreter
    assert found.executable == str(aiperf.resolve())
    assert found.version == "0.13.0"
