"""The Dagger module's pipelines, read offline: nothing is awaited against an engine (none exists here).

Every assertion goes through `plan()`, the one helper that reads the query a Dagger object would send: the SDK's
private `obj._ctx.selections` (dagger-io 0.21.11: a deque of `Field(type_name, name, args)`; an argument that is a
Dagger object stays that object until the query is sent, so `plan` reads it recursively). `execs()` only
interprets that plan: each `withExec` with the container state the chain gave it before that point.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import tomllib
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import pytest

from trtmc_videoqa import __version__, dagger_plan
from trtmc_videoqa.common.pins import load_pins

# The Dagger SDK and the module, set by `_dagger_sdk` when this module's tests run rather than when pytest collects
# them: every xdist worker collects every test module, and the SDK takes about a second to import (beartype decorates
# its generated client), which only the worker that runs these tests needs.
dagger: Any = None
dag: Any = None
TrtmcVideoqa: Any = None


@pytest.fixture(scope="module", autouse=True)
def _dagger_sdk() -> Iterator[None]:
    global dagger, dag, TrtmcVideoqa
    dagger = pytest.importorskip("dagger")
    dag = dagger.dag
    from trtmc_videoqa.dagger_module import TrtmcVideoqa as module_class

    TrtmcVideoqa = module_class
    with pytest.MonkeyPatch.context() as patch:
        _one_converter(patch)
        yield


def _one_converter(patch: pytest.MonkeyPatch) -> None:
    """The SDK makes a new cattrs converter for every chained call (`Context.__post_init__`), 3,500 of them here,
    most of this module's CPU. Its hooks need the context only to read an engine's answer back (`structure`), which
    never happens offline; building a query only unstructures arguments. So these tests share the first one made."""
    from dagger.client import _core

    made = _core.make_converter
    shared: list[Any] = []

    def once(ctx: Any) -> Any:
        if not shared:
            shared.append(made(ctx))
        return shared[0]

    patch.setattr(_core, "make_converter", once)


REPO = Path(__file__).resolve().parents[1]
PINS = load_pins(REPO / "containers" / "pins.toml")
PLAINTEXT = "hf_not-a-real-token-0123456789"
SERVE_PLAINTEXT = "serve-not-a-real-key-9876"


# --- the one helper that reads the built pipeline ------------------------------------------------------------------


class Plan(list):
    """The selections of one Dagger object, root first: (type, field, args); object args are nested Plans."""


def plan(obj) -> Plan:
    from dagger.client.base import Type  # here too: test_containers.py reads plans without this module's fixture

    def value(v):
        if isinstance(v, Type):
            return plan(v)
        if isinstance(v, (list, tuple)):
            return [value(x) for x in v]
        return v

    return Plan((f.type_name, f.name, {k: value(v) for k, v in f.args.items()}) for f in obj._ctx.selections)


# --- reading a plan ---------------------------------------------------------------------------------------------------


@dataclass
class Exec:
    argv: list[str]
    image: str | None
    expect: str
    gpu: bool
    env: dict[str, str]
    secrets: dict[str, Plan]
    mounts: dict[str, tuple[str, str]]  # path -> (cache volume key, sharing)
    directories: dict[str, Plan]
    labels: dict[str, str]
    chain: Plan = field(repr=False)


def _fingerprint(steps) -> str:
    return json.dumps(steps, sort_keys=True, default=str)


def execs(obj) -> list[Exec]:
    """Every withExec reachable from obj (its own chain and every nested one), each once, inputs first."""
    found: dict[str, Exec] = {}

    def walk(chain: Plan) -> None:
        state: dict = dict(image=None, gpu=False, env={}, secrets={}, mounts={}, directories={}, labels={})
        for index, (_, name, args) in enumerate(chain):
            for arg in args.values():
                for nested in [arg] if isinstance(arg, Plan) or not isinstance(arg, list) else arg:
                    if isinstance(nested, Plan):
                        walk(nested)
            if name == "from":
                state["image"] = args["address"]
            elif name in ("experimentalWithAllGPUs", "experimentalWithGPU"):
                state["gpu"] = True
            elif name == "withEnvVariable":
                state["env"] = {**state["env"], args["name"]: args["value"]}
            elif name == "withSecretVariable":
                state["secrets"] = {**state["secrets"], args["name"]: args["secret"]}
            elif name == "withMountedCache":
                key = next(a["key"] for _, n, a in args["cache"] if n == "cacheVolume")
                state["mounts"] = {**state["mounts"], args["path"]: (key, args.get("sharing", "SHARED"))}
            elif name == "withDirectory":
                state["directories"] = {**state["directories"], args["path"]: args["source"]}
            elif name == "withLabel":
                state["labels"] = {**state["labels"], args["name"]: args["value"]}
            elif name == "withExec":
                prefix = Plan(chain[: index + 1])
                found.setdefault(
                    _fingerprint(prefix),
                    Exec(
                        argv=args["args"],
                        image=state["image"],
                        expect=args.get("expect", "SUCCESS"),
                        gpu=state["gpu"],
                        env=dict(state["env"]),
                        secrets=dict(state["secrets"]),
                        mounts=dict(state["mounts"]),
                        directories=dict(state["directories"]),
                        labels=dict(state["labels"]),
                        chain=prefix,
                    ),
                )

    walk(plan(obj))
    return list(found.values())


def runs_script(e: Exec, script: str) -> bool:
    return e.argv[:2] == ["sh", f"{dagger_plan.RECIPES}/{script}"]


def qualification_execs(obj) -> list[Exec]:
    return [e for e in execs(obj) if runs_script(e, "qualify-one.sh")]


def key_of(e: Exec) -> dict[str, str]:
    return {k: v for k, v in e.env.items() if k.startswith(dagger_plan.KEY_PREFIX)}


def everything(obj) -> str:
    return _fingerprint(plan(obj))


# --- fixtures ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def module() -> TrtmcVideoqa:
    return TrtmcVideoqa.create(source=dag.directory())


def qualify(module: TrtmcVideoqa, **kwargs):
    """Runs the coroutine; with profiles given it awaits nothing from an engine."""
    return anyio.run(lambda: module.qualify(**kwargs))


@pytest.fixture
def pinned(tmp_path, monkeypatch):
    """A pin file like the committed one, with (made-up, test-only) digests: how the module reads a pinned digest."""
    text = (REPO / "containers" / "pins.toml").read_text()
    digests = {"cpu": "sha256:" + "a1" * 32, "runtime": "sha256:" + "b2" * 32}
    for name, digest in digests.items():
        head, sep, tail = text.partition(f"[images.{name}]")
        text = head + sep + tail.replace('digest = ""', f'digest = "{digest}"', 1)
    path = tmp_path / "pins.toml"
    path.write_text(text)
    monkeypatch.setenv("TRTMC_VIDEOQA_PINS", str(path))
    return digests


# --- images and pins --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cpu", "runtime"])
def test_base_images_come_from_the_pin_file_and_unpinned_is_said(module, name) -> None:
    image = PINS.images[name]
    container = module.cpu() if name == "cpu" else module.runtime()
    steps = plan(container)
    assert steps[:2] == [("Query", "container", {}), ("Container", "from", {"address": image.reference})]
    labels = {a["name"]: a["value"] for _, n, a in steps if n == "withLabel"}
    assert labels["io.github.trtmc-videoqa.base"] == image.provenance
    if image.pinned:
        assert "@sha256:" in image.reference and labels["org.opencontainers.image.base.digest"] == image.digest
    else:
        assert labels["io.github.trtmc-videoqa.base"].endswith("(unpinned)")
        assert "org.opencontainers.image.base.digest" not in labels


def test_a_pinned_digest_is_pulled_by_digest(module, pinned) -> None:
    for name, container in (("cpu", module.cpu()), ("runtime", module.runtime())):
        base = PINS.images[name].base
        assert plan(container)[1] == ("Container", "from", {"address": f"{base}@{pinned[name]}"})
        labels = {a["name"]: a["value"] for _, n, a in plan(container) if n == "withLabel"}
        assert labels["org.opencontainers.image.base.digest"] == pinned[name]
        assert labels["io.github.trtmc-videoqa.base"] == f"{base}@{pinned[name]}"


def test_trtmc_is_fetched_by_the_pinned_commit_and_built_for_sm90(module) -> None:
    pinned_tree = Plan(
        [
            ("Query", "git", {"url": PINS.trtmc.repository}),
            ("GitRepository", "commit", {"id": PINS.trtmc.commit}),
            ("GitRef", "tree", {}),
        ]
    )
    build = next(e for e in execs(module.runtime()) if runs_script(e, "build-trtmc.sh"))
    assert build.directories[dagger_plan.TRTMC_SRC] == pinned_tree
    assert build.argv[2:] == [dagger_plan.TRTMC_SRC, dagger_plan.TRTMC_BUILD, dagger_plan.TRTMC_VENV]
    assert build.env["TRTMC_CUDA_ARCH"] == "90"
    assert build.env["CCACHE_DIR"] == dagger_plan.CCACHE_DIR
    assert build.mounts[dagger_plan.CCACHE_DIR][0] == "trtmc-videoqa-ccache-sm90"
    assert build.mounts[dagger_plan.PIP_CACHE][0] == "trtmc-videoqa-pip"
    other = next(e for e in execs(module.runtime(cuda_arch="100")) if runs_script(e, "build-trtmc.sh"))
    assert other.env["TRTMC_CUDA_ARCH"] == "100"
    # the audit reads the same pinned tree unless given another one
    audit = next(e for e in execs(module.inventory()) if runs_script(e, "inventory-rows.sh"))
    assert audit.directories[dagger_plan.TRTMC_MOUNT] == pinned_tree


def test_aiperf_is_the_pinned_release_from_the_package_index(module) -> None:
    assert PINS.aiperf.requirement == "aiperf==0.13.0"
    for container, image, target in (
        (module.cpu(), "cpu", dagger_plan.CPU_VENV),
        (module.runtime(), "runtime", dagger_plan.TRTMC_VENV),
    ):
        steps = execs(container)
        install = [e for e in steps if runs_script(e, "install-python.sh")]
        assert [e.argv[2] for e in install] == ["dependencies", "package"]  # in this order, as the Dockerfiles
        for e in install:
            assert e.argv[3:] == [image, dagger_plan.PACKAGE_DIR, target, dagger_plan.AIPERF_VENV]
            assert e.mounts[dagger_plan.PIP_CACHE][0] == "trtmc-videoqa-pip"
            assert e.env["TRTMC_VIDEOQA_AIPERF"] == f"{dagger_plan.AIPERF_VENV}/bin/aiperf"
        # the dependencies are installed before the source is copied in, so a source change re-runs the last only
        copies = [
            [a for _, n, a in e.chain if n == "withDirectory" and a["path"] == dagger_plan.PACKAGE_DIR] for e in install
        ]
        assert copies[0][-1]["include"] == dagger_plan.DEPENDENCY_FILES
        assert len(copies[1]) == len(copies[0]) + 1 and "include" not in copies[1][-1]  # then the whole source
        # nothing installs aiperf any other way (a source checkout, another index, another version)
        assert not [e for e in steps if e not in install and "aiperf" in " ".join(e.argv)]
    script = (REPO / "containers" / "install-python.sh").read_text()
    assert "aiperf=$(pin aiperf.requirement)" in script
    assert '"$aiperf_venv/bin/python" -m pip install "$aiperf"' in script
    for banned in ("--index-url", "--extra-index-url", "--no-index", "--find-links", "git+", " -e "):
        assert banned not in script


def test_cache_volumes_are_for_pip_compiler_and_hub_never_results(module) -> None:
    q = qualification_execs(qualify(module, profile=["p1"]))[0]
    keys = {path: key for path, (key, _) in q.mounts.items()}
    assert keys[dagger_plan.PIP_CACHE] == "trtmc-videoqa-pip"
    assert keys[dagger_plan.CCACHE_DIR] == "trtmc-videoqa-ccache-sm90"
    assert keys[dagger_plan.HUB_CACHE] == "trtmc-videoqa-hf-hub"
    assert keys[dagger_plan.BUNDLE_CACHE] == f"trtmc-videoqa-bundles-{PINS.trtmc.commit[:12]}-sm90"
    assert not [p for p in q.mounts if p.startswith(dagger_plan.ARTIFACTS)]
    assert q.env["HF_HOME"] == dagger_plan.HUB_CACHE


# --- GPU --------------------------------------------------------------------------------------------------------------


def test_the_gpu_is_attached_to_the_qualification_execs_only(module) -> None:
    merged = qualify(module, profile=["p1", "p2"])
    steps = execs(merged)
    gpu = [e for e in steps if e.gpu]
    assert gpu and all(runs_script(e, "qualify-one.sh") for e in gpu)
    assert len(gpu) == 2
    cpu_only = [e for e in steps if not e.gpu]
    names = {e.argv[1] if e.argv[0] == "sh" else e.argv[0] for e in cpu_only}
    assert {
        f"{dagger_plan.RECIPES}/{s}"
        for s in ("system-packages.sh", "build-trtmc.sh", "install-python.sh", "inventory-rows.sh")
    } <= names
    assert "trtmc-videoqa" in names  # the merged report
    for container in (module.cpu(), module.runtime(), module.inventory(), module.matrix(), module.self_test()):
        assert not [e for e in execs(container) if e.gpu]


def test_gpu_smoke_runs_nvidia_smi_with_the_gpus_and_is_never_cached(module) -> None:
    smoke = execs(module.gpu_smoke())
    assert [e.argv for e in smoke] == [["nvidia-smi", "-L"], ["nvidia-smi"]]
    assert all(e.gpu and e.image == PINS.images["runtime"].reference for e in smoke)
    assert key_of(smoke[0]) != key_of(execs(module.gpu_smoke())[0])  # a nonce: it checks the runner now
    built = execs(module.gpu_smoke(built=True))
    assert any(runs_script(e, "build-trtmc.sh") and not e.gpu for e in built)
    assert [e.argv for e in built if e.gpu] == [["nvidia-smi", "-L"], ["nvidia-smi"]]


def test_one_qualification_exec_at_a_time_through_a_locked_cache_volume(module) -> None:
    for q in qualification_execs(qualify(module, profile=["p1", "p2"])):
        assert q.mounts[dagger_plan.GPU_LOCK] == ("trtmc-videoqa-gpu-lock", "LOCKED")


# --- one exec per profile, and what keys it ------------------------------------------------------------------------


def test_each_profile_is_its_own_exec_keyed_by_its_inputs(module) -> None:
    runs = qualification_execs(qualify(module, profile=["p1", "p2", "p1"]))
    assert [e.argv[2] for e in runs] == ["p1", "p2"]  # a repeated profile runs once
    workload = hashlib.sha256(
        (REPO / "src/trtmc_videoqa/workloads/data/bigbuckbunny/workload.json").read_bytes()
    ).hexdigest()
    for run, profile in zip(runs, ["p1", "p2"], strict=True):
        assert run.argv == [
            "sh",
            f"{dagger_plan.RECIPES}/qualify-one.sh",
            profile,
            dagger_plan.TRTMC_SRC,
            dagger_plan.ARTIFACTS,
            str(dagger_plan.DEFAULT_STEP_LIMIT_S),
            "--workload",
            "bigbuckbunny",
            "--bundle-cache",
            dagger_plan.BUNDLE_CACHE,
            "--video-transport",
            "data-url",
        ]
        assert run.expect == "ANY"  # a failing step still leaves its (failed) row to export
        key = key_of(run)
        assert key["TRTMC_VIDEOQA_KEY_PROFILE"] == profile
        assert key["TRTMC_VIDEOQA_KEY_TRTMC_COMMIT"] == PINS.trtmc.commit
        assert key["TRTMC_VIDEOQA_KEY_WORKLOAD"] == f"bigbuckbunny sha256:{workload}"
        versions = key["TRTMC_VIDEOQA_KEY_VERSIONS"].split()
        assert {
            f"trtmc-videoqa=={__version__}",
            "aiperf==0.13.0",
            f"python=={PINS.images['runtime'].python}",
            "cuda-arch=sm_90",
            f"dagger={PINS.dagger.engine}",
        } <= set(versions)
        assert f"runtime={PINS.images['runtime'].provenance}" in key["TRTMC_VIDEOQA_KEY_VERSIONS"]
        assert "TRTMC_VIDEOQA_KEY_NONCE" not in key
    other = qualification_execs(qualify(module, profile=["p1"], workload="synthetic"))[0]
    assert key_of(other)["TRTMC_VIDEOQA_KEY_WORKLOAD"].startswith("synthetic sha256:")
    assert key_of(other) != key_of(runs[0])


def test_force_changes_the_key_and_only_when_asked(module) -> None:
    def the_exec(**kwargs) -> Exec:
        return qualification_execs(qualify(module, profile=["p1"], **kwargs))[0]

    plain, again = the_exec(), the_exec()
    assert plain.chain == again.chain  # same inputs, same exec: the engine's cache answers
    forced, forced_again = the_exec(force=True), the_exec(force=True)
    assert "TRTMC_VIDEOQA_KEY_NONCE" in key_of(forced)
    assert key_of(forced) != key_of(plain) and key_of(forced) != key_of(forced_again)
    assert forced.argv[-1] == "--force"
    # the builds before the qualification exec keep their keys: --force re-measures, it does not rebuild
    build = next(e.chain for e in execs(module.runtime()) if runs_script(e, "build-trtmc.sh"))
    assert forced.chain[: len(build)] == plain.chain[: len(build)] == build
    assert not [e for e in execs(module.runtime()) if "TRTMC_VIDEOQA_KEY_NONCE" in e.env]
    assert inspect.signature(TrtmcVideoqa.qualify).parameters["force"].default is False


def test_secrets_are_passed_as_secrets(module) -> None:
    merged = qualify(
        module,
        profile=["p1"],
        hf_token=dag.set_secret("hf-token", PLAINTEXT),
        serve_token=dag.set_secret("serve-token", SERVE_PLAINTEXT),
    )
    run = qualification_execs(merged)[0]
    assert run.secrets["HF_TOKEN"] == Plan([("Query", "setSecret", {"name": "hf-token", "plaintext": PLAINTEXT})])
    assert run.secrets["TRTMC_SERVE_TOKEN"][0][2]["name"] == "serve-token"
    for e in execs(merged):
        assert not {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "TRTMC_SERVE_TOKEN"} & set(e.env)
        assert not [v for v in e.env.values() if PLAINTEXT in v or SERVE_PLAINTEXT in v]
        assert PLAINTEXT not in " ".join(e.argv) and SERVE_PLAINTEXT not in " ".join(e.argv)
        if runs_script(e, "build-trtmc.sh") or runs_script(e, "install-python.sh"):
            assert not e.secrets  # no build step sees a token
    # set only through withSecretVariable, nowhere else
    text = everything(merged)
    assert text.count(PLAINTEXT) == 1 and text.count(SERVE_PLAINTEXT) == 1
    without = execs(qualify(module, profile=["p1"]))
    assert not [e for e in without if e.secrets]


# --- the merged report, the CPU functions ---------------------------------------------------------------------------


def test_the_merged_report_takes_each_profiles_row_over_the_inventory(module) -> None:
    merged = qualify(module, profile=["p1", "p2"])
    steps = plan(merged)
    assert steps[-2] == ("Container", "directory", {"path": dagger_plan.ARTIFACTS})
    report = execs(merged)[-1]
    assert report.argv == ["trtmc-videoqa", "report", dagger_plan.ARTIFACTS, "--out", dagger_plan.ARTIFACTS]
    assert not report.gpu and report.image == PINS.images["cpu"].reference
    base = report.directories[dagger_plan.ARTIFACTS]
    assert any(n == "withExec" and runs_script_argv(a["args"], "inventory-rows.sh") for _, n, a in base)
    for profile in ("p1", "p2"):
        row = report.directories[f"{dagger_plan.ARTIFACTS}/checkpoints/{profile}"]
        assert row[-1] == ("Directory", "directory", {"path": f"checkpoints/{profile}"})
        assert any(n == "withExec" and a["args"][2:3] == [profile] for _, n, a in row)
    names = [n for _, n, _ in steps]
    assert names.count("withoutDirectory") == 2  # the CPU step's row of that profile, if any, is replaced


def runs_script_argv(argv: list[str], script: str) -> bool:
    return argv[:2] == ["sh", f"{dagger_plan.RECIPES}/{script}"]


def test_inventory_matrix_and_self_test_run_on_the_cpu_image(module) -> None:
    inventory = execs(module.inventory(workload="synthetic"))[-1]
    assert inventory.argv == [
        "sh",
        f"{dagger_plan.RECIPES}/inventory-rows.sh",
        dagger_plan.TRTMC_MOUNT,
        dagger_plan.ARTIFACTS,
        "--workload",
        "synthetic",
    ]
    assert inventory.image == PINS.images["cpu"].reference
    # Each exec's codes on purpose: the inventory's recipe runs qualify with --exit-zero (its rows are unsupported or
    # blocked on a CPU: verdict 4), so its exec expects success; the self-test exits 0 only when it passes.
    assert inventory.expect == "SUCCESS"
    assert '--out "$out" --exit-zero "$@"' in (REPO / "containers" / "inventory-rows.sh").read_text()
    given = dag.directory().with_new_file("README.md", "a TRTMC tree")
    assert execs(module.inventory(trtmc=given))[-1].directories[dagger_plan.TRTMC_MOUNT] == plan(given)
    assert plan(module.matrix())[-1] == ("Directory", "file", {"path": "matrix.json"})
    self_test = execs(module.self_test())[-1]
    assert self_test.argv == [
        "trtmc-videoqa",
        "qualify",
        "--out",
        dagger_plan.ARTIFACTS,
        "--video-transport",
        "data-url",
    ]
    assert self_test.image == PINS.images["cpu"].reference and not self_test.gpu and self_test.expect == "SUCCESS"
    assert "TRTMC_VIDEOQA_KEY_NONCE" in key_of(execs(module.self_test(force=True))[-1])
    with pytest.raises(ValueError, match="not built in"):
        module.inventory(workload="nope")


@pytest.mark.parametrize("transport", ["http", "auto"])
def test_the_video_transport_reaches_the_cli_of_the_self_test_and_each_qualification(module, transport) -> None:
    self_test = execs(module.self_test(video_transport=transport))[-1]
    assert self_test.argv[-2:] == ["--video-transport", transport]
    runs = qualification_execs(qualify(module, profile=["p1", "p2"], video_transport=transport))
    assert [e.argv[-2:] for e in runs] == [["--video-transport", transport]] * 2
    plain = qualification_execs(qualify(module, profile=["p1"]))[0]
    assert plain.argv[-2:] == ["--video-transport", "data-url"]  # the default, named: it keys the exec too
    assert runs[0].chain != plain.chain  # another transport is another exec, never the cached one
    for signature in (inspect.signature(TrtmcVideoqa.qualify), inspect.signature(TrtmcVideoqa.self_test)):
        assert signature.parameters["video_transport"].default == "data-url"


def test_an_unknown_video_transport_is_refused_before_anything_runs(module) -> None:
    with pytest.raises(ValueError, match="not one of: data-url, http, auto"):
        qualify(module, profile=["p1"], video_transport="file")
    with pytest.raises(ValueError, match="not one of"):
        module.self_test(video_transport="base64")


def test_compare_serves_the_checkpoint_upstream_on_the_gpu_with_the_token_as_a_secret(module) -> None:
    token = dag.set_secret("hf-token", PLAINTEXT)
    directory = module.compare(
        "Qwen/Qwen2.5-VL-3B-Instruct", profile="qwen2_5_vl_3b", revision="abc123", hf_token=token
    )
    steps = execs(directory)
    run = steps[-1]
    assert run.argv[:6] == [
        "trtmc-videoqa",
        "compare",
        "--checkpoint",
        "Qwen/Qwen2.5-VL-3B-Instruct",
        "--device",
        "cuda",
    ]
    assert run.argv[run.argv.index("--profile") + 1] == "qwen2_5_vl_3b"
    assert run.argv[run.argv.index("--revision") + 1] == "abc123"
    assert run.argv[run.argv.index("--out") + 1] == dagger_plan.ARTIFACTS
    assert run.gpu and run.expect == "ANY" and run.image == PINS.images["cpu"].reference
    assert run.mounts[dagger_plan.GPU_LOCK] == ("trtmc-videoqa-gpu-lock", "LOCKED")
    assert (
        run.mounts[dagger_plan.HUB_CACHE][0] == "trtmc-videoqa-hf-hub" and run.env["HF_HOME"] == dagger_plan.HUB_CACHE
    )
    assert run.secrets["HF_TOKEN"][0][2]["name"] == "hf-token" and PLAINTEXT not in " ".join(run.argv)
    assert everything(directory).count(PLAINTEXT) == 1  # only through withSecretVariable
    installs = [e for e in steps if runs_script(e, "install-comparison.sh")]
    assert installs and not installs[0].gpu and not installs[0].secrets  # no install step sees a GPU or the token
    assert [e for e in steps if runs_script(e, "system-packages.sh") and e.argv[2:] == ["comparison"]]
    assert plan(directory)[-2] == ("Container", "directory", {"path": dagger_plan.ARTIFACTS})
    assert "TRTMC_VIDEOQA_KEY_NONCE" in key_of(execs(module.compare("org/m", force=True))[-1])


def test_exports_carry_the_public_part_unless_the_raw_logs_are_asked_for(module) -> None:
    public = ("Directory", "filter", {"exclude": dagger_plan.PRIVATE_EXCLUDE})
    for made in (qualify(module, profile=["p1"]), module.self_test(), module.compare("org/m")):
        assert plan(made)[-1] == public
    for made in (qualify(module, profile=["p1"], private=True), module.self_test(private=True)):
        assert plan(made)[-1][1] != "filter"
    assert plan(module.compare("org/m", private=True))[-1] == (
        "Container",
        "directory",
        {"path": dagger_plan.ARTIFACTS},
    )
    assert {"private", "**/private"} <= set(dagger_plan.PRIVATE_EXCLUDE)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"checkpoint": "/local/folder"}, "hub id"),
        ({"checkpoint": "org/m", "profile": "../x"}, "profile name"),
        ({"checkpoint": "org/m", "revision": "a b"}, "revision"),
        ({"checkpoint": "org/m", "workload": "nope"}, "not built in"),
    ],
)
def test_compare_refuses_bad_names_before_anything_runs(module, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        module.compare(**kwargs)


def test_without_profiles_qualify_asks_the_inventory_which_needs_an_engine(module) -> None:
    with pytest.raises(dagger.ClientConnectionError):
        qualify(module)


@pytest.mark.parametrize("listed", [["p1", "p2"], []])
def test_without_profiles_qualify_runs_what_the_inventory_lists(module, monkeypatch, listed) -> None:
    """The one await stood in for: the inventory's matrix.json answers; one GPU exec per listed profile, and an
    empty list is a valid answer (the merged report is then the inventory's rows alone)."""

    async def contents(self) -> str:
        return json.dumps(listed)

    monkeypatch.setattr(dagger.File, "contents", contents)
    merged = qualify(module)
    runs = qualification_execs(merged)
    assert sorted(e.argv[2] for e in runs) == sorted(listed)
    assert all(e.gpu for e in runs)


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "a b"])
def test_profile_names_are_checked_before_they_become_paths(module, bad) -> None:
    with pytest.raises(ValueError, match="not a profile name"):
        qualify(module, profile=[bad])


# --- refresh and pin --------------------------------------------------------------------------------------------------

MAIN_SHA = "4" * 40


@pytest.fixture
def main_commit(monkeypatch) -> str:
    """The one await stood in for: the commit the engine reads for the ref."""

    async def commit(self) -> str:
        return MAIN_SHA

    monkeypatch.setattr(dagger.GitRef, "commit", commit)
    return MAIN_SHA


def test_refresh_audits_the_pinned_commit_and_main_and_exports_the_folder(module, main_commit) -> None:
    folder = anyio.run(lambda: module.refresh())
    steps = plan(folder)
    assert steps[-1] == ("Container", "directory", {"path": dagger_plan.REFRESH_OUT})
    (run,) = [e for e in execs(folder) if e.argv[:2] == ["trtmc-videoqa", "refresh"]]
    assert run.argv == dagger_plan.refresh_argv("main", main_commit) and run.expect == "ANY"  # exit 3 still exports
    assert run.argv[run.argv.index("--main-commit") + 1] == main_commit
    assert not run.gpu and run.image == PINS.images["cpu"].reference
    text = everything(folder)
    assert PINS.trtmc.repository in text and PINS.trtmc.commit in text  # the pinned commit, from the pin file
    assert '"branch", {"name": "main"}' in text.replace("'", '"')  # and main, as the engine fetches it
    assert set(run.directories) >= {dagger_plan.TRTMC_MOUNT, dagger_plan.MAIN_MOUNT}
    with pytest.raises(ValueError, match="named no commit"):
        dagger_plan.refresh_argv("main", "not-a-sha")


def test_pin_prints_the_trtmc_line_for_a_ref(module, main_commit, monkeypatch) -> None:
    async def image_ref(self) -> str:
        return "registry.invalid/x@sha256:" + "d4" * 32

    monkeypatch.setattr(dagger.Container, "image_ref", image_ref)
    text = anyio.run(lambda: module.pin(trtmc_ref="main"))
    parsed = tomllib.loads(text)
    assert parsed["trtmc"] == {"repository": PINS.trtmc.repository, "commit": main_commit}
    assert "dagger call refresh" in text


# --- pin --------------------------------------------------------------------------------------------------------------


def test_pin_resolves_the_tags_and_prints_pin_file_lines(module) -> None:
    resolvers = module._resolvers()
    assert {n: plan(c)[1][2]["address"] for n, c in resolvers.items()} == {
        n: image.base for n, image in PINS.images.items()
    }  # the tag, so the registry says today's digest
    digest = "sha256:" + "c3" * 32
    text = dagger_plan.pin_lines(PINS, {"cpu": digest, "runtime": None}, {"runtime": "not resolved (no registry)"})
    parsed = tomllib.loads(text)["images"]
    assert parsed["cpu"] == {"base": PINS.images["cpu"].base, "digest": digest, "python": PINS.images["cpu"].python}
    assert parsed["runtime"]["digest"] == PINS.images["runtime"].digest  # never invented
    assert "# not resolved (no registry)" in text


# --- the module's surface ---------------------------------------------------------------------------------------------

FUNCTIONS = {
    "cpu",
    "runtime",
    "comparison",
    "inventory",
    "matrix",
    "self_test",
    "gpu_smoke",
    "qualify",
    "compare",
    "refresh",
    "pin",
}


def test_functions_have_a_one_line_description_and_every_argument_a_doc() -> None:
    from dagger.mod._module import FUNCTION_DEF_KEY

    found = {name for name, member in inspect.getmembers(TrtmcVideoqa) if hasattr(member, FUNCTION_DEF_KEY)}
    assert found == FUNCTIONS
    for name in sorted(FUNCTIONS | {"create"}):
        method = getattr(TrtmcVideoqa, name)
        doc = inspect.getdoc(method) if name != "create" else "constructor"
        assert doc and "\n" not in doc.strip(), name
        hints = typing.get_type_hints(method, include_extras=True)
        for parameter in inspect.signature(method).parameters:
            if parameter in ("self", "cls"):
                continue
            annotations = getattr(hints[parameter], "__metadata__", ())
            assert any(isinstance(m, dagger.Doc) for m in annotations), f"{name}({parameter})"


def test_the_source_is_uploaded_through_a_tight_allow_list() -> None:
    hints = typing.get_type_hints(TrtmcVideoqa.create, include_extras=True)
    annotations = hints["source"].__metadata__
    default = next(m for m in annotations if isinstance(m, dagger.DefaultPath))
    ignore = next(m for m in annotations if isinstance(m, dagger.Ignore))
    assert default.from_context == "."
    assert ignore.patterns[0] == "*"
    assert {p for p in ignore.patterns if p.startswith("!")} == {"!pyproject.toml", "!README.md", "!src", "!containers"}


def test_the_engine_version_is_the_pinned_one() -> None:
    manifest = json.loads((REPO / "dagger.json").read_text())
    assert manifest["engineVersion"] == PINS.dagger.engine == "v0.21.11"
    assert PINS.dagger.sdk == f"dagger-io=={metadata.version('dagger-io')}"
    assert "trtmc_videoqa.dagger_module:TrtmcVideoqa" in (REPO / "pyproject.toml").read_text()


def test_the_module_reads_its_own_pin_file_without_an_engine(monkeypatch) -> None:
    monkeypatch.delenv("TRTMC_VIDEOQA_PINS", raising=False)
    assert dagger_plan.pin_file() == REPO / "containers" / "pins.toml"
    assert dagger_plan.pins() == PINS


def test_the_module_registers_as_the_engine_would_see_it(monkeypatch) -> None:
    """The SDK's own registration (`Module._typedefs`) builds the module's type definitions lazily and awaits only
    their id at the end; with that id read as a plan instead, the whole registration runs offline."""
    module = TrtmcVideoqa.__dagger_module__
    monkeypatch.setattr(module, "_main_name", "TrtmcVideoqa")  # what DAGGER_MAIN_OBJECT says inside the engine
    monkeypatch.setattr(module, "_main", module._objects["TrtmcVideoqa"])

    async def read_plan(self):
        return plan(self)

    monkeypatch.setattr(dagger.Module, "id", read_plan)
    registered = anyio.run(module._typedefs)
    (obj,) = [a["object"] for _, n, a in registered if n == "withObject"]
    functions, constructor = {}, None
    for _, name, args in obj:
        if name in ("withFunction", "withConstructor"):
            steps = args["function"]
            fn = {"name": steps[0][2]["name"], "args": {}, "described": False, "cache": None}
            for _, step, a in steps[1:]:
                if step == "withDescription":
                    fn["described"] = bool(a["description"].strip()) and "\n" not in a["description"].strip()
                elif step == "withCachePolicy":
                    fn["cache"] = a["policy"]
                elif step == "withArg":
                    fn["args"][a["name"]] = a
            if name == "withConstructor":
                constructor = fn
            else:
                functions[fn["name"]] = fn
    assert set(functions) == FUNCTIONS  # kebab-case on the command line: gpu-smoke, self-test
    for fn in functions.values():
        assert fn["described"], fn["name"]
        assert all(a.get("description") for a in fn["args"].values()), fn["name"]
    assert {n for n, fn in functions.items() if fn["cache"] == "Never"} == {
        "qualify",
        "compare",
        "self_test",
        "gpu_smoke",
        "refresh",  # main moves: never answered from the cache
        "pin",
    }
    assert set(functions["qualify"]["args"]) == {
        "profile",
        "workload",
        "force",
        "hf_token",
        "serve_token",
        "cuda_arch",
        "timeout",
        "video_transport",
        "private",
    }
    assert set(functions["self_test"]["args"]) == {"force", "video_transport", "private"}
    source = constructor["args"]["source"]
    assert source["defaultPath"] == "." and source["ignore"] == dagger_plan.SOURCE_IGNORE
