"""The Dagger main object: the qualification in hermetic containers, one GPU exec per checkpoint.

A thin layer: everything it runs is this package's own CLI (and the shell recipes in ``containers/``, which a plain
``docker build`` runs too) inside the containers. It is the only file that imports ``dagger``; nothing imports it.
What it builds (paths, pins, environments, labels, cache keys) is plain data from ``dagger_plan``, which imports no
Dagger code. Each container step is a function from container to container, applied with ``.with_(step)``, so each
Dagger function reads as one chain, lazy but ``pin`` (a text) and ``qualify`` asking the inventory for profiles.
"""

import functools
import json
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import dagger
from dagger import CacheSharingMode, DefaultPath, Doc, Ignore, ReturnType, dag

from .dagger_plan import (
    ARTIFACTS,
    BUNDLE_CACHE,
    CCACHE_DIR,
    COMPARISON_STARTUP_S,
    CPU_VENV,
    DEFAULT_CUDA_ARCH,
    DEFAULT_STEP_LIMIT_S,
    DEFAULT_VIDEO_TRANSPORT,
    DEFAULT_WORKLOAD,
    DEPENDENCY_FILES,
    GPU_LOCK,
    HUB_CACHE,
    KEY_PREFIX,
    MAIN_MOUNT,
    MATRIX_FILE,
    PACKAGE_DIR,
    PIP_CACHE,
    PRIVATE_EXCLUDE,
    RECIPES,
    REFRESH_OUT,
    SOURCE_IGNORE,
    TRANSPORT_DOC,
    TRTMC_BUILD,
    TRTMC_MOUNT,
    TRTMC_SRC,
    TRTMC_VENV,
    bundle_volume,
    ccache_volume,
    check_profile,
    check_video_transport,
    comparison_argv,
    cpu_env,
    image_labels,
    install_python_argv,
    pin_lines,
    pins,
    qualification_argv,
    qualification_key,
    refresh_argv,
    resolution,
    runtime_env,
    runtime_labels,
    self_test_argv,
    trtmc_pin_line,
    unresolved_note,
    workload_sha256,
)

_T = TypeVar("_T")
_Fn = TypeVar("_Fn", bound=Callable[..., Any])

if TYPE_CHECKING:
    # For mypy only, the signatures dagger-io 0.21.11 implements: its `function` uses an `infer_variance=True` TypeVar
    # mypy rejects (a method loses its return type) and leaves `cache` out of its overloads; `object_type` is a bound
    # method re-exported, whose dataclass_transform mypy never sees.
    from typing import dataclass_transform, overload

    @dataclass_transform(kw_only_default=True)
    def object_type(cls: type[_T], /) -> type[_T]: ...

    @overload
    def function(func: _Fn, /) -> _Fn: ...
    @overload
    def function(*, cache: str | None = None) -> Callable[[_Fn], _Fn]: ...
    def function(func: _Fn | None = None, /, *, cache: str | None = None) -> Any: ...

else:
    from dagger import function, object_type

Step = Callable[[dagger.Container], dagger.Container]
# Arguments several functions take, documented once.
HubToken = Annotated[dagger.Secret | None, Doc("hub token for gated checkpoints, e.g. env:HF_TOKEN")]
CudaArch = Annotated[str, Doc("CUDA architecture TRTMC is built for (90 = sm_90, the H200)")]
Transport = Annotated[str, Doc(TRANSPORT_DOC)]
PrivateLogs = Annotated[bool, Doc("also export the raw logs (private/ folders), for a maintainer; never for upload")]


# --- container steps: each a function from container to container, for `.with_(step)` ---------------------------


def with_env(env: dict[str, str]) -> Step:
    """Set each variable; a value naming another (``${PATH}``) is expanded against the image's."""

    def step(container: dagger.Container) -> dagger.Container:
        for name, value in env.items():
            container = container.with_env_variable(name, value, expand="${" in value)
        return container

    return step


def with_labels(labels: dict[str, str]) -> Step:
    return lambda container: functools.reduce(lambda c, label: c.with_label(*label), labels.items(), container)


def with_cache(path: str, volume: str, sharing: CacheSharingMode = CacheSharingMode.SHARED) -> Step:
    """Mount the named cache volume at path (shared between execs unless told otherwise)."""
    return lambda container: container.with_mounted_cache(path, dag.cache_volume(volume), sharing=sharing)


with_pip_cache = with_cache(PIP_CACHE, "trtmc-videoqa-pip")
with_hub_cache = with_cache(HUB_CACHE, "trtmc-videoqa-hf-hub")
with_gpu_lock = with_cache(GPU_LOCK, "trtmc-videoqa-gpu-lock", sharing=CacheSharingMode.LOCKED)


def with_all_gpus(container: dagger.Container) -> dagger.Container:
    return container.experimental_with_all_gp_us()


def with_nonce(fresh: bool = True) -> Step:
    """A new value in the exec's key each time, so the engine's cache never answers for it (nothing when not fresh)."""
    return lambda container: container.with_env_variable(f"{KEY_PREFIX}NONCE", uuid.uuid4().hex) if fresh else container


def with_secret(name: str, secret: dagger.Secret | None) -> Step:
    """The secret as an environment variable of the execs that follow (nothing when none is given)."""
    return lambda container: container.with_secret_variable(name, secret) if secret is not None else container


def system_packages(recipes: dagger.Directory, image: str, include: list[str] | None = None) -> Step:
    """The recipes copied in (only those named in include, if given) and containers/system-packages.sh run."""
    script = ["sh", f"{RECIPES}/system-packages.sh", image]
    return lambda container: container.with_directory(RECIPES, recipes, include=include).with_exec(script)


def build_trtmc(tree: dagger.Directory, cuda_arch: str) -> Step:
    """TRTMC's tree copied in and built by containers/build-trtmc.sh for one CUDA architecture, with the caches."""

    def step(container: dagger.Container) -> dagger.Container:
        return (
            container.with_directory(TRTMC_SRC, tree)
            .with_(with_pip_cache)
            .with_(with_cache(CCACHE_DIR, ccache_volume(cuda_arch)))
            .with_env_variable("CCACHE_DIR", CCACHE_DIR)
            .with_env_variable("TRTMC_CUDA_ARCH", cuda_arch)
            .with_exec(["sh", f"{RECIPES}/build-trtmc.sh", TRTMC_SRC, TRTMC_BUILD, TRTMC_VENV])
        )

    return step


def install_python(source: dagger.Directory, image: str, venv: str) -> Step:
    """install-python.sh as the Dockerfiles run it: the dependencies (DEPENDENCY_FILES alone), then the package."""
    return lambda container: (
        container.with_directory(PACKAGE_DIR, source, include=DEPENDENCY_FILES)
        .with_(with_pip_cache)
        .with_exec(install_python_argv("dependencies", image, venv))
        .with_directory(PACKAGE_DIR, source)
        .with_exec(install_python_argv("package", image, venv))
    )


def with_rows(runs: dict[str, dagger.Directory]) -> Step:
    """Each qualified checkpoint's row directory in place of the CPU step's row of that profile, if any (a variant
    named with --profile reads "blocked" there)."""

    def step(container: dagger.Container) -> dagger.Container:
        for profile, run in runs.items():
            row = f"checkpoints/{profile}"
            container = container.without_directory(f"{ARTIFACTS}/{row}").with_directory(
                f"{ARTIFACTS}/{row}", run.directory(row)
            )
        return container

    return step


def exported(artifacts: dagger.Directory, private: bool) -> dagger.Directory:
    """The public part alone unless the raw logs (private/ folders, which may name the runner) are asked for."""
    return artifacts if private else artifacts.filter(exclude=PRIVATE_EXCLUDE)


# --- the main object --------------------------------------------------------------------------------------------


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
        return (
            dag.container()
            .from_(image.reference)
            .with_(with_labels(image_labels("cpu", image, p)))
            .with_(with_env(cpu_env(p)))
            .with_(system_packages(self.source.directory("containers"), "cpu"))
            .with_(install_python(self.source, "cpu", CPU_VENV))
            .with_workdir("/work")
        )

    @function
    def comparison(self) -> dagger.Container:
        """The CPU image with ffmpeg and the `real-server` extra: `transformers serve`, CUDA torch from the index."""
        return (
            self.cpu()  # its pip cache mounted still
            .with_(system_packages(self.source.directory("containers"), "comparison"))
            .with_exec(["sh", f"{RECIPES}/install-comparison.sh", PACKAGE_DIR, CPU_VENV])
            .with_(with_hub_cache)
            .with_env_variable("HF_HOME", HUB_CACHE)
        )

    @function
    def runtime(
        self,
        hf_token: HubToken = None,
        cuda_arch: CudaArch = DEFAULT_CUDA_ARCH,
    ) -> dagger.Container:
        """The CUDA + TensorRT runtime with TRTMC built from the pinned commit (containers/runtime.Dockerfile)."""
        p = pins()
        image = p.images["runtime"]
        recipes = self.source.directory("containers")
        return (
            dag.container()
            .from_(image.reference)
            .with_(with_labels(image_labels("runtime", image, p)))
            .with_(with_env(runtime_env(p)))
            .with_(with_labels(runtime_labels(p, cuda_arch)))
            .with_(system_packages(recipes, "runtime", include=["system-packages.sh", "packages/*", "build-trtmc.sh"]))
            .with_(build_trtmc(self._trtmc_tree(), cuda_arch))
            .with_(install_python(self.source, "runtime", TRTMC_VENV))
            .with_(with_hub_cache)
            .with_workdir("/work")
            .with_(with_secret("HF_TOKEN", hf_token))
        )

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
        return self.inventory(trtmc).file(MATRIX_FILE)

    @function(cache="never")
    def self_test(
        self,
        force: Annotated[bool, Doc("run it again even where nothing changed")] = False,
        video_transport: Transport = DEFAULT_VIDEO_TRANSPORT,
        private: PrivateLogs = False,
    ) -> dagger.Directory:
        """The reference-endpoint self-test (a test double, no GPU) in the CPU image; its public artifacts."""
        run = self.cpu().with_(with_nonce(force)).with_exec(self_test_argv(video_transport))
        return exported(run.directory(ARTIFACTS), private)

    # --- GPU steps ------------------------------------------------------------------------------------------------

    @function(cache="never")
    def gpu_smoke(
        self,
        built: Annotated[bool, Doc("in the built runtime (hours the first time) instead of its base image")] = False,
    ) -> dagger.Container:
        """nvidia-smi in the runtime's CUDA base with the GPUs attached: the first step on a new runner."""
        base = self.runtime() if built else dag.container().from_(pins().images["runtime"].reference)
        return (
            base.with_(with_all_gpus)
            .with_(with_nonce())  # the GPU is checked now, never cached
            .with_exec(["nvidia-smi", "-L"])
            .with_exec(["nvidia-smi"])
        )

    def _qualified(
        self,
        runtime: dagger.Container,
        profile: str,
        workload: str,
        cuda_arch: str,
        force: bool,
        limit_s: int,
        video_transport: str,
    ) -> dagger.Directory:
        """One checkpoint's whole step chain in one GPU exec; its artifact directory (always with result.json)."""
        p = pins()
        nonce = uuid.uuid4().hex if force else None
        argv = qualification_argv(profile, workload, limit_s, force, video_transport)
        return (
            runtime.with_(with_all_gpus)
            .with_(with_gpu_lock)
            .with_(with_cache(BUNDLE_CACHE, bundle_volume(p, cuda_arch)))
            .with_(with_env(qualification_key(p, profile, workload, cuda_arch, nonce)))
            .with_exec(argv, expect=ReturnType.ANY)
            .directory(ARTIFACTS)
        )

    def _merged(self, inventory: dagger.Directory, runs: dict[str, dagger.Directory]) -> dagger.Directory:
        """The inventory's rows with each qualified checkpoint's row directory, and the report over all of them."""
        if not runs:
            return inventory
        return (
            self.cpu()
            .with_directory(ARTIFACTS, inventory)
            .with_(with_rows(runs))
            .with_exec(["trtmc-videoqa", "report", ARTIFACTS, "--out", ARTIFACTS])
            .directory(ARTIFACTS)
        )

    @function(cache="never")
    async def qualify(
        self,
        profile: Annotated[
            list[str] | None, Doc("profiles to qualify (default: every capable one the inventory finds)")
        ] = None,
        workload: Annotated[str, Doc("built-in workload: bigbuckbunny (default) or synthetic")] = DEFAULT_WORKLOAD,
        force: Annotated[bool, Doc("measure again: a nonce changes each exec's cache key")] = False,
        hf_token: HubToken = None,
        serve_token: Annotated[
            dagger.Secret | None, Doc("API key trtmc-server requires, e.g. env:TRTMC_SERVE_TOKEN")
        ] = None,
        cuda_arch: CudaArch = DEFAULT_CUDA_ARCH,
        timeout: Annotated[
            int, Doc("seconds one checkpoint's step chain may run before it is a failed row")
        ] = DEFAULT_STEP_LIMIT_S,
        video_transport: Transport = DEFAULT_VIDEO_TRANSPORT,
        private: PrivateLogs = False,
    ) -> dagger.Directory:
        """Qualify checkpoints, one GPU exec each, and merge their rows with the inventory's into one report."""
        check_video_transport(video_transport)  # a bad value fails here, before the inventory runs
        inventory = self.inventory(workload=workload)
        if profile:
            profiles = [check_profile(name) for name in dict.fromkeys(profile)]
        else:  # the only await: ask the inventory which profiles are capable
            profiles = [check_profile(name) for name in json.loads(await inventory.file(MATRIX_FILE).contents())]
        runtime = self.runtime(hf_token=hf_token, cuda_arch=cuda_arch).with_(
            with_secret("TRTMC_SERVE_TOKEN", serve_token)
        )
        runs = {
            name: self._qualified(runtime, name, workload, cuda_arch, force, timeout, video_transport)
            for name in profiles
        }
        return exported(self._merged(inventory, runs), private)

    @function(cache="never")
    def compare(
        self,
        checkpoint: Annotated[str, Doc("hub id of the checkpoint to serve with transformers serve, e.g. org/name")],
        profile: Annotated[str | None, Doc("the TRTMC profile the row stands beside")] = None,
        revision: Annotated[str | None, Doc("hub revision to serve (default: main)")] = None,
        workload: Annotated[str, Doc("built-in workload: bigbuckbunny (default) or synthetic")] = DEFAULT_WORKLOAD,
        hf_token: HubToken = None,
        force: Annotated[bool, Doc("measure again: a nonce changes the exec's cache key")] = False,
        timeout: Annotated[
            int, Doc("seconds the server may take to fetch and load the checkpoint")
        ] = COMPARISON_STARTUP_S,
        private: PrivateLogs = False,
    ) -> dagger.Directory:
        """Upstream `transformers serve` on a checkpoint, qualified over http: a comparison, not a TRTMC capability."""
        argv = comparison_argv(checkpoint, profile, revision, workload, timeout, force)
        return (
            self.comparison()
            .with_(with_all_gpus)
            .with_(with_gpu_lock)
            .with_(with_nonce(force))
            .with_(with_secret("HF_TOKEN", hf_token))
            .with_exec(argv, expect=ReturnType.ANY)
            .directory(ARTIFACTS)
            .with_(lambda directory: exported(directory, private))
        )

    # --- pins -----------------------------------------------------------------------------------------------------

    def _resolvers(self) -> dict[str, dagger.Container]:
        """A container per pinned image, from its tag (not its digest), to read the digest the registry gives now."""
        return {name: dag.container().from_(image.base) for name, image in pins().images.items()}

    @function(cache="never")
    async def refresh(
        self, ref: Annotated[str, Doc("the TRTMC ref to compare with the pinned commit")] = "main"
    ) -> dagger.Directory:
        """Audit the pinned commit and a TRTMC ref (main): what changed in the group (refresh/, exit 3 kept)."""
        main = dag.git(pins().trtmc.repository).branch(ref)
        trees = self.cpu().with_directory(TRTMC_MOUNT, self._trtmc_tree()).with_directory(MAIN_MOUNT, main.tree())
        argv = refresh_argv(ref, await main.commit())  # the commit as the engine fetched it
        return trees.with_exec(argv, expect=ReturnType.ANY).directory(REFRESH_OUT)

    @function(cache="never")
    async def pin(
        self, trtmc_ref: Annotated[str | None, Doc("also print the [trtmc] table for this ref's commit")] = None
    ) -> str:
        """Resolve the pinned image tags to digests where the registry is reachable; print the pin-file lines."""
        resolved: dict[str, str | None] = {}
        notes: dict[str, str] = {}
        for name, container in self._resolvers().items():
            try:
                resolved[name], notes[name] = resolution(await container.image_ref())
            except dagger.QueryError as error:
                resolved[name], notes[name] = None, unresolved_note(error)
        if trtmc_ref is None:
            return pin_lines(pins(), resolved, notes)
        commit = await dag.git(pins().trtmc.repository).branch(trtmc_ref).commit()
        return pin_lines(pins(), resolved, notes) + "\n" + trtmc_pin_line(pins(), trtmc_ref, commit)
