"""The Dagger module's plan helpers (paths, pins, environments, labels, keys), tested without the Dagger SDK."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from trtmc_videoqa import __version__, dagger_plan
from trtmc_videoqa.common.pins import load_pins

REPO = Path(__file__).resolve().parents[1]
PINS = load_pins(REPO / "containers" / "pins.toml")


def test_the_plan_module_loads_no_dagger_code() -> None:
    code = "import sys, trtmc_videoqa.dagger_plan; print('dagger' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_plan_reads_the_repositorys_pin_file(monkeypatch) -> None:
    monkeypatch.delenv("TRTMC_VIDEOQA_PINS", raising=False)
    assert dagger_plan.pin_file() == REPO / "containers" / "pins.toml"
    assert dagger_plan.pins() == PINS


def test_profile_names_and_workloads_are_checked() -> None:
    assert dagger_plan.check_profile("vidqa-2b_v1.0") == "vidqa-2b_v1.0"
    for bad in ("../x", "a/b", "", ".hidden", "a b"):
        with pytest.raises(ValueError, match="not a profile name"):
            dagger_plan.check_profile(bad)
    with pytest.raises(ValueError, match="not built in; choose one of: .*bigbuckbunny"):
        dagger_plan.workload_sha256("nope")


def test_the_qualification_key_and_argv() -> None:
    key = dagger_plan.qualification_key(PINS, "p1", "synthetic", "100", None)
    assert set(key) == {f"TRTMC_VIDEOQA_KEY_{k}" for k in ("PROFILE", "TRTMC_COMMIT", "WORKLOAD", "VERSIONS")}
    assert key["TRTMC_VIDEOQA_KEY_WORKLOAD"] == f"synthetic sha256:{dagger_plan.workload_sha256('synthetic')}"
    assert f"trtmc-videoqa=={__version__}" in key["TRTMC_VIDEOQA_KEY_VERSIONS"].split()
    assert "cuda-arch=sm_100" in key["TRTMC_VIDEOQA_KEY_VERSIONS"].split()
    forced = dagger_plan.qualification_key(PINS, "p1", "synthetic", "100", "n0")
    assert forced == {**key, "TRTMC_VIDEOQA_KEY_NONCE": "n0"}
    argv = dagger_plan.qualification_argv("p1", "synthetic", 60, force=False)
    assert argv[:3] == ["sh", f"{dagger_plan.RECIPES}/qualify-one.sh", "p1"]
    assert argv[-4:] == ["--bundle-cache", dagger_plan.BUNDLE_CACHE, "--video-transport", "data-url"]
    assert dagger_plan.qualification_argv("p1", "synthetic", 60, force=True) == argv + ["--force"]
    http = dagger_plan.qualification_argv("p1", "synthetic", 60, force=False, video_transport="http")
    assert http == argv[:-1] + ["http"]
    assert dagger_plan.self_test_argv("auto")[-2:] == ["--video-transport", "auto"]
    with pytest.raises(ValueError, match="not one of"):
        dagger_plan.qualification_argv("p1", "synthetic", 60, force=False, video_transport="file")
    assert dagger_plan.bundle_volume(PINS, "90") == f"trtmc-videoqa-bundles-{PINS.trtmc.commit[:12]}-sm90"


def test_the_plan_s_transport_choices_are_the_transport_table_s() -> None:
    """dagger_plan.py may import only common/ and results/layout.py, so it keeps a copy of --video-transport's
    choices: held equal to transports/table.py here, as is the Dagger module's word for the parameter."""
    from trtmc_videoqa.transports.table import CHOICES, DEFAULT_CHOICE

    assert tuple(CHOICES) == dagger_plan.VIDEO_TRANSPORTS
    assert dagger_plan.DEFAULT_VIDEO_TRANSPORT == DEFAULT_CHOICE
    import typing

    from trtmc_videoqa import dagger_module  # the SDK's import: this test reads the argument's words as Dagger does

    doc = typing.get_args(dagger_module.Transport)[1].documentation
    assert all(choice in doc for choice in CHOICES) and f"(default {DEFAULT_CHOICE})" in doc


def test_labels_say_whether_the_base_is_pinned() -> None:
    for name, image in PINS.images.items():
        labels = dagger_plan.image_labels(name, image, PINS)
        assert labels["io.github.trtmc-videoqa.base"] == image.provenance
        assert ("org.opencontainers.image.base.digest" in labels) == image.pinned
    assert dagger_plan.runtime_labels(PINS, "90")["io.github.trtmc-videoqa.cuda-arch"] == "sm_90"


def test_pin_lines_keep_a_digest_that_was_not_resolved() -> None:
    digest = "sha256:" + "c3" * 32
    assert dagger_plan.resolution(f"docker.io/library/python@{digest}") == (
        digest,
        f"resolved from docker.io/library/python@{digest}",
    )
    assert dagger_plan.resolution("python:3.11") == (None, "no digest in python:3.11")
    note = dagger_plan.unresolved_note(RuntimeError("no registry\nmore"))
    assert note == "not resolved (no registry); digest left as pinned"
    text = dagger_plan.pin_lines(PINS, {"cpu": digest, "runtime": None}, {"runtime": note})
    parsed = tomllib.loads(text)["images"]
    assert parsed["cpu"]["digest"] == digest
    assert parsed["runtime"]["digest"] == PINS.images["runtime"].digest
