"""Find the `aiperf` executable and prove it is the published release the pin names, before anything starts."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from pydantic import BaseModel

from ..common.errors import UserError

AIPERF_ENV = "TRTMC_VIDEOQA_AIPERF"  # a configured path, e.g. an environment of its own inside a container

# Run by the executable's own interpreter, so a separate virtual environment is read, not ours.
_METADATA_PROBE = (
    "import importlib.metadata as m, json\n"
    "d = m.distribution('aiperf')\n"
    "e = [e.value for e in d.entry_points if e.group == 'console_scripts' and e.name == 'aiperf']\n"
    "u = d.read_text('direct_url.json')\n"
    "print(json.dumps({'version': d.version, 'direct_url': u, 'entry': e[0] if e else None}))\n"
)


class AiperfProblem(UserError):
    """aiperf is missing, of the wrong version, or a source checkout; the message names the fix."""


class AiperfInstall(BaseModel):
    executable: str
    interpreter: str
    version: str
    source: str  # "PyPI release" or what the install record says


_SHELLS = frozenset({"sh", "bash", "dash"})
# pip's (distlib's) second line when the interpreter's path has a space or makes the shebang too long.
_TRAMPOLINE = "'''exec' "


def _command(words: list[str]) -> Path | None:
    """The program a shebang's words run: the first word, or the NAME that `/usr/bin/env NAME` finds on PATH."""
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        found = shutil.which(words[1])
        if found:
            return Path(found)
    return Path(words[0])


def _trampoline(executable: Path, lines: list[str]) -> Path:
    """The Python of a `#!/bin/sh` console script in the form pip writes for an interpreter whose path has a space:

        #!/bin/sh
        '''exec' "/a b/venv/bin/python3" "$0" "$@"
        ' '''

    sh runs the second line (`exec` the interpreter on this file); Python reads it as a string and goes on."""
    not_python = f"{executable} is a shell script, not a Python console script; point {AIPERF_ENV} at the aiperf script"
    line = next((line for line in lines if line.strip() and not line.startswith("#")), "")
    if not line.startswith(_TRAMPOLINE):
        raise AiperfProblem(not_python)
    try:
        words = shlex.split(line[len(_TRAMPOLINE) :])
    except ValueError:  # unbalanced quotes
        raise AiperfProblem(not_python) from None
    if words[-2:] == ["$0", "$@"]:
        words = words[:-2]
    command = _command(words)
    if command is None:
        raise AiperfProblem(not_python)
    return command


def _interpreter(executable: Path) -> Path:
    """The Python a console script runs under, from its shebang line (or from pip's `#!/bin/sh` trampoline)."""
    not_script = f"{executable} is not a Python console script; point {AIPERF_ENV} at the aiperf script"
    with executable.open("rb") as handle:
        first = handle.readline(512).decode("utf-8", "replace").strip()
        if not first.startswith("#!"):
            raise AiperfProblem(not_script)
        command = _command(first[2:].split())
        if command is None:
            raise AiperfProblem(not_script)
        if command.name in _SHELLS:
            # The trampoline's line is as long as the interpreter's path (one reason pip writes it): 8 KiB a line.
            lines = [handle.readline(8192).decode("utf-8", "replace").rstrip("\r\n") for _ in range(4)]
            return _trampoline(executable, lines)
    return command


def _same_environment(interpreter: Path) -> bool:
    """True when the script's interpreter is this one (same bin directory, same binary): then aiperf's metadata is
    read in this process, which costs milliseconds instead of an interpreter start."""
    try:
        return interpreter.absolute().parent == Path(sys.executable).absolute().parent and os.path.samefile(
            interpreter, sys.executable
        )
    except OSError:
        return False


def _read_metadata(interpreter: Path, executable: Path, fix: str) -> dict[str, str | None]:
    if _same_environment(interpreter):
        import importlib.metadata as metadata

        try:
            found = metadata.distribution("aiperf")
        except metadata.PackageNotFoundError:
            raise AiperfProblem(f"{executable} has no installed aiperf package metadata; {fix}") from None
        entries = [e.value for e in found.entry_points if e.group == "console_scripts" and e.name == "aiperf"]
        return {
            "version": found.version,
            "direct_url": found.read_text("direct_url.json"),
            "entry": entries[0] if entries else None,
        }
    try:
        done = subprocess.run(
            [str(interpreter), "-c", _METADATA_PROBE], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise AiperfProblem(f"could not run {interpreter} to read aiperf's metadata ({error}); {fix}") from None
    if done.returncode != 0:
        raise AiperfProblem(f"{executable} has no installed aiperf package metadata; {fix}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check_console_script(executable: Path, entry: str | None, fix: str) -> None:
    """The file is aiperf's own console script: it imports the entry point aiperf's metadata declares (pip writes
    `from aiperf.cli import app`). Another script under the same Python (one that prints a version) is refused."""
    if not entry or ":" not in entry:
        raise AiperfProblem(f"the aiperf package beside {executable} declares no `aiperf` console script; {fix}")
    module, attribute = entry.split(":", 1)
    needed = f"from {module.strip()} import {attribute.strip().split('.')[0]}"
    with executable.open("rb") as handle:
        text = handle.read(64 * 1024).decode("utf-8", "replace")
    if needed not in text:
        raise AiperfProblem(f"{executable} is not aiperf's console script (it does not run {entry}); {fix}")


def locate_aiperf(configured: str | None = None, *, expected_version: str) -> AiperfInstall:
    """The configured path (argument, then $TRTMC_VIDEOQA_AIPERF), else `aiperf` on PATH, else the one installed
    beside this interpreter (our own dependency, in a virtual environment that is not activated)."""
    choice = configured or os.environ.get(AIPERF_ENV)
    beside = Path(sys.executable).parent / "aiperf"
    found = choice if choice else (shutil.which("aiperf") or (str(beside) if beside.is_file() else None))
    fix = f"install it with `pip install aiperf=={expected_version}` or set {AIPERF_ENV} to its path"
    if not found or not Path(found).is_file():
        where = f"at {choice}" if choice else "on PATH"
        raise AiperfProblem(f"aiperf was not found {where}; {fix}")
    executable = Path(found).resolve()
    interpreter = _interpreter(executable)
    record = _read_metadata(interpreter, executable, fix)
    version = record["version"]
    if version != expected_version:
        raise AiperfProblem(
            f"{executable} is aiperf {version}, but this tool needs the published {expected_version}; {fix}"
        )
    _check_console_script(executable, record.get("entry"), fix)
    source = "PyPI release"
    direct_url = record.get("direct_url")
    if direct_url:
        direct = json.loads(direct_url)
        if "dir_info" in direct or "vcs_info" in direct:
            raise AiperfProblem(
                f"{executable} is aiperf installed from a source checkout ({direct.get('url')}); "
                f"a source checkout is never used: {fix}"
            )
        source = direct.get("url", source)
    return AiperfInstall(executable=str(executable), interpreter=str(interpreter), version=version, source=source)
