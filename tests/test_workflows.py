"""The GitHub Actions workflows: checked by a real linter (actionlint, from the test extra, with shellcheck for the
`run:` scripts) where it is installed, and their structure read with a YAML parser always."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from trtmc_videoqa.pins import load_pins

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
PINS = load_pins(REPO / "containers" / "pins.toml")
GPU_RUNNER = ["self-hosted", "linux", "x64", "gpu"]
DAGGER_ACTION = "dagger/dagger-for-github@"
BIN = Path(sys.executable).parent


def load(name: str) -> dict:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def steps_using(job: dict, action: str) -> list[dict]:
    return [step for step in job["steps"] if step.get("uses", "").startswith(action)]


def dagger_version(workflow: dict, step: dict) -> str:
    version = step["with"]["version"]
    return workflow["env"]["DAGGER_VERSION"] if version == "${{ env.DAGGER_VERSION }}" else version


@pytest.fixture(scope="module")
def qualify() -> dict:
    return load("qualify.yml")


def test_actionlint_finds_nothing(tmp_path) -> None:
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    actionlint = shutil.which("actionlint", path=path)
    if actionlint is None:
        pytest.skip("actionlint is not installed (the test extra brings it on linux x86_64)")
    config = tmp_path / "actionlint.yaml"
    config.write_text("self-hosted-runner:\n  labels: [gpu]\n")  # the GPU runner's custom label
    env = {**os.environ, "PATH": path}
    done = subprocess.run(
        [actionlint, "-config-file", str(config), "-no-color", str(WORKFLOWS / "qualify.yml")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run(
        [actionlint, "-config-file", str(config), "-no-color", str(WORKFLOWS / "ci.yml")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ci_yml_is_kept() -> None:
    ci = load("ci.yml")
    assert "push" in ci["on"] and ci["jobs"]


def test_a_matrix_job_lists_the_profiles_from_the_inventory(qualify) -> None:
    assert "workflow_dispatch" in qualify["on"]
    matrix = qualify["jobs"]["matrix"]
    assert matrix["outputs"]["profiles"] == "${{ steps.profiles.outputs.profiles }}"
    (inventory,) = steps_using(matrix, DAGGER_ACTION)
    assert inventory["with"]["call"] == "inventory export --path=inventory"
    assert dagger_version(qualify, inventory) == PINS.dagger.engine.removeprefix("v")
    profiles = next(step for step in matrix["steps"] if step.get("id") == "profiles")
    assert "inventory/matrix.json" in profiles["run"] and "GITHUB_OUTPUT" in profiles["run"]
    assert "${{" not in profiles["run"]  # inputs reach the script through env, never pasted into it
    assert steps_using(matrix, "actions/upload-artifact@")[0]["with"]["name"] == "inventory"


def test_one_gpu_job_per_profile_through_dagger(qualify) -> None:
    job = qualify["jobs"]["qualify"]
    assert job["needs"] == "matrix"
    assert "needs.matrix.outputs.profiles != '[]'" in job["if"]  # an empty matrix skips the per-profile jobs
    assert job["runs-on"] == GPU_RUNNER
    assert job["strategy"]["matrix"]["profile"] == "${{ fromJSON(needs.matrix.outputs.profiles) }}"
    assert job["strategy"]["fail-fast"] is False
    assert job["env"]["_EXPERIMENTAL_DAGGER_GPU_SUPPORT"] == "1"
    assert job["env"]["HF_TOKEN"] == "${{ secrets.HF_TOKEN }}"
    smoke, run = steps_using(job, DAGGER_ACTION)
    assert smoke["with"]["call"] == "gpu-smoke stdout"
    for step in (smoke, run):
        assert dagger_version(qualify, step) == PINS.dagger.engine.removeprefix("v") == "0.21.11"
        assert step["with"]["verb"] == "call"
    arguments = next(step for step in job["steps"] if step.get("id") == "arguments")["run"]
    assert 'args="qualify --profile=$PROFILE"' in arguments
    assert "--hf-token=env:HF_TOKEN" in arguments  # the token goes in as a Dagger secret, by name
    assert "export --path=artifacts" in arguments
    assert run["with"]["call"] == "${{ steps.arguments.outputs.call }}"
    summary = next(step for step in job["steps"] if "GITHUB_STEP_SUMMARY" in step.get("run", ""))
    assert summary["if"] == "always()"
    (upload,) = steps_using(job, "actions/upload-artifact@")
    assert upload["if"] == "always()" and upload["with"]["name"] == "qualify-${{ matrix.profile }}"


def test_a_final_job_merges_every_row_even_when_the_matrix_is_empty(qualify) -> None:
    job = qualify["jobs"]["report"]
    assert set(job["needs"]) == {"matrix", "qualify"}
    assert job["if"].startswith("always()")
    assert job["runs-on"] != GPU_RUNNER  # merging needs no GPU
    downloads = steps_using(job, "actions/download-artifact@")
    assert downloads[0]["with"]["name"] == "inventory"  # the unsupported rows, with or without a matrix
    assert downloads[1]["with"]["pattern"] == "qualify-*"
    assert downloads[1]["if"] == "needs.matrix.outputs.profiles != '[]'"
    merge = next(step for step in job["steps"] if "trtmc-videoqa report" in step.get("run", ""))
    assert "trtmc-videoqa report report --out report" in merge["run"]
    assert steps_using(job, "actions/upload-artifact@")[-1]["with"]["name"] == "qualification-report"


def test_a_profile_whose_job_left_no_row_is_a_failed_row_in_the_report(qualify, tmp_path) -> None:
    """The report job's row-gathering step, run for real: one profile's job uploaded its row, another's failed
    before its step chain (no artifact): the second becomes a failed row, not a silent gap."""
    import json
    import shutil
    import subprocess

    from trtmc_videoqa.results import ResultRow

    step = next(s for s in qualify["jobs"]["report"]["steps"] if s.get("name") == "Rows of the profiles' jobs")
    work = tmp_path / "job"
    shutil.copytree(REPO / "containers", work / "containers")
    uploaded = work / "report" / "checkpoints" / "qualify-ran"
    uploaded.mkdir(parents=True)
    (uploaded / "result.json").write_text(
        json.dumps({"profile": "ran", "status": "aiperf-qualified", "status_reason": "measured"})
    )
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PROFILES": json.dumps(["ran", "never-ran"])},
    )
    assert done.returncode == 0, done.stderr
    rows = {
        p.parent.name: ResultRow.model_validate_json(p.read_bytes())
        for p in (work / "report" / "checkpoints").glob("*/result.json")
    }
    assert {name: row.status for name, row in rows.items()} == {"ran": "aiperf-qualified", "never-ran": "failed"}
    assert "left no row" in rows["never-ran"].status_reason
    assert rows["never-ran"].status_evidence == [f"no log: {rows['never-ran'].status_reason}"]
    bad = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PROFILES": "not a list"},
    )
    assert bad.returncode != 0 and "is not a JSON list of profile names" in bad.stderr  # never a silent gap


def test_no_secret_is_written_into_a_command(qualify) -> None:
    text = (WORKFLOWS / "qualify.yml").read_text()
    assert text.count("secrets.HF_TOKEN") == 1  # only into the job's environment
    for job in qualify["jobs"].values():
        for step in job["steps"]:
            assert "secrets." not in step.get("run", "") and "secrets." not in str(step.get("with", {}))
