"""The output directory on a full file system (a small tmpfs) and on a read-only one (a read-only bind mount).

File modes prove nothing here (CI runs as root, and root writes through them), so real mounts are used. The
scenario (tests/fs_fault_scenario.py) runs in a private mount namespace when `unshare --mount` is allowed, so no
mount outlives it; as root without unshare it mounts directly (and unmounts in a `finally`); without root it tries
an unprivileged user and mount namespace. When none of these can mount, the test is skipped and says what was
tried and why each failed, except in CI (CI set), where it fails: there it must run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # the scenario's runs on a writable output directory launch AIPerf

SCENARIO = Path(__file__).with_name("fs_fault_scenario.py")


def _launchers() -> list[list[str]]:
    unshare = shutil.which("unshare")
    launchers = []
    if os.geteuid() == 0:
        if unshare:
            launchers.append([unshare, "--mount", "--propagation", "private"])
        launchers.append([])  # root in this namespace: mount directly
    elif unshare:
        launchers.append([unshare, "--map-root-user", "--mount", "--propagation", "private"])
    return launchers


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    tried = []
    for prefix in _launchers():
        work = tmp_path_factory.mktemp("fs-probe")
        done = subprocess.run(
            [*prefix, sys.executable, str(SCENARIO), str(work), "--probe"], capture_output=True, text=True, timeout=60
        )
        if done.returncode == 0:
            return prefix
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        tried.append(f"{' '.join(prefix) or 'mount as root'}: {reason}")
    if not tried:
        tried.append(f"not root (euid {os.geteuid()}) and no `unshare` on PATH")
    why = (
        "cannot mount a tmpfs or a bind mount here, so a full or read-only output directory cannot be made for "
        "real (file modes do not stop root); tried: " + "; ".join(tried)
    )
    if os.environ.get("CI"):
        pytest.fail(f"the file-system fault test must run in CI, and cannot: {why}")
    pytest.skip(why)


def test_full_then_read_only_output_directory(launcher: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [*launcher, sys.executable, str(SCENARIO), str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    phases = json.loads(done.stdout.strip().splitlines()[-1])

    full = phases["full"]  # a full disk: bad input with one message naming the place, nothing half-written left
    assert full["exit"] == 2, full
    lines = [line for line in full["stderr"].splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in full["stderr"]
    assert "No space left on device" in lines[0] and "/tmpfs/out" in lines[0]
    assert not full["lock_left"] and full["temporaries_left"] == []

    grown = phases["grown"]  # room again: the same command resumes and measures
    assert grown["exit"] == 0, grown["stderr"]
    assert grown["status"] == "endpoint-qualified" and "(reused)" not in grown["stdout"]

    read_only = phases["read_only"]  # refused at once, the earlier artifacts untouched
    assert read_only["exit"] == 2
    lines = [line for line in read_only["stderr"].splitlines() if line.strip()]
    assert len(lines) == 1 and "Read-only file system" in lines[0] and "Traceback" not in read_only["stderr"]
    assert read_only["unchanged"] and not read_only["lock_left"]

    again = phases["writable_again"]  # writable again: nothing was lost, every row is reused
    assert again["exit"] == 0 and "(reused)" in again["stdout"]
