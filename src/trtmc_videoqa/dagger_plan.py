"""What the Dagger module builds, as plain data: paths, pins, environments, labels and cache keys.

Everything here is pure Python and imports no Dagger code, so it is tested without the SDK; ``dagger_module``
turns these values into containers. Pinned versions come from ``containers/pins.toml``, read with the package's own
pins loader from this module's own source tree (the engine loads the module from that tree, so the file is there,
and the tests read the same file without an engine).
"""

import os
import re
from pathlib import Path

from . import __version__
from .common.digests import file_sha256
from .common.pins import PIN_FILE_ENV, PIN_FILE_NAME, ImagePin, Pins, default_pin_file, load_pins
from .common.safe_names import plain_revision
from .results.layout import MATRIX_FILE as MATRIX_FILE  # the Dagger module reads it from here
from .results.layout import PRIVATE_DIR, WORKLOAD_FILE

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
MAIN_MOUNT = "/trtmc-main"  # the tree of TRTMC's main (or another ref), for refresh
REFRESH_OUT = "/refresh"
PIP_CACHE, CCACHE_DIR, HUB_CACHE, BUNDLE_CACHE = (
    "/root/.cache/pip",
    "/cache/ccache",
    "/cache/huggingface",
    "/cache/bundles",
)
GPU_LOCK = "/run/trtmc-videoqa-gpu"  # a LOCKED cache volume: one qualification exec at a time per engine
# What containers/install-python.sh's `dependencies` phase reads of this repository, copied in before it as the
# Dockerfiles do, so that a source change re-runs only its `package` phase, after the whole source is copied in.
DEPENDENCY_FILES = [
    "pyproject.toml",
    "containers/install-python.sh",
    "containers/recipe.py",
    "containers/pins.toml",
    "containers/certs/*",
]

DEFAULT_CUDA_ARCH = "90"  # sm_90: the H200
DEFAULT_WORKLOAD = "bigbuckbunny"
DEFAULT_STEP_LIMIT_S = 6 * 3600  # one checkpoint's whole chain: build, correctness, serve, AIPerf
# `qualify --video-transport`'s default and choices: transports/table.py's, copied (this module may import only
# common/ and results/layout.py) and held equal to that table by tests/test_dagger_plan.py.
DEFAULT_VIDEO_TRANSPORT = "data-url"
VIDEO_TRANSPORTS = ("data-url", "http", "auto")
# The Dagger module's words for its transport argument, from the choices above (held equal to the table by a test).
TRANSPORT_DOC = f"how requests carry the clip: {', '.join(VIDEO_TRANSPORTS)} (default {DEFAULT_VIDEO_TRANSPORT})"

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
PRIVATE_EXCLUDE = [PRIVATE_DIR, f"**/{PRIVATE_DIR}"]  # raw logs, left out of an export unless asked for
KEY_PREFIX = "TRTMC_VIDEOQA_KEY_"  # env vars that exist to key a qualification exec (see qualification_key)
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MODULE_ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = Path(__file__).resolve().parent / "workloads" / "data"


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
    path = WORKLOADS / name / WORKLOAD_FILE
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in WORKLOADS.iterdir() if (p / WORKLOAD_FILE).is_file()))
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


def runtime_labels(p: Pins, cuda_arch: str) -> dict[str, str]:
    """What the built runtime adds to its base image's labels: the TRTMC commit and the CUDA architecture."""
    return {
        "io.github.trtmc-videoqa.trtmc": f"{p.trtmc.repository}@{p.trtmc.commit}",
        "io.github.trtmc-videoqa.cuda-arch": f"sm_{cuda_arch}",
    }


def ccache_volume(cuda_arch: str) -> str:
    return f"trtmc-videoqa-ccache-sm{cuda_arch}"


def bundle_volume(p: Pins, cuda_arch: str) -> str:
    """The engine bundles' cache volume: one per TRTMC commit and CUDA architecture, so no bundle is reused wrongly."""
    return f"trtmc-videoqa-bundles-{p.trtmc.commit[:12]}-sm{cuda_arch}"


def check_video_transport(transport: str) -> str:
    if transport not in VIDEO_TRANSPORTS:
        raise ValueError(f"video transport {transport!r} is not one of: {', '.join(VIDEO_TRANSPORTS)}")
    return transport


def refresh_argv(ref: str, main_commit: str) -> list[str]:
    """refresh over the two trees the engine fetched (no git inside): the pinned one, whose commit is the pin
    file's, and the ref's, whose commit the engine read. Exit 3 (a new capable checkpoint) still exports."""
    if not re.fullmatch(r"[0-9a-f]{40}", main_commit):
        raise ValueError(f"the engine named no commit for {ref!r}: {main_commit!r}")
    return [
        "trtmc-videoqa",
        "refresh",
        "--trtmc",
        TRTMC_MOUNT,
        "--main-tree",
        MAIN_MOUNT,
        "--main-commit",
        main_commit,
        "--ref",
        ref,
        "--out",
        REFRESH_OUT,
        "--fail-on-new-capable",
    ]


def trtmc_pin_line(p: Pins, ref: str, commit: str) -> str:
    """The pin file's [trtmc] table moved to `commit` (what `ref` is now), with the reason to move it."""
    return "\n".join(
        [
            "[trtmc]",
            f"# {ref} is {commit}; move the pin only after `dagger call refresh` shows what changed in the group",
            f'repository = "{p.trtmc.repository}"',
            f'commit = "{commit}"',
            "",
        ]
    )


def install_python_argv(phase: str, image: str, venv: str) -> list[str]:
    """containers/install-python.sh, one phase: `dependencies` (the pinned aiperf into an environment of its own, the
    package's dependencies into venv) or `package` (this package into venv, --no-deps)."""
    return ["sh", f"{RECIPES}/install-python.sh", phase, image, PACKAGE_DIR, venv, AIPERF_VENV]


def self_test_argv(video_transport: str = DEFAULT_VIDEO_TRANSPORT) -> list[str]:
    """The reference self-test in the CPU image, with the transport named (so it keys the exec too). Its exec expects
    success: the self-test exits 0 only when both its rows qualify, and one that fails (3) is a broken tool or image.
    (The inventory's exec expects success too: its recipe runs qualify with --exit-zero, its rows being unsupported
    or blocked on a CPU by design.)"""
    transport = check_video_transport(video_transport)
    return ["trtmc-videoqa", "qualify", "--out", ARTIFACTS, "--video-transport", transport]


def qualification_argv(
    profile: str, workload: str, limit_s: int, force: bool, video_transport: str = DEFAULT_VIDEO_TRANSPORT
) -> list[str]:
    """One checkpoint's qualification exec: its whole step chain through containers/qualify-one.sh."""
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
        "--video-transport",
        check_video_transport(video_transport),
    ]
    return argv + (["--force"] if force else [])


HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
COMPARISON_STARTUP_S = 3600  # the server fetches the checkpoint from the hub before it answers /health


def check_hub_id(checkpoint: str) -> str:
    """A hub id (org/name) is all a comparison exec serves on the runner: refused here, before anything runs."""
    if not HUB_ID.fullmatch(checkpoint):
        raise ValueError(f"checkpoint {checkpoint!r} is not a hub id (org/name)")
    return checkpoint


def comparison_argv(
    checkpoint: str, profile: str | None, revision: str | None, workload: str, startup_s: int, force: bool
) -> list[str]:
    """One comparison exec: `transformers serve` on the checkpoint and the endpoint ladder over http, on the GPU."""
    argv = ["trtmc-videoqa", "compare", "--checkpoint", check_hub_id(checkpoint), "--device", "cuda"]
    argv += ["--profile", check_profile(profile)] if profile else []
    if revision:
        if not plain_revision(revision):
            raise ValueError(f"revision {revision!r} is not a commit or tag name")
        argv += ["--revision", revision]
    workload_sha256(workload)  # a name that is not built in fails here
    argv += ["--workload", workload, "--out", ARTIFACTS, "--startup-timeout", str(startup_s)]
    return argv + (["--force"] if force else [])


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


def resolution(reference: str) -> tuple[str | None, str]:
    """The digest an image reference the registry gave names (None if it names none) and the note saying so."""
    digest = reference.rpartition("@")[2]
    if digest.startswith("sha256:"):
        return digest, f"resolved from {reference}"
    return None, f"no digest in {reference}"


def unresolved_note(error: Exception) -> str:
    return f"not resolved ({str(error).splitlines()[0][:160]}); digest left as pinned"
