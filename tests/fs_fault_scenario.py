"""The output directory on a full and on a read-only file system, for real: run by tests/test_faults_fs.py.

    python fs_fault_scenario.py WORKDIR [--probe]

Needs the right to mount (root, or a private user and mount namespace from `unshare`); the test runs it inside
`unshare --mount` when it can, so the mounts are private to it and vanish with it. It mounts a small tmpfs,
runs `trtmc-videoqa qualify` on it (it fills up), grows it and runs again (the run resumes), bind-mounts the
output directory read-only and runs again (refused, nothing changed), then runs once more on the writable one
(every row reused). It prints one JSON object with what each phase saw, and always unmounts what it mounted.
`--probe` only mounts and unmounts, to learn whether mounting is allowed here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, ReferenceConfig, ReferenceServer

FULL_SIZE = "24k"  # the lock and the tokenizer fit; the workload's frame strips do not
GROWN_SIZE = "64m"
LOCK = ".trtmc-videoqa.lock"


def mount(*argv: str) -> None:
    subprocess.run(["mount", *argv], check=True, capture_output=True, text=True, timeout=30)


def umount(path: Path) -> None:
    subprocess.run(["umount", str(path)], check=False, capture_output=True, timeout=30)


def qualify(url: str, out: Path) -> dict[str, object]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trtmc_videoqa",
            "qualify",
            "--endpoint",
            url,
            "--model",
            DEFAULT_MODEL_NAME,
            "--workload",
            "synthetic",
            "--repeats",
            "1",
            "--warmup",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = out / "checkpoints" / DEFAULT_MODEL_NAME / "result.json"
    status = json.loads(result.read_text())["status"] if result.is_file() else None
    return {
        "exit": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "status": status,
        "lock_left": (out / LOCK).exists(),
        "temporaries_left": sorted(str(p) for p in out.rglob(".*.tmp")) if out.is_dir() else [],
    }


def snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*")) if p.is_file()}


def main() -> int:
    work = Path(sys.argv[1])
    disk, readonly = work / "tmpfs", work / "readonly"
    disk.mkdir(parents=True, exist_ok=True)
    readonly.mkdir(parents=True, exist_ok=True)
    mount("-t", "tmpfs", "-o", f"size={FULL_SIZE}", "tmpfs", str(disk))
    bound = False
    try:
        if "--probe" in sys.argv:
            print(json.dumps({"probe": "mounted"}))
            return 0
        phases: dict[str, object] = {}
        out = disk / "out"
        with ReferenceServer(ReferenceConfig()) as server:
            phases["full"] = qualify(server.url, out)
            mount("-o", f"remount,size={GROWN_SIZE}", str(disk))
            phases["grown"] = qualify(server.url, out)
            mount("--bind", str(out), str(readonly))
            bound = True
            mount("-o", "remount,ro,bind", str(readonly))
            before = snapshot(out)
            phases["read_only"] = qualify(server.url, readonly)
            phases["read_only"]["unchanged"] = snapshot(out) == before  # type: ignore[index]
            umount(readonly)
            bound = False
            phases["writable_again"] = qualify(server.url, out)
        print(json.dumps(phases))
        return 0
    finally:
        if bound:
            umount(readonly)
        umount(disk)


if __name__ == "__main__":
    raise SystemExit(main())
