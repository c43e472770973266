"""The GitHub Actions workflows: checked by a real linter (actionlint, from the test extra, with shellcheck for the
`run:` scripts) where it is installed, and their structure read with a YAML parser always. Also the gates around
them: every action pinned to a commit, no checkout keeping its credentials, and `.ci/run` and
`.pre-commit-config.yaml` running the same static gates."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from trtmc_videoqa.common.pins import load_pins

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
PINS = load_pins(REPO / "containers" / "pins.toml")
GPU_RUNNER = ["self-hosted", "linux", "x64", "gpu"]
DAGGER_ACTION = "dagger/dagger-for-github@"
BIN = Path(sys.executable).parent
# Each action's commit, resolved from the tags of the action's own repository; the tag goes in the line's comment.
# A pin is changed on purpose: here and in the workflows together.
ACTION_PINS = {
    "actions/checkout": ("fbc6f3992d24b796d5a048ff273f7fcc4a7b6c09", "v5.1.0"),
    "actions/setup-python": ("ece7cb06caefa5fff74198d8649806c4678c61a1", "v6.3.0"),
    "actions/upload-artifact": ("b7c566a772e6b6bfb58ed0dc250532a479d7789f", "v6.0.0"),
    "actions/download-artifact": ("37930b1c2abaa49bbe596cd826c3c89aef350131", "v7.0.0"),
    "dagger/dagger-for-github": ("d913e70051faf3b907d4dd96ef1161083c88c644", "v8.2.0"),
}
PINNED_USES = re.compile(r"uses: (?P<action>[\w.-]+/[\w.-]+)@(?P<sha>[0-9a-f]{40}) # (?P<tag>v\d+(\.\d+)*)")


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
    # then TRTMC's own aiperf_qual reader over the rows' execution.jsonl, from the pinned commit, where it has one
    names = [step.get("name", "") for step in job["steps"]]
    reader = job["steps"][names.index("aiperf_qual's own reader over the rows (the pinned TRTMC commit)")]
    assert names.index(reader["name"]) == names.index("Merge") + 1
    assert (
        "recipe.py pin trtmc commit" in reader["run"] and 'fetch -q --depth 1 "$repository" "$commit"' in reader["run"]
    )
    assert "trtmc-videoqa doctor --aiperf-qual --trtmc trtmc --artifacts report" in reader["run"]
    assert "has no apps/aiperf_qual (older layout)" in reader["run"] and "if" not in reader  # never skipped silently


def test_every_upload_leaves_the_raw_logs_out(qualify) -> None:
    """The Dagger exports hold the public part only; each upload also excludes private/ folders by pattern."""
    uploads = [step for job in qualify["jobs"].values() for step in steps_using(job, "actions/upload-artifact@")]
    assert len(uploads) == 3
    for upload in uploads:
        lines = [line.strip() for line in upload["with"]["path"].splitlines() if line.strip()]
        assert any(line.startswith("!") and line.endswith("**/private/") for line in lines), upload
    dagger_calls = [
        s["run"] for j in qualify["jobs"].values() for s in j["steps"] if "export --path" in s.get("run", "")
    ]
    assert dagger_calls and not [call for call in dagger_calls if "--private" in call]


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


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


@pytest.mark.parametrize("name", ["ci.yml", "qualify.yml", "refresh.yml"])
def test_every_action_is_pinned_to_the_commit_of_its_tag(name) -> None:
    lines = [line.strip() for line in (WORKFLOWS / name).read_text().splitlines() if "uses:" in line]
    assert lines
    for line in lines:
        line = line.removeprefix("- ")
        pinned = PINNED_USES.fullmatch(line)
        assert pinned, f"{name}: not `uses: owner/repo@<40-hex commit> # <tag>`: {line}"
        assert (pinned["sha"], pinned["tag"]) == ACTION_PINS[pinned["action"]], line
    # what the YAML parser reads is the commit alone (the tag is only a comment)
    assert all(
        re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]) for step in _steps(load(name)) if "uses" in step
    )


@pytest.mark.parametrize("name", ["ci.yml", "qualify.yml", "refresh.yml"])
def test_no_checkout_keeps_its_credentials_and_no_job_may_write(name) -> None:
    workflow = load(name)
    checkouts = [step for step in _steps(workflow) if step.get("uses", "").startswith("actions/checkout@")]
    assert checkouts and all(step["with"]["persist-credentials"] is False for step in checkouts)
    assert workflow["permissions"] in ({}, {"contents": "read"})  # the default token's scopes, narrowed
    for job in workflow["jobs"].values():
        assert all(scope != "write" for scope in job.get("permissions", {}).values())


def test_ci_runs_dot_ci_run_on_every_supported_python() -> None:
    (job,) = load("ci.yml")["jobs"].values()
    assert job["strategy"]["matrix"]["python"] == ["3.11", "3.12", "3.13"]
    (setup,) = steps_using(job, "actions/setup-python@")
    assert setup["with"]["python-version"] == "${{ matrix.python }}"
    runs = [i for i, step in enumerate(job["steps"]) if step.get("run") == "bash .ci/run"]
    assert len(runs) == 1  # once, after the set-up; only the screenshot upload may follow it, whatever the outcome
    (upload,) = job["steps"][runs[0] + 1 :]
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["if"] == "${{ always() }}"
    assert upload["with"]["path"] == "build/report-screenshots/"
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11,<3.14"  # the same three versions


def _ci_gates() -> list[list[str]]:
    return [
        shlex.split(line.strip())[1:]
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.startswith("  gate ")
    ]


def test_dot_ci_run_runs_the_gates_after_the_install_and_before_the_tests() -> None:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    tools = [gate[0] for gate in _ci_gates()]
    assert tools == [
        ".venv/bin/ruff",
        ".venv/bin/ruff",
        ".venv/bin/mypy",
        ".venv/bin/check-jsonschema",
        ".venv/bin/zizmor",
    ]
    assert "--offline" in _ci_gates()[-1]  # zizmor never goes online
    assert lines.index("gates") < next(i for i, line in enumerate(lines) if line.endswith("-m pytest"))
    first_install = "python3 -m venv .venv && .venv/bin/pip install"
    install = next(i for i, line in enumerate(lines) if line.startswith(first_install))
    assert lines.index("gates") > install
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "trtmc-videoqa[lint]" in extras["test"]  # the README's test set-up installs the gates
    pinned = {requirement.split("==")[0] for requirement in extras["lint"] if "==" in requirement}
    assert {Path(tool).name for tool in tools} <= pinned and len(pinned) == len(extras["lint"])


def test_pre_commit_runs_the_same_gates_as_local_hooks() -> None:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    (local,) = config["repos"]
    assert local["repo"] == "local"  # no hook repository is fetched
    hooks = [shlex.split(hook["entry"]) for hook in local["hooks"]]
    assert all(hook["language"] == "system" for hook in local["hooks"])
    gates = _ci_gates()
    assert len(hooks) == len(gates)
    for hook, gate in zip(hooks, gates, strict=True):
        assert gate[: len(hook)] == hook  # check-jsonschema's workflow files come from pre-commit itself


def test_the_weekly_refresh_watches_main_and_fails_exactly_on_a_new_capable_checkpoint() -> None:
    workflow = load("refresh.yml")
    assert set(workflow["on"]) == {"schedule", "workflow_dispatch"}
    (cron,) = [entry["cron"] for entry in workflow["on"]["schedule"]]
    assert len(cron.split()) == 5 and cron.split()[2:4] == ["*", "*"] and cron.split()[4] != "*"  # weekly
    (job,) = workflow["jobs"].values()
    assert job["runs-on"].startswith("ubuntu")  # a hosted runner: no GPU needed to read sources
    runs = [step.get("run", "") for step in job["steps"]]
    (audit,) = [run for run in runs if "trtmc-videoqa refresh" in run]
    assert "--fail-on-new-capable" in audit and "--out refresh" in audit  # exit 3 fails the job, and only that
    summary = next(step for step in job["steps"] if "GITHUB_STEP_SUMMARY" in step.get("run", ""))
    assert "reconciliation.md" in summary["run"] and summary["if"] == "${{ always() }}"
    (upload,) = steps_using(job, "actions/upload-artifact@")
    assert upload["with"]["path"].strip() == "refresh/" and upload["if"] == "${{ always() }}"
