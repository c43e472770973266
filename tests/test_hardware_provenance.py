"""A row's provenance.hardware: the versions a reader needs, nothing that identifies the machine or its user."""

from __future__ import annotations

import getpass
import json
import os
import platform
import re
import socket
import stat
import sys
from pathlib import Path

import pytest

from trtmc_videoqa.machine import provenance as hp
from trtmc_videoqa.rows.provenance import hardware

ALLOWED_KEYS = {"gpus", "cuda_driver", "cuda_toolkit", "tensorrt", "trtmc_packages", "cpu_count", "platform"}

NVIDIA_SMI_HEADER = """\
Tue Mar  4 10:12:01 2025
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 570.86.15              Driver Version: 570.86.15      CUDA Version: 12.8     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
|=========================================+========================+======================|
|   0  NVIDIA H200                    On  |   00000000:19:00.0 Off |                    0 |
+-----------------------------------------+------------------------+----------------------+
"""

NVCC_VERSION = """\
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Fri_Feb_21_20:23:50_PST_2025
Cuda compilation tools, release 12.8, V12.8.93
Build cuda_12.8.r12.8/compiler.35583870_0
"""


def test_parse_cuda_driver_from_the_nvidia_smi_header() -> None:
    assert hp.parse_cuda_driver(NVIDIA_SMI_HEADER) == "12.8"
    line = "| NVIDIA-SMI 570.86.15   Driver Version: 570.86.15   CUDA Version: 12.8 |"
    assert hp.parse_cuda_driver(line) == "12.8"
    assert hp.parse_cuda_driver("NVIDIA-SMI has failed because it couldn't communicate with the driver") is None
    assert hp.parse_cuda_driver("") is None


def test_parse_nvcc_prefers_the_full_version_then_the_release() -> None:
    assert hp.parse_nvcc(NVCC_VERSION) == "12.8.93"
    assert hp.parse_nvcc("Cuda compilation tools, release 12.8, V12.8.93") == "12.8.93"
    assert hp.parse_nvcc("Cuda compilation tools, release 11.0") == "11.0"
    assert hp.parse_nvcc("bash: nvcc: command not found") is None


def test_parse_gpu_csv_keeps_name_driver_memory_only() -> None:
    text = "NVIDIA H200, 570.86.15, 143771 MiB\nNVIDIA H200, 570.86.15, 143771 MiB\n\nnot, a gpu\n"
    gpu = {"name": "NVIDIA H200", "driver": "570.86.15", "memory": "143771 MiB"}
    assert hp.parse_gpu_csv(text) == [gpu, gpu]
    # the test double's line, whose name holds a comma-free parenthesis
    assert hp.parse_gpu_csv("TEST DOUBLE (not a GPU), 0.0, 0 MiB") == [
        {"name": "TEST DOUBLE (not a GPU)", "driver": "0.0", "memory": "0 MiB"}
    ]
    assert hp.parse_gpu_csv("") == []


def test_parse_packages_takes_only_an_object_of_strings() -> None:
    assert hp.parse_packages('{"tensorrt": "10.9.0.34", "odd": 3}') == {"tensorrt": "10.9.0.34"}
    assert hp.parse_packages("[1, 2]") is None
    assert hp.parse_packages("Traceback (most recent call last):") is None


def test_package_picks_tensorrt_and_trtmc_distributions_by_normal_name() -> None:
    packages = {
        "TensorRT-cu12": "10.9.0.34",
        "trtmc": "0.4.0",
        "trtmc_server": "0.4.0",
        "tensorrt-model-connect": "0.4.0",
        "Tensorrt.Model.Connect.Core": "0.4.1",
        "trtmc-videoqa": "0.1.0",  # this tool: already in tool_versions
        "numpy": "2.1.0",
    }
    assert hp.tensorrt_version(packages) == "10.9.0.34"
    assert hp.tensorrt_version({"tensorrt": "10.3.0", "tensorrt_cu12": "10.9.0"}) == "10.3.0"
    assert hp.tensorrt_version({"numpy": "2.1.0"}) is None
    assert hp.tensorrt_version(None) is None
    assert hp.trtmc_packages(packages) == {
        "Tensorrt.Model.Connect.Core": "0.4.1",
        "tensorrt-model-connect": "0.4.0",
        "trtmc": "0.4.0",
        "trtmc_server": "0.4.0",
    }
    assert hp.trtmc_packages(None) == {}


def test_hardware_provenance_here_has_exactly_the_allowed_keys() -> None:
    facts = hp.hardware_provenance()
    assert set(facts) == ALLOWED_KEYS
    assert facts["cpu_count"] == os.cpu_count()
    assert facts["platform"] == {"machine": platform.machine(), "python": platform.python_version()}
    assert isinstance(facts["gpus"], list)
    assert all(set(g) == {"name", "driver", "memory"} for g in facts["gpus"])
    assert isinstance(facts["trtmc_packages"], dict)
    assert "trtmc-videoqa" not in facts["trtmc_packages"]
    for key in ("cuda_driver", "cuda_toolkit", "tensorrt"):
        assert facts[key] is None or re.fullmatch(r"[0-9][0-9A-Za-z.+]*", facts[key]), (key, facts[key])
    assert hardware() == hp.hardware_provenance()  # what rows get


def test_hardware_provenance_names_neither_machine_nor_user_nor_paths() -> None:
    dumped = json.dumps(hp.hardware_provenance())
    tokens = set(re.findall(r"[A-Za-z0-9_.-]+", dumped))
    host = socket.gethostname()
    if len(host) >= 3:
        assert host not in dumped
        assert host.split(".")[0] not in tokens
    assert getpass.getuser() not in tokens
    assert str(Path.home()) not in dumped
    assert "/" not in dumped  # no path of any kind
    assert platform.release() not in dumped  # no kernel release
    assert not re.search(r"GPU-[0-9a-f]{8}-|[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9]", dumped)


def test_package_versions_come_from_the_interpreter_given() -> None:
    here = hp.hardware_provenance(trtmc_python=Path(sys.executable))
    assert here["tensorrt"] is None  # no TensorRT in this interpreter
    assert here["trtmc_packages"] == {}  # nor any TRTMC distribution, this tool's own left out


def _fake_dist(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.mark.skipif(os.name != "posix", reason="the fake interpreter is a shell script")
def test_package_versions_are_read_in_trtmc_python_not_this_one(tmp_path: Path) -> None:
    """A stand-in for TRTMC's interpreter that sees TensorRT and TRTMC: the versions are that interpreter's."""
    site = tmp_path / "site"
    _fake_dist(site, "tensorrt", "10.9.0.34")
    _fake_dist(site, "trtmc", "0.4.0")
    _fake_dist(site, "tensorrt-model-connect", "0.4.0")
    python = tmp_path / "trtmc-python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{site}" exec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    facts = hp.hardware_provenance(trtmc_python=python)
    assert facts["tensorrt"] == "10.9.0.34"
    assert facts["trtmc_packages"] == {"tensorrt-model-connect": "0.4.0", "trtmc": "0.4.0"}
    assert str(tmp_path) not in json.dumps(facts)
    assert hp.hardware_provenance()["tensorrt"] is None  # this interpreter still has none


def test_a_missing_interpreter_or_tool_gives_none_never_raises(tmp_path: Path, monkeypatch) -> None:
    facts = hp.hardware_provenance(trtmc_python=tmp_path / "no-such-python")
    assert facts["tensorrt"] is None and facts["trtmc_packages"] == {}
    monkeypatch.setenv("PATH", str(tmp_path))  # neither nvidia-smi nor nvcc
    facts = hp.hardware_provenance()
    assert facts["gpus"] == [] and facts["cuda_driver"] is None and facts["cuda_toolkit"] is None


@pytest.mark.skipif(os.name != "posix", reason="the fake tools are shell scripts")
def test_a_hanging_tool_times_out(tmp_path: Path, monkeypatch) -> None:
    for tool in ("nvidia-smi", "nvcc"):
        script = tmp_path / tool
        script.write_text("#!/bin/sh\nexec sleep 30\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setattr(hp, "PROBE_TIMEOUT_S", 0.5)
    facts = hp.hardware_provenance()
    assert facts["gpus"] == [] and facts["cuda_driver"] is None and facts["cuda_toolkit"] is None


def test_this_interpreter_is_read_in_process_as_a_fresh_start_of_it_answers() -> None:
    """What provenance keeps of this interpreter's packages is what the packages script says when it is started."""
    started = hp.installed_packages(Path(sys.executable))
    here = hp.own_packages()
    assert started is not None and here is not None
    assert hp.tensorrt_version(here) == hp.tensorrt_version(started)
    assert hp.trtmc_packages(here) == hp.trtmc_packages(started)
    assert {name: started[name] for name in here} == here  # nothing it would not have said


def test_this_interpreter_is_read_on_its_path_without_the_script_folder(tmp_path: Path, monkeypatch) -> None:
    """Distributions on this interpreter's path are read in-process; what lies in the folder Python put first (the
    script's, or the current directory) is not an installed package; a description that names TRTMC names nothing."""
    site, here = tmp_path / "site", tmp_path / "script-folder"
    _fake_dist(site, "tensorrt", "10.9.0.34")
    _fake_dist(site, "trtmc", "0.4.0")
    _fake_dist(here, "trtmc-server", "0.4.0")
    info = site / "other-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: other\nVersion: 1.0\n\nWorks with TRTMC and TensorRT.\n"
    )
    monkeypatch.setattr(sys, "path", [str(here), str(site), *sys.path[1:]])
    own = hp.own_packages() or {}
    assert own["tensorrt"] == "10.9.0.34" and own["trtmc"] == "0.4.0"
    assert "trtmc-server" not in own and "other" not in own
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")  # a PATH not probed before
    facts = hp.hardware_provenance()
    assert facts["tensorrt"] == "10.9.0.34"
    assert facts["trtmc_packages"] == {"trtmc": "0.4.0"}


def test_the_machine_is_probed_once_per_run_and_each_row_gets_its_own_copy(tmp_path: Path, monkeypatch) -> None:
    calls: list[int] = []

    def counted() -> dict[str, str]:
        calls.append(1)
        return {"trtmc": "0.4.0"}

    monkeypatch.setattr(hp, "own_packages", counted)
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH not probed before: neither nvidia-smi nor nvcc on it
    first = hp.hardware_provenance()
    first["trtmc_packages"]["trtmc"] = "changed by a row"
    assert hp.hardware_provenance()["trtmc_packages"] == {"trtmc": "0.4.0"}
    assert len(calls) == 1
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{tmp_path}")  # another PATH: other tools, probed again
    hp.hardware_provenance()
    assert len(calls) == 2
