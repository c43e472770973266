"""containers/host_index.py: a container build reaches the package index the way this machine's pip does, with only
what applies inside the build (the index address and the CA bundle) and never a credential. Run for real, with pip's
own `pip config list`, on configurations written here (PIP_CONFIG_FILE=os.devnull keeps the machine's files out)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HOST_INDEX = REPO / "containers" / "host_index.py"


def host_index(*args: str, **pip_env: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, **pip_env})
    return subprocess.run(
        [sys.executable, str(HOST_INDEX), *args], capture_output=True, text=True, env=env, timeout=120
    )


def arguments(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert done.returncode == 0, done.stderr
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


def test_no_setting_means_the_public_index() -> None:
    assert arguments(host_index()) == {"PIP_INDEX_URL": "https://pypi.org/simple"}


def test_a_mirror_and_extra_indexes_pass_but_what_is_local_to_this_machine_does_not(tmp_path: Path) -> None:
    done = host_index(
        PIP_INDEX_URL="https://mirror.example/simple",
        PIP_EXTRA_INDEX_URL="file:///opt/pypi/simple https://extra.example/simple",
        PIP_FIND_LINKS="/opt/wheels",
        PIP_CONSTRAINT=str(tmp_path / "constraints.txt"),
    )
    assert arguments(done) == {
        "PIP_INDEX_URL": "https://mirror.example/simple",
        "PIP_EXTRA_INDEX_URL": "https://extra.example/simple",
    }
    assert "left out: extra index file:///opt/pypi/simple" in done.stderr
    assert "left out: find-links /opt/wheels" in done.stderr and "left out: constraint" in done.stderr


def test_an_index_with_a_credential_is_refused_and_the_password_never_printed() -> None:
    done = host_index(PIP_INDEX_URL="https://builder:s3cret-pw@mirror.example/simple")
    assert done.returncode == 2 and done.stdout == ""
    assert "carries credentials" in done.stderr and "s3cret-pw" not in done.stderr and "builder" not in done.stderr
    extra = host_index(PIP_EXTRA_INDEX_URL="https://token@extra.example/simple")
    assert extra.returncode == 2 and "token@" not in extra.stderr


def test_a_local_only_index_is_refused() -> None:
    assert host_index(PIP_INDEX_URL="file:///opt/pypi/simple").returncode == 2
    assert host_index(PIP_NO_INDEX="1").returncode == 2


def test_the_ca_bundle_is_copied_for_the_build(tmp_path: Path) -> None:
    bundle = tmp_path / "corporate-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    certs = tmp_path / "certs"
    certs.mkdir()
    done = host_index("--cert-to", str(certs), PIP_CERT=str(bundle))
    assert arguments(done) == {"PIP_INDEX_URL": "https://pypi.org/simple"}  # the bundle is a file, not an argument
    assert (certs / "host-pip-cert.pem").read_text() == bundle.read_text()
    missing = host_index("--cert-to", str(certs), PIP_CERT=str(tmp_path / "absent.pem"))
    assert missing.returncode == 0 and "left out: cert" in missing.stderr


def test_the_config_files_are_read_with_pips_precedence(tmp_path: Path) -> None:
    config = tmp_path / "pip.conf"
    config.write_text(
        "[global]\nindex-url = https://global.example/simple\n[install]\nindex-url = https://install.example/simple\n"
    )
    assert arguments(host_index(PIP_CONFIG_FILE=str(config)))["PIP_INDEX_URL"] == "https://install.example/simple"
    over = host_index(PIP_CONFIG_FILE=str(config), PIP_INDEX_URL="https://env.example/simple")
    assert arguments(over)["PIP_INDEX_URL"] == "https://env.example/simple"


def test_the_dockerignore_uploads_what_the_dagger_module_does() -> None:
    from trtmc_videoqa.dagger_plan import SOURCE_IGNORE

    lines = [line for line in (REPO / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert lines == SOURCE_IGNORE  # the classic builder sends the same context the module uploads: no .venv


def test_a_left_out_setting_is_printed_without_its_credential() -> None:
    done = host_index(
        PIP_FIND_LINKS="https://user:hunter2@wheels.example/links", PIP_EXTRA_INDEX_URL="file:///opt/pypi/simple"
    )
    assert done.returncode == 0 and "left out: find-links https://***@wheels.example/links" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout
