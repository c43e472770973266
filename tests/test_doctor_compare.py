"""`doctor` checks what `compare` needs (transformers, torch, torchcodec with the FFmpeg libraries it loads, FFmpeg)
and says which is missing with the fix, as checks for `compare`: a warning, never a failure of the machine for
`qualify`. Against this machine, a PATH without ffmpeg, and a torchcodec test double that cannot load FFmpeg (as
torchcodec raises on import without its libraries).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import shutil
import sys
import types
from pathlib import Path

import pytest
from helpers import interpreter_tools_only, run_main

Captured = pytest.CaptureFixture[str]
COMPARE = ("transformers", "torch", "torchcodec", "ffmpeg")


def _checks(capsys: Captured) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(run_main(capsys, "doctor", "--json").stdout)}


def test_doctor_checks_what_compare_needs_as_checks_for_compare(capsys: Captured) -> None:
    checks = _checks(capsys)
    for name in COMPARE:
        assert checks[name]["needed_for"] == "compare" and checks[name]["level"] in ("ok", "warn"), checks[name]
        assert checks[name]["level"] == "ok" or checks[name]["fix"]  # missing: the fix is named
    assert all(c["needed_for"] == "qualify" for n, c in checks.items() if n not in COMPARE)
    text = run_main(capsys, "doctor").stdout
    assert "torchcodec (compare)" in text and "ffmpeg (compare)" in text


TORCHCODEC_WITHOUT_FFMPEG = '''"""TEST DOUBLE of torchcodec without FFmpeg: it raises on import, as torchcodec does."""
raise RuntimeError(
    "Could not load libtorchcodec. Likely causes:\\n"
    "  1. FFmpeg is not properly installed in your environment. We support versions 4, 5, 6 and 7."
)
'''


def test_a_torchcodec_that_cannot_load_ffmpeg_is_named_with_the_fix(
    tmp_path: Path, capsys: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    double = tmp_path / "site" / "torchcodec"
    double.mkdir(parents=True)
    (double / "__init__.py").write_text(TORCHCODEC_WITHOUT_FFMPEG)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))  # found here, and in the subprocess that imports it
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    check = _checks(capsys)["torchcodec"]
    assert check["level"] == "warn" and "cannot load: RuntimeError: Could not load libtorchcodec" in check["detail"]
    assert "apt-get install -y ffmpeg" in check["fix"]
    assert "WARN  torchcodec (compare)" in run_main(capsys, "doctor").stdout


def test_a_torchcodec_built_for_an_ffmpeg_this_machine_lacks_names_the_missing_libraries(
    tmp_path: Path, capsys: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torchcodec's own core library for FFmpeg 9 alone (copied from the installed torchcodec into a test double of
    the package): `ldd` finds none of its FFmpeg libraries here, so the check names them, without importing torch."""
    spec = importlib.util.find_spec("torchcodec")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torchcodec is not installed (the real-server extra)")
    real = Path(list(spec.submodule_search_locations)[0]) / "libtorchcodec_core9.so"
    if not real.is_file():
        pytest.skip("this torchcodec has no core library for FFmpeg 9")
    double = tmp_path / "site" / "torchcodec"
    double.mkdir(parents=True)
    (double / "__init__.py").write_text(TORCHCODEC_WITHOUT_FFMPEG)  # never imported: its files tell
    shutil.copy(real, double / real.name)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    # The installed torchcodec, imported already by this process (a model built in process, another test), is not
    # the one a server started now would find on the path: the check reads the path, not this process's modules
    imported = types.ModuleType("torchcodec")
    imported.__spec__ = importlib.machinery.ModuleSpec("torchcodec", None, is_package=True)
    imported.__spec__.submodule_search_locations = [str(real.parent)]
    monkeypatch.setitem(sys.modules, "torchcodec", imported)
    check = _checks(capsys)["torchcodec"]
    assert check["level"] == "warn" and "its FFmpeg libraries are missing: libavutil.so.61" in check["detail"]
    assert "apt-get install -y ffmpeg" in check["fix"]


def test_no_ffmpeg_program_is_named_with_the_fix(
    tmp_path: Path, capsys: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", interpreter_tools_only(tmp_path / "ldd"))  # this interpreter's tools and ldd: no ffmpeg
    check = _checks(capsys)["ffmpeg"]
    assert check["level"] == "warn" and "the ffmpeg program" in check["detail"]
    assert "apt-get install -y ffmpeg" in check["fix"]
