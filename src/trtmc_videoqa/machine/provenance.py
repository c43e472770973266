"""What a result row says about the machine it ran on: what a reader needs to compare figures, nothing that names it.

Kept: GPU model, driver and memory; the CUDA version the driver supports and the toolkit's; the TensorRT and TRTMC
package versions in TRTMC's interpreter; the CPU count; the CPU architecture and Python version.
Never kept: host or user names, paths, kernel releases or boot IDs, GPU UUIDs or serial numbers, PCI bus IDs.

Every probe has a timeout and never raises: a tool that is missing, fails or does not answer gives None (or []/{}).
The machine is probed once per run (a run is one process): the answer is kept by interpreter and PATH (the tools a
probe finds on it), and every row gets its own copy. This interpreter's packages are read in-process; another one's
(TRTMC's, when given) by starting it.
"""

from __future__ import annotations

import copy
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .gpu import query_gpus

if TYPE_CHECKING:
    from importlib.metadata import Distribution

PROBE_TIMEOUT_S = 10.0  # nvidia-smi can take seconds to wake the driver on a machine without persistence mode

# This tool's own distribution starts with "trtmc" too; its version is in provenance.tool_versions already.
OWN_DISTRIBUTION = "trtmc_videoqa"
TRTMC_PREFIXES = ("trtmc", "tensorrt_model_connect")
TENSORRT_DISTRIBUTIONS = ("tensorrt", "tensorrt_cu13", "tensorrt_cu12")

# Run in the interpreter asked about (any Python 3.8+): its distributions' names and versions, as JSON. The current
# directory is dropped from sys.path so that what happens to lie there is not taken for an installed package.
_PACKAGES_SCRIPT = """
import json, sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
from importlib import metadata
found = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name and dist.version:
        found.setdefault(name, dist.version)
print(json.dumps(found))
"""

_CUDA_DRIVER = re.compile(r"CUDA Version:\s*([0-9]+(?:\.[0-9]+)*)")
_NVCC_FULL = re.compile(r"release\s+[0-9.]+,\s*V([0-9]+(?:\.[0-9]+)+)")
_NVCC_RELEASE = re.compile(r"release\s+([0-9]+(?:\.[0-9]+)*)")


def hardware_provenance(*, trtmc_python: Path | None = None) -> dict[str, Any]:
    """The `hardware` of a row's provenance. Package versions are read in `trtmc_python` (TRTMC's interpreter) when
    given, else in this one. Probed on the first call of a run, by interpreter and PATH; a copy of that answer after."""
    return copy.deepcopy(_probed(trtmc_python, os.environ.get("PATH")))


@lru_cache(maxsize=8)
def _probed(trtmc_python: Path | None, path: str | None) -> dict[str, Any]:
    """The machine probed (`path`, the PATH its tools are found on, keys the answer kept)."""
    packages = installed_packages(trtmc_python) if trtmc_python else own_packages()
    return {
        "gpus": gpus(),
        "cuda_driver": cuda_driver_version(),
        "cuda_toolkit": cuda_toolkit_version(),
        "tensorrt": tensorrt_version(packages),
        "trtmc_packages": trtmc_packages(packages),
        "cpu_count": os.cpu_count(),
        "platform": {"machine": platform.machine(), "python": platform.python_version()},
    }


def _run(argv: list[str]) -> str | None:
    """A probe's stdout, or None when it cannot run, fails or does not answer in time."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def gpus() -> list[dict[str, str]]:
    """The GPUs nvidia-smi lists, or [] where none answers."""
    done = query_gpus(timeout_s=PROBE_TIMEOUT_S)
    if done is None or done.returncode != 0:
        return []
    return parse_gpu_csv(done.stdout)


def parse_gpu_csv(text: str) -> list[dict[str, str]]:
    """nvidia-smi's `name,driver_version,memory.total` CSV lines as {name, driver, memory}; a line that is not
    three fields is skipped."""
    rows = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.rsplit(",", 2)]
        if len(fields) == 3 and all(fields):
            rows.append(dict(zip(("name", "driver", "memory"), fields, strict=True)))
    return rows


def cuda_driver_version() -> str | None:
    """The CUDA version the driver supports, from nvidia-smi's header; None without nvidia-smi."""
    text = _run(["nvidia-smi"])
    return parse_cuda_driver(text) if text else None


def parse_cuda_driver(text: str) -> str | None:
    """`CUDA Version: 12.8` in nvidia-smi's header -> "12.8"."""
    found = _CUDA_DRIVER.search(text)
    return found.group(1) if found else None


def cuda_toolkit_version() -> str | None:
    """The CUDA toolkit's version from `nvcc --version`; None when nvcc is not on PATH."""
    nvcc = shutil.which("nvcc")
    text = _run([nvcc, "--version"]) if nvcc else None
    return parse_nvcc(text) if text else None


def parse_nvcc(text: str) -> str | None:
    """`Cuda compilation tools, release 12.8, V12.8.93` -> "12.8.93" (the release, "12.8", without the V part)."""
    found = _NVCC_FULL.search(text) or _NVCC_RELEASE.search(text)
    return found.group(1) if found else None


def installed_packages(python: Path) -> dict[str, str] | None:
    """Distribution name -> version in that interpreter, or None when it cannot be run or answers nonsense."""
    text = _run([str(python), "-c", _PACKAGES_SCRIPT])
    return parse_packages(text) if text else None


# Every distribution name provenance keeps (TENSORRT_DISTRIBUTIONS, TRTMC_PREFIXES) holds one of these.
_KEPT_NAME_PART = re.compile(r"tensorrt|trtmc", re.IGNORECASE)


def own_packages() -> dict[str, str] | None:
    """The packages script's answer for this interpreter, read in-process, for the distributions provenance keeps
    (TensorRT's and TRTMC's; this tool's own too, as the script's answer holds it): searched on the path a fresh start
    of this interpreter searches, without the folder of the script or the current directory that Python put first.
    Only a distribution whose metadata folder is named for TensorRT or TRTMC is read; None where reading fails."""
    first = 0 if sys.flags.safe_path else 1  # our script's folder or the current directory: "" in a fresh `-c`
    search = [entry for entry in sys.path[first:] if entry not in ("", ".")]
    found: dict[str, str] = {}
    try:
        for dist in _kept_distributions(search):
            name = dist.metadata["Name"]
            if name and dist.version:
                found.setdefault(name, dist.version)
    except Exception:  # a probe never raises: an unreadable distribution makes the answer unknown, as the script's
        return None
    return found


def _kept_distributions(search: list[str]) -> Iterator[Distribution]:
    """The installed distributions on `search`, in its order, whose `.dist-info` or `.egg-info` name holds TensorRT's
    or TRTMC's name (such a folder is named for its distribution, normalised: `tensorrt_cu12-10.9.dist-info`). Reading
    every distribution's metadata to find them took 12 to 30 ms of each run."""
    from importlib.metadata import PathDistribution

    for entry in search:
        try:
            names = sorted(os.listdir(entry))
        except OSError:  # a zip on the path, or a folder that is gone: nothing installed there to read
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")) and _KEPT_NAME_PART.search(name):
                yield PathDistribution(Path(entry, name))


def parse_packages(text: str) -> dict[str, str] | None:
    """The packages script's JSON; None unless it is an object of strings."""
    try:
        found = json.loads(text)
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def normal_name(name: str) -> str:
    """A distribution name as pip compares them (PEP 503), with underscores: "TensorRT-cu12" -> "tensorrt_cu12"."""
    return re.sub(r"[-_.]+", "_", name).lower()


def tensorrt_version(packages: dict[str, str] | None) -> str | None:
    """The `tensorrt` package's version (or its CUDA-suffixed wheel's), None when not installed."""
    by_name = {normal_name(k): v for k, v in (packages or {}).items()}
    return next((by_name[n] for n in TENSORRT_DISTRIBUTIONS if n in by_name), None)


def trtmc_packages(packages: dict[str, str] | None) -> dict[str, str]:
    """TRTMC's distributions (trtmc*, tensorrt-model-connect*) and their versions, this tool's own left out."""
    return {
        name: version
        for name, version in sorted((packages or {}).items())
        if normal_name(name).startswith(TRTMC_PREFIXES) and normal_name(name) != OWN_DISTRIBUTION
    }
