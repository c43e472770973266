"""The TRTMC side of a checkpoint's steps: prerequisites, `trtmc build`, the family's own correctness command,
and the `trtmc-server` argv. Each is an argv list built from the inventory row; running them is `qualify`'s job.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ..common.digests import file_sha256
from ..results.layout import FAMILY_RESULT_FILE, JUNIT_FILE

if TYPE_CHECKING:
    from ..results import CheckpointEntry  # its schemas load on first use: an annotation only

TRTMC_TOOLS = ("trtmc", "trtmc-server")
GPU_PROBE = ("nvidia-smi", "-L")
# perf_serving's persistent worker, built with -DTRTMC_BUILD_EXAMPLES=ON; it serves the native Task route.
BENCHMARK_WORKER = "trtmc_benchmark_worker"
PERF_SERVING_ROOT = Path("apps/perf_serving")
PERF_SERVING_PACKAGE = PERF_SERVING_ROOT / "trtmc_perf_serving"


class Toolchain(BaseModel):
    """Where the TRTMC executables are; found on PATH unless configured."""

    trtmc: str | None
    trtmc_server: str | None
    python: str = sys.executable  # runs the family's own tests (TRTMC's Python in the runtime image)
    gpu: str | None = None  # what nvidia-smi listed; None without a GPU
    benchmark_worker: str | None = None  # perf_serving's worker, for the native side of the identity check

    def missing(self) -> list[str]:
        """Named missing prerequisites; a row that needs them is `blocked`, never faked."""
        lacks = []
        if self.gpu is None:
            lacks.append("no NVIDIA GPU visible (`nvidia-smi -L` found none): run on a GPU runner")
        for tool, path in (("trtmc", self.trtmc), ("trtmc-server", self.trtmc_server)):
            if path is None:
                lacks.append(f"`{tool}` is not on PATH: TRTMC is not built here (use the runtime container)")
        return lacks


def find_toolchain(python: str | None = None) -> Toolchain:
    gpu = None
    if shutil.which(GPU_PROBE[0]):
        try:
            done = subprocess.run(list(GPU_PROBE), capture_output=True, text=True, timeout=20, check=False)
            listed = done.stdout.strip()
            gpu = listed if done.returncode == 0 and listed else None
        except (OSError, subprocess.TimeoutExpired):
            gpu = None
    return Toolchain(
        trtmc=shutil.which("trtmc"),
        trtmc_server=shutil.which("trtmc-server"),
        python=python or sys.executable,
        gpu=gpu,
        benchmark_worker=shutil.which(BENCHMARK_WORKER),
    )


def bundle_path(cache_dir: Path, entry: CheckpointEntry, commit: str) -> Path:
    """Bundles are cached by what makes them (profile, TRTMC commit, checkpoint revision), one engine directory
    each, under the manifest's own `bundle` name: that is where the family's E2E runner looks for it."""
    revision = (entry.revision or "unpinned")[:12]
    return cache_dir / f"{entry.profile}-{commit[:12]}-{revision}" / (entry.bundle or f"{entry.profile}.bundle")


def partial_path(bundle: Path) -> Path:
    """Where a build writes before it is known to have finished (renamed into place only on success)."""
    return bundle.with_name(f".partial-{os.getpid()}-{bundle.name}")


def build_argv(toolchain: Toolchain, entry: CheckpointEntry, bundle: Path) -> list[str]:
    """`trtmc build <hf_id> --output X.bundle`, settings from the manifest (the family's own defaults otherwise)."""
    if not entry.checkpoint:
        raise ValueError(f"profile {entry.profile!r} names no checkpoint (hf_id) to build from")
    argv = [toolchain.trtmc or "trtmc", "build", entry.checkpoint, "--output", str(bundle)]
    length = entry.build_settings.get("max_sequence_length") or entry.build_settings.get("max_cache_length")
    if isinstance(length, int):
        argv += ["--max-cache-length", str(length)]
    if entry.precision and entry.precision != "fp32":  # as the family's E2E runner builds it (fp32 is the default)
        argv += ["--precision", entry.precision]
    return argv


def correctness_test(checkout: Path, entry: CheckpointEntry, layout: str) -> Path | None:
    """The family's own E2E test file, unchanged, or None when the family has none.

    Raises ValueError when the path (from the manifest's family, or through a symlink) leads outside the checkout:
    nothing outside the checkout is ever run."""
    if layout == "families":
        candidate = checkout / "families" / entry.family / "tests" / "test_e2e.py"
        found = [candidate] if candidate.is_file() else []
    else:
        family_dir = checkout / Path(entry.manifest).parents[1]
        found = sorted(family_dir.glob("test_*_e2e.py"))[:1]
    if not found:
        return None
    root = checkout.resolve()
    if not found[0].resolve().is_relative_to(root):
        raise ValueError(
            f"the correctness test {found[0]} of profile {entry.profile!r} leads outside the checkout "
            f"(to {found[0].resolve()})"
        )
    return found[0]


def correctness_argv(
    toolchain: Toolchain, checkout: Path, test: Path, entry: CheckpointEntry, artifacts: Path, engine_dir: Path
) -> list[str]:
    """The family's command as TRTMC's family E2E runners take it: pytest on its E2E test, selecting this profile,
    the engine directory that holds our bundle under the manifest's name, and no --rebuild-engines, so the runner
    validates that bundle rather than building its own (checked afterwards by digest)."""
    return [
        toolchain.python,
        "-m",
        "pytest",
        str(test.relative_to(checkout)),
        "--e2e-model",
        entry.profile,
        "--e2e-artifacts-dir",
        str(artifacts),
        "--engine-dir",
        str(engine_dir),
        "--trtmc-binary",
        toolchain.trtmc or "trtmc",
        "--hf-python",
        toolchain.python,
        "-p",
        "no:cacheprovider",
        "-rs",
        f"--junitxml={artifacts / JUNIT_FILE}",
    ]


class TestOutcome(BaseModel):
    """What the family's pytest run did, from its JUnit XML."""

    passed: int = 0
    failed: int = 0
    skipped: list[str] = []  # the reasons

    def counts(self) -> str:
        """The run in one public line: its test counts (the log itself is raw and stays private)."""
        return f"{self.passed} passed, {self.failed} failed, {len(self.skipped)} skipped"

    def problem(self) -> str | None:
        """Why this run does not show the bundle passing the family's checks, or None."""
        if self.failed:
            return f"{self.failed} test(s) failed or errored"
        if not self.passed:
            reasons = "; ".join(self.skipped[:3]) or "no test was collected"
            return f"no test passed: {reasons}"
        return None


def family_test_outcome(artifacts: Path) -> TestOutcome | None:
    """The outcome of the family's tests from <artifacts>/junit.xml, or None when pytest wrote none."""
    import xml.etree.ElementTree as ElementTree

    try:
        root = ElementTree.parse(artifacts / JUNIT_FILE).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    outcome = TestOutcome()
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        if skipped is not None:
            outcome.skipped.append(skipped.get("message", "skipped"))
        elif case.find("failure") is not None or case.find("error") is not None:
            outcome.failed += 1
        else:
            outcome.passed += 1
    return outcome


def correctness_env(checkout: Path, base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    env.update(
        {"TRTMC_E2E": "1", "PYTHONPATH": ":".join(str(checkout / p) for p in ("core/builder", "apps/benchmark", "."))}
    )
    return env


def family_result(artifacts: Path, profile: str) -> str | None:
    """The status the family's runner wrote for this profile (<artifacts>/<profile>/result.json), if it wrote one."""
    try:
        status = json.loads((artifacts / profile / FAMILY_RESULT_FILE).read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        return None
    return str(status) if status is not None else None


def server_argv(
    toolchain: Toolchain,
    bundle: Path,
    *,
    model_name: str,
    port: int,
    body_limit: int,
    records: Path,
    startup_timeout_s: float,
    request_timeout_s: float,
) -> list[str]:
    """trtmc-server on loopback with a body limit large enough for the clip, writing per-request records."""
    return [
        toolchain.trtmc_server or "trtmc-server",
        str(bundle),
        "--model-name",
        model_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-body-bytes",
        str(body_limit),
        "--startup-timeout",
        f"{startup_timeout_s:g}",
        "--request-timeout",
        f"{request_timeout_s:g}",
        "--records",
        str(records),
    ]


def has_perf_serving(checkout: Path) -> bool:
    """The checkout holds perf_serving (the newer layout); the older layout has none."""
    return (checkout / PERF_SERVING_PACKAGE / "__main__.py").is_file()


def perf_serving_problem(toolchain: Toolchain, checkout: Path) -> str | None:
    """Why the checkout's perf_serving cannot serve the native Task route here, or None."""
    if not has_perf_serving(checkout):
        return f"the checkout has no perf_serving ({PERF_SERVING_PACKAGE}/), so no native Task route to compare with"
    if toolchain.benchmark_worker is None:
        return f"`{BENCHMARK_WORKER}` is not on PATH: build TRTMC with -DTRTMC_BUILD_EXAMPLES=ON"
    return None


def perf_serving_argv(
    toolchain: Toolchain,
    checkout: Path,
    bundle: Path,
    *,
    profile: str,
    port: int,
    records: Path,
    scratch: Path,
    request_timeout_s: float,
) -> list[str]:
    """perf_serving's trtmc backend on loopback, serving the same bundle file through its own worker."""
    worker = Path(toolchain.benchmark_worker or BENCHMARK_WORKER)
    return [
        toolchain.python,
        "-m",
        "trtmc_perf_serving",
        "serve",
        "--backend",
        "trtmc",
        "--profile",
        profile,
        "--manifest-root",
        str(checkout / "families"),
        "--bundle",
        str(bundle),
        "--runtime-root",
        str(worker.parent),
        "--worker",
        str(worker),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--records",
        str(records),
        "--scratch",
        str(scratch),
        "--request-timeout",
        f"{request_timeout_s:g}",
    ]


def perf_serving_env(checkout: Path, base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout / PERF_SERVING_ROOT), base.get("PYTHONPATH")) if p)
    return env


def file_digest(path: Path) -> str:
    """A bundle's identity as rows record it: ``sha256:<hex>``."""
    return f"sha256:{file_sha256(path)}"


def bundle_header(bundle: Path) -> dict:
    """The bundle's JSON header when its first line is one ({"format": 1, "family": ..., ...}); {} otherwise."""
    try:
        with bundle.open("rb") as handle:
            first = handle.readline(1 << 16)
        header = json.loads(first)
    except (OSError, ValueError):
        return {}
    return header if isinstance(header, dict) else {}


def effective_precision(header: dict, declared: str | None) -> tuple[str | None, str]:
    """(precision, where it was read): the bundle's own header when it names one, else the manifest's."""
    for key in ("precision", "dtype", "quantization"):
        if isinstance(header.get(key), str) and header[key]:
            return header[key], f"bundle header field {key!r}"
    return declared, "the manifest's declared precision (the bundle header names none)"


def bundles_built_by(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.bundle")) if directory.is_dir() else []
