"""The Dagger main object: the qualification in hermetic containers, one GPU exec per checkpoint.

A thin layer: everything it runs is this package's own CLI (and the shell recipes in ``containers/``, which a plain
``docker build`` runs too) inside the containers. It is the only file that imports ``dagger``; nothing imports it.
Pinned versions come from ``containers/pins.toml``, read here with the package's own pins loader from this module's
own source tree (the engine loads the module from that tree, so the file is there, and the tests read the same file
without an engine). Every function returns a lazy Dagger object, except ``pin`` (a text) and ``qualify`` when it
has to ask the inventory for the profiles first.
"""

import json
import os
import re
import uuid
from pathlib import Path
from typing import Annotated

import dagger
from dagger import (
    CacheSharingMode,
    DefaultPath,
    Doc,
    Ignore,
    ReturnType,
    dag,
    function,
    object_type,
)

from . import __version__
from .digests import file_sha256
from .pins import PIN_FILE_ENV, PIN_FILE_NAME, ImagePin, Pins, default_pin_file, load_pins

# --- where things are inside the containers (the recipes in containers/ use the same paths) ----------------------
PACKAGE_DIR = "/opt/trtmc-videoqa/src"  # this repository: pyproject.toml, README.md, src/, containers/
RECIPES = f"{PACKAGE_DIR}/containers"
CPU_VENV = "/opt/trtmc-videoqa/venv"
AIPERF_VENV = "/opt/aiperf"  # the published aiperf, in an environment of its own
TRTMC_SRC = "/opt/trtmc/src"
TRTMC_BUILD = "/opt/trtmc/build"
TRTMC_VENV = "/opt/venv"  # TRTMC's Python environment; this package is installed into it too
ARTIFACTS = "/artifacts"
TRTMC_MOUNT = "/trtmc"  # a TRTMC tree given to the CPU steps
PIP_CACHE, CCACHE_DIR, HUB_CACHE, BUNDLE_CACHE = (
    "/root/.cache/pip",
    "/cache/ccache",
    "/cache/huggingface",
    "/cache/bundles",
)
GPU_LOCK = "/run/trtmc-videoqa-gpu"  # a LOCKED cache volume: one qualification exec at a time per engine

DEFAULT_CUDA_ARCH = "90"  # sm_90: the H200
DEFAULT_WORKLOAD = "bigbuckbunny"
DEFAULT_STEP_LIMIT_S = 6 * 3600  # one checkpoint's whole chain: build, correctness, serve, AIPerf

SOURCE_IGNORE = [
    "*",
    "!pyproject.toml",
    "!README.md",
    "!src",
    "!containers",
    "src/*.egg-info",
    "**/__pycache__",
    "**/*.pyc",
    "**/.pytest_cache",
]
KEY_PREFIX = "TRTMC_VIDEOQA_KEY_"  # env vars that exist to key a qualification exec (see _key)
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MODULE_ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = Path(__file__).resolve().parent / "workloads" / "data"


# --- pure helpers (no engine) ---------------------------------------------------------------------------------------


def pin_file() -> Path:
    """$TRTMC_VIDEOQA_PINS, else containers/pins.toml of this module's source tree, else the package's default."""
    if os.environ.get(PIN_FILE_ENV):
        return Path(os.environ[PIN_FILE_ENV])
    for root in (MODULE_ROOT, Path.cwd()):
        candidate = root / "containers" / PIN_FILE_NAME
        if candidate.is_file():
            return candidate
    return default_pin_file()


def pins() -> Pins:
    return load_pins(pin_file())


def workload_sha256(name: str) -> str:
    """sha256 of a built-in workload's file (it lists every clip's sha256): a key input of each qualification."""
    path = WORKLOADS / name / "workload.json"
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in WORKLOADS.iterdir() if (p / "workload.json").is_file()))
        raise ValueError(f"workload {name!r} is not built in; choose one of: {known}")
    return file_sha256(path)


def check_profile(profile: str) -> str:
    if not PROFILE_NAME.fullmatch(profile):
        raise ValueError(f"profile {profile!r} is not a profile name (letters, digits, '.', '_', '-')")
    return profile


def cpu_env(p: Pins) -> dict[str, str]:
    """The CPU image's environment; containers/cpu.Dockerfile sets the same (the tests compare them)."""
    return {
        "TRTMC_VIDEOQA_PINS": f"{RECIPES}/{PIN_FILE_NAME}",
        "TRTMC_VIDEOQA_AIPERF": f"{AIPERF_VENV}/bin/aiperf",
        "PATH": f"{CPU_VENV}/bin:${{PATH}}",
    }


def runtime_env(p: Pins) -> dict[str, str]:
    """The runtime's environment, TRTMC's development image's where it has one; the runtime recipe sets the same."""
    python = p.images["runtime"].python
    return {
        "DEBIAN_FRONTEND": "noninteractive",
        "TRTMC_VIDEOQA_PINS": f"{RECIPES}/{PIN_FILE_NAME}",
        "TRTMC_VIDEOQA_AIPERF": f"{AIPERF_VENV}/bin/aiperf",
        "VIRTUAL_ENV": TRTMC_VENV,
        "PATH": f"{TRTMC_BUILD}:{TRTMC_VENV}/bin:${{PATH}}",
        "TRTMC_RUNTIME_ROOT": TRTMC_BUILD,
        "TRTMC_MODEL_PLUGIN_DIR": f"{TRTMC_BUILD}/models",
        "TRT_LIB_DIR": "/usr/lib/x86_64-linux-gnu",
        "TRT_INC_DIR": "/usr/include/x86_64-linux-gnu",
        "LD_LIBRARY_PATH": f"/usr/lib/x86_64-linux-gnu:{TRTMC_VENV}/lib/python{python}/site-packages/tvm_ffi/lib"
        ":/usr/local/cuda/lib64",
        "HF_HOME": HUB_CACHE,
    }


def image_labels(name: str, image: ImagePin, p: Pins) -> dict[str, str]:
    labels = {
        "org.opencontainers.image.title": f"trtmc-videoqa-{name}",
        "org.opencontainers.image.base.name": image.base,
        "io.github.trtmc-videoqa.base": image.provenance,  # "<base> (unpinned)" when no digest is pinned
        "io.github.trtmc-videoqa.aiperf": p.aiperf.requirement,
        "io.github.trtmc-videoqa.version": __version__,
    }
    if image.pinned:
        labels["org.opencontainers.image.base.digest"] = image.digest
    return labels


def qualification_key(p: Pins, profile: str, workload: str, cuda_arch: str, nonce: str | None) -> dict[str, str]:
    """What keys one checkpoint's exec, beside the image, the source and the argv that key it anyway."""
    runtime = p.images["runtime"]
    key = {
        f"{KEY_PREFIX}PROFILE": profile,
        f"{KEY_PREFIX}TRTMC_COMMIT": p.trtmc.commit,
        f"{KEY_PREFIX}WORKLOAD": f"{workload} sha256:{workload_sha256(workload)}",
        f"{KEY_PREFIX}VERSIONS": " ".join(
            [
                f"trtmc-videoqa=={__version__}",
                p.aiperf.requirement,
                f"runtime={runtime.provenance}",
                f"python=={runtime.python}",
                f"cuda-arch=sm_{cuda_arch}",
                f"dagger={p.dagger.engine}",
            ]
        ),
    }
    if nonce is not None:
        key[f"{KEY_PREFIX}NONCE"] = nonce  # --force: a deliberate re-measurement changes the key
    return key


def pin_lines(p: Pins, resolved: dict[str, str | None], notes: dict[str, str]) -> str:
    """The pin file's [images.*] tables with the resolved digests; a digest not resolved stays as pinned."""
    lines = []
    for name, image in p.images.items():
        digest = resolved.get(name) or image.digest
        lines.append(f"[images.{name}]")
        if name in notes:
            lines.append(f"# {notes[name]}")
        lines += [f'base = "{image.base}"', f'digest = "{digest}"', f'python = "{image.python}"', ""]
    return "\n".join(lines)


def _with_env(container: dagger.Container, env: dict[str, str]) -> dagger.Container:
    for name, value in env.items():
        container = container.with_env_variable(name, value, expand="${" in value)
    return container


def _with_labels(container: dagger.Container, labels: dict[str, str]) -> dagger.Container:
    for name, value in labels.items():
        container = container.with_label(name, value)
    return container


@object_type
class TrtmcVideoqa:
    """Qualify TRTMC checkpoints for temporal video QA in hermetic containers, one GPU exec per checkpoint."""

    source: dagger.Directory

    @classmethod
    def create(
        cls,
        source: Annotated[
            dagger.Directory,
            DefaultPath("."),
            Ignore(SOURCE_IGNORE),
            Doc("this repository: only pyproject.toml, README.md, src/ and containers/ are uploaded"),
        ],
    ) -> "TrtmcVideoqa":
        return cls(source=source)

    # --- containers ---------------------------------------------------------------------------------------------

    def _trtmc_tree(self) -> dagger.Directory:
        p = pins()
        return dag.git(p.trtmc.repository).commit(p.trtmc.commit).tree()

    @function
    def cpu(self) -> dagger.Container:
        """The CPU image: this package and the published aiperf, no GPU (containers/cpu.Dockerfile)."""
        p = pins()
        image = p.images["cpu"]
        base = _with_labels(dag.container().from_(image.reference), image_labels("cpu", image, p))
        return (
            _with_env(base, cpu_env(p))
            .with_directory(RECIPES, self.source.directory("containers"))
            .with_exec(["sh", f"{RECIPES}/system-packages.sh", "cpu"])
            .with_directory(PACKAGE_DIR, self.source)
            .with_mounted_cache(PIP_CACHE, dag.cache_volume("trtmc-videoqa-pip"))
            .with_exec(["sh", f"{RECIPES}/install-python.sh", "cpu", PACKAGE_DIR, CPU_VENV, AIPERF_VENV])
            .with_workdir("/work")
        )

    @function
    def runtime(
        self,
        hf_token: Annotated[dagger.Secret | None, Doc("hub token for gated checkpoints, e.g. env:HF_TOKEN")] = None,
        cuda_arch: Annotated[
            str, Doc("CUDA architecture TRTMC is built for (90 = sm_90, the H200)")
        ] = DEFAULT_CUDA_ARCH,
    ) -> dagger.Container:
        """The CUDA + TensorRT runtime with TRTMC built from the pinned commit (containers/runtime.Dockerfile)."""
        p = pins()
        image = p.images["runtime"]
        base = _with_labels(dag.container().from_(image.reference), image_labels("runtime", image, p))
        built = (
            _with_env(base, runtime_env(p))
            .with_label("io.github.trtmc-videoqa.trtmc", f"{p.trtmc.repository}@{p.trtmc.commit}")
            .with_label("io.github.trtmc-videoqa.cuda-arch", f"sm_{cuda_arch}")
            .with_directory(
                RECIPES,
                self.source.directory("containers"),
                include=["system-packages.sh", "packages/*", "build-trtmc.sh"],
            )
            .with_exec(["sh", f"{RECIPES}/system-packages.sh", "runtime"])
            .with_directory(TRTMC_SRC, self._trtmc_tree())
            .with_mounted_cache(PIP_CACHE, dag.cache_volume("trtmc-videoqa-pip"))
            .with_mounted_cache(CCACHE_DIR, dag.cache_volume(f"trtmc-videoqa-ccache-sm{cuda_arch}"))
            .with_env_variable("CCACHE_DIR", CCACHE_DIR)
            .with_env_variable("TRTMC_CUDA_ARCH", cuda_arch)
            .with_exec(["sh", f"{RECIPES}/build-trtmc.sh", TRTMC_SRC, TRTMC_BUILD, TRTMC_VENV])
            .with_directory(PACKAGE_DIR, self.source)
            .with_exec(["sh", f"{RECIPES}/install-python.sh", "runtime", PACKAGE_DIR, TRTMC_VENV, AIPERF_VENV])
            .with_mounted_cache(HUB_CACHE, dag.cache_volume("trtmc-videoqa-hf-hub"))
            .with_workdir("/work")
        )
        return built.with_secret_variable("HF_TOKEN", hf_token) if hf_token is not None else built

    # --- CPU steps ------------------------------------------------------------------------------------------------

    @function
    def inventory(
        self,
        trtmc: Annotated[dagger.Directory | None, Doc("a TRTMC tree to audit (default: the pinned commit)")] = None,
        workload: Annotated[str, Doc("built-in workload the rows name")] = DEFAULT_WORKLOAD,
    ) -> dagger.Directory:
        """The audit, matrix.json and the rows that need no GPU (unsupported ones) with their report."""
        workload_sha256(workload)  # a name that is not built in fails here, before anything runs
        tree = trtmc if trtmc is not None else self._trtmc_tree()
        return (
            self.cpu()
            .with_directory(TRTMC_MOUNT, tree)
            .with_exec(["sh", f"{RECIPES}/inventory-rows.sh", TRTMC_MOUNT, ARTIFACTS, "--workload", workload])
            .directory(ARTIFACTS)
        )

    @function
    def matrix(
        self,
        trtmc: Annotated[dagger.Directory | None, Doc("a TRTMC tree (default: the pinned commit)")] = None,
    ) -> dagger.File:
        """The JSON list of capable profiles for a CI matrix (`matrix contents`); [] is a valid answer."""
        return self.inventory(trtmc).file("matrix.json")

    @function(cache="never")
    def self_test(
        self,
        force: Annotated[bool, Doc("run it again even where nothing changed")] = False,
    ) -> dagger.Directory:
        """The reference-endpoint self-test (a test double, no GPU) in the CPU image; its artifacts."""
        container = self.cpu()
        if force:
            container = container.with_env_variable(f"{KEY_PREFIX}NONCE", uuid.uuid4().hex)
        return container.with_exec(["trtmc-videoqa", "qualify", "--out", ARTIFACTS]).directory(ARTIFACTS)

    # --- GPU steps ------------------------------------------------------------------------------------------------

    @function(cache="never")
    def gpu_smoke(
        self,
        built: Annotated[bool, Doc("in the built runtime (hours the first time) instead of its base image")] = False,
    ) -> dagger.Container:
        """nvidia-smi in the runtime's CUDA base with the GPUs attached: the first step on a new runner."""
        p = pins()
        image = p.images["runtime"]
        base = self.runtime() if built else dag.container().from_(image.reference)
        return (
            base.experimental_with_all_gp_us()
            .with_env_variable(f"{KEY_PREFIX}NONCE", uuid.uuid4().hex)  # the GPU is checked now, never cached
            .with_exec(["nvidia-smi", "-L"])
            .with_exec(["nvidia-smi"])
        )

    def _qualified(
        self, runtime: dagger.Container, profile: str, workload: str, cuda_arch: str, force: bool, limit_s: int
    ) -> dagger.Directory:
        """One checkpoint's whole step chain in one GPU exec; its artifact directory (always with result.json)."""
        p = pins()
        nonce = uuid.uuid4().hex if force else None
        argv = [
            "sh",
            f"{RECIPES}/qualify-one.sh",
            profile,
            TRTMC_SRC,
            ARTIFACTS,
            str(limit_s),
            "--workload",
            workload,
            "--bundle-cache",
            BUNDLE_CACHE,
        ]
        container = (
            runtime.experimental_with_all_gp_us()
            .with_mounted_cache(GPU_LOCK, dag.cache_volume("trtmc-videoqa-gpu-lock"), sharing=CacheSharingMode.LOCKED)
            .with_mounted_cache(
                BUNDLE_CACHE, dag.cache_volume(f"trtmc-videoqa-bundles-{p.trtmc.commit[:12]}-sm{cuda_arch}")
            )
        )
        container = _with_env(container, qualification_key(p, profile, workload, cuda_arch, nonce))
        return container.with_exec(argv + (["--force"] if force else []), expect=ReturnType.ANY).directory(ARTIFACTS)

    def _merged(self, inventory: dagger.Directory, runs: dict[str, dagger.Directory]) -> dagger.Directory:
        """The inventory's rows with each qualified checkpoint's row directory, and the report over all of them."""
        if not runs:
            return inventory
        container = self.cpu().with_directory(ARTIFACTS, inventory)
        for profile, run in runs.items():
            row = f"checkpoints/{profile}"
            # replaces the CPU step's row, if any (a variant named with --profile reads "blocked" there)
            container = container.without_directory(f"{ARTIFACTS}/{row}").with_directory(
                f"{ARTIFACTS}/{row}", run.directory(row)
            )
        return container.with_exec(["trtmc-videoqa", "report", ARTIFACTS, "--out", ARTIFACTS]).directory(ARTIFACTS)

    @function(cache="never")
    async def qualify(
        self,
        profile: Annotated[
            list[str] | None, Doc("profiles to qualify (default: every capable one the inventory finds)")
        ] = None,
        workload: Annotated[str, Doc("built-in workload: bigbuckbunny (default) or synthetic")] = DEFAULT_WORKLOAD,
        force: Annotated[bool, Doc("measure again: a nonce changes each exec's cache key")] = False,
        hf_token: Annotated[dagger.Secret | None, Doc("hub token for gated checkpoints, e.g. env:HF_TOKEN")] = None,
        serve_token: Annotated[
            dagger.Secret | None, Doc("API key trtmc-server requires, e.g. env:TRTMC_SERVE_TOKEN")
        ] = None,
        cuda_arch: Annotated[
            str, Doc("CUDA architecture TRTMC is built for (90 = sm_90, the H200)")
        ] = DEFAULT_CUDA_ARCH,
        timeout: Annotated[
            int, Doc("seconds one checkpoint's step chain may run before it is a failed row")
        ] = DEFAULT_STEP_LIMIT_S,
    ) -> dagger.Directory:
        """Qualify checkpoints, one GPU exec each, and merge their rows with the inventory's into one report."""
        inventory = self.inventory(workload=workload)
        if profile:
            profiles = [check_profile(name) for name in dict.fromkeys(profile)]
        else:  # the only await: ask the inventory which profiles are capable
            profiles = [check_profile(name) for name in json.loads(await inventory.file("matrix.json").contents())]
        runtime = self.runtime(hf_token=hf_token, cuda_arch=cuda_arch)
        if serve_token is not None:
            runtime = runtime.with_secret_variable("TRTMC_SERVE_TOKEN", serve_token)
        runs = {name: self._qualified(runtime, name, workload, cuda_arch, force, timeout) for name in profiles}
        return self._merged(inventory, runs)

    # --- pins -----------------------------------------------------------------------------------------------------

    def _resolvers(self) -> dict[str, dagger.Container]:
        """A container per pinned image, from its tag (not its digest), to read the digest the registry gives now."""
        return {name: dag.container().from_(image.base) for name, image in pins().images.items()}

    @function(cache="never")
    async def pin(self) -> str:
        """Resolve the pinned image tags to digests where the registry is reachable; print the pin-file lines."""
        resolved: dict[str, str | None] = {}
        notes: dict[str, str] = {}
        for name, container in self._resolvers().items():
            try:
                reference = await container.image_ref()
            except dagger.QueryError as error:
                resolved[name] = None
                notes[name] = f"not resolved ({str(error).splitlines()[0][:160]}); digest left as pinned"
                continue
            digest = reference.rpartition("@")[2]
            resolved[name] = digest if digest.startswith("sha256:") else None
            notes[name] = f"resolved from {reference}" if resolved[name] else f"no digest in {reference}"
        return pin_lines(pins(), resolved, notes)
