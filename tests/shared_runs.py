"""Expensive runs made once per test run and read by every test module and every xdist worker that needs them.

A module- or session-scoped fixture runs once per xdist worker. A run made here runs once for the whole test run:
in pytest's base temporary folder, which the workers share (`getbasetemp().parent` under xdist), behind a file lock,
named by the run and a digest of its inputs. The first test that asks makes it while any other that asks waits on
the lock; every later one reads the finished folder. A shared run is never changed: a test that edits or re-runs
one works on a copy (`SharedRun.copy`). A run that ended badly is kept as it ended (its exit code and output are
facts like any other), so every test that reads it fails on the same evidence and nothing launches it again.

Each run says which tests read it. Together with the runs the tests make themselves, the end-to-end tests outside
the container and real-server modules launch AIPerf 58 times (62 counted on 2026-12-07, less the four launches of
the server-capacity, run-scratch and /v1 tests that now read these); `TRTMC_TEST_COUNT_AIPERF=FILE` counts them
(conftest.py).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from doubles.toolchain import install_doubles
from helpers import QUICK, qualify, reference

from trtmc_videoqa.aiperf.tokenizer import ensure_local_tokenizer
from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, FaultKnobs, ReferenceConfig, ReferenceServer
from trtmc_videoqa.workloads import builtin_workload
from trtmc_videoqa.workloads.seal import seal_workload_file

FIXTURES = Path(__file__).parent / "fixtures"
FAMILIES = FIXTURES / "trtmc_families"
FACTS = "facts.json"
RUN_TIMEOUT_S = 600  # a hang guard for one qualify run (one takes 10 to 60 s): never a figure that is checked


# --- the machinery ----------------------------------------------------------------------------------------------


def shared_root(factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this test run sees: the parent of the workers' own base folders under xdist, the
    base folder itself without it (its parent is shared by every pytest run on the machine)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@dataclass(frozen=True)
class SharedRun:
    """A finished shared run: its folder (read only) and the facts its maker recorded."""

    folder: Path
    facts: dict[str, Any]

    @property
    def out(self) -> Path:
        """The run's --out directory."""
        return self.folder / self.facts.get("out", "out")

    def done(self, phase: str = "run") -> subprocess.CompletedProcess[str]:
        """How the command of `phase` ended: exit code, stdout, stderr."""
        ran = self.facts[phase]
        return subprocess.CompletedProcess(ran["argv"], ran["returncode"], ran["stdout"], ran["stderr"])

    def env(self) -> dict[str, str]:
        """This process's environment with what the run added to its own (a re-run needs it to reuse rows)."""
        return dict(os.environ, **self.facts.get("env", {}))

    def copy(self, to: Path) -> Path:
        """A copy of the --out directory to change or re-run; its path."""
        shutil.copytree(self.out, to, symlinks=True)
        return to


def shared(
    factory: pytest.TempPathFactory, name: str, inputs: object, make: Callable[[Path], dict[str, Any]]
) -> SharedRun:
    """The run `name` with `inputs`, made by `make(folder)` (which returns its facts) once per test run."""
    root = shared_root(factory)
    digest = hashlib.sha256(json.dumps([name, inputs], sort_keys=True, default=str).encode()).hexdigest()[:12]
    folder = root / f"shared-{name}-{digest}"
    with open(root / f"shared-{name}-{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when this worker dies
        if not (folder / FACTS).is_file():
            if folder.exists():  # a worker died while making it: start again
                shutil.rmtree(folder)
            folder.mkdir()
            facts = make(folder)
            (folder / f"{FACTS}.tmp").write_text(json.dumps(facts))
            (folder / f"{FACTS}.tmp").rename(folder / FACTS)
    return SharedRun(folder, json.loads((folder / FACTS).read_text()))


def ran(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    argv = [str(a) for a in done.args]
    return {"argv": argv, "returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def tripwire_aiperf(folder: Path) -> tuple[Path, Path]:
    """An executable that passes for aiperf 0.13.0 (this interpreter's install, aiperf's console-script line) and,
    if it is ever launched, leaves a mark and fails: (the executable, the mark). For a re-run that must reuse."""
    folder.mkdir(parents=True, exist_ok=True)
    script, mark = folder / "aiperf", folder / "aiperf-was-launched"
    script.write_text(
        f"#!{sys.executable}\n"
        "# TEST DOUBLE: aiperf's place in a run that must not launch it\n"
        "import sys\n"
        f"open({str(mark)!r}, 'a').write(' '.join(sys.argv) + '\\n')\n"
        "sys.exit('aiperf was launched by a run that had to reuse every row')\n"
        "from aiperf.cli import app  # never reached: the line locate_aiperf looks for in aiperf's own script\n"
    )
    script.chmod(0o755)
    return script, mark


# --- the README's self-test -------------------------------------------------------------------------------------

HOST = "sentinel-host-q7"
HUB_TOKEN = "hf_SENTINELtoken0123456789abcdef"


def in_namespace(host: str = HOST) -> list[str]:
    """The prefix that runs a command with `host` as the host name, in a UTS namespace of its own (needs root)."""
    return ["unshare", "-u", "sh", "-c", 'hostname "$1" && shift && exec "$@"', "sh", host]


def namespace_problem() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(["unshare", "-u", "hostname", HOST], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"unshare -u is not allowed here: {probe.stderr.strip()}"


def self_test(factory: pytest.TempPathFactory) -> SharedRun:
    """The README's main job, `trtmc-videoqa qualify --out OUT` (both rows of the embedded default), run with values
    no public artifact may carry: an output folder and a $HOME whose paths hold a space and a sentinel (the folder's
    also `&`, `'` and `[`, which Markdown, HTML, XML and the shell each write otherwise), a secret in
    the environment and, where `unshare -u` is allowed (root; CI runs as root), a host name of its own. OUT is
    given relative to the folder the run starts in ($HOME), as the README's default `artifacts` is.

    Read by test_qualify.py (every check of a finished self-test, doctor, report, reuse on a copy),
    test_public_artifacts.py (the public check, leaks), test_reproduce_commands.py (the recorded commands, run from
    a copy) and test_hostile_input.py (foreign and unproven result files, on copies). Two AIPerf runs."""

    def make(folder: Path) -> dict[str, Any]:
        # The folder's name holds what each renderer escapes (&, ', [): no rendering of it may reach a public file.
        out, home = folder / "out dir SENTINEL&q'[1]out", folder / "home dir SENTINELhome"
        home.mkdir()
        added = {"HOME": str(home), "HF_TOKEN": HUB_TOKEN}
        argv = [sys.executable, "-m", "trtmc_videoqa", "qualify", "--out", os.path.relpath(out, home)]
        problem = namespace_problem()
        # The host name exists only inside the namespace: the run sees it, the rest of the machine does not.
        wrapped = argv if problem else [*in_namespace(), *argv]
        done = subprocess.run(
            wrapped, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env={**os.environ, **added}, cwd=home
        )
        return {"run": ran(done), "out": out.name, "home": home.name, "env": added, "namespace_problem": problem}

    return shared(factory, "self-test", {"argv": ["qualify"], "host": HOST, "out": "relative, marked up"}, make)


QUICK_HTTP = (*QUICK, "--video-transport", "http")


# Deep: AIPerf's Unix sockets under a scratch folder there would pass the 107-byte limit of a socket path.
DEEP_OUT = Path("a-long-folder-name-" * 4, "another-long-folder-name-" * 3, "out")


def quick_self_test_over_http(factory: pytest.TempPathFactory) -> SharedRun:
    """The self-test on the synthetic workload alone (one warmup, six profiling requests) over the http transport,
    into a deep --out, with the machine's temporary folder ($TMPDIR) on a folder of its own in /tmp too long to hold
    the scratch's link (common/scratch.py), listed once the run has ended (`machine_tmp_left`) and then removed.

    Read by test_video_transport.py (the http transport end to end), test_qualify.py (--force, on a copy),
    test_accuracy_gate.py (the terminal's table), test_differences.py (a comparison row beside it, on a copy) and
    test_run_scratch.py (nothing left in the machine's temporary folder). One AIPerf run."""

    def make(folder: Path) -> dict[str, Any]:
        out = folder / DEEP_OUT
        machine_tmp = Path(tempfile.mkdtemp(prefix="mt-" + "long-machine-tmp-" * 2, dir="/tmp"))  # as macOS's
        try:
            env = dict(os.environ, TMPDIR=str(machine_tmp), TMP=str(machine_tmp), TEMP=str(machine_tmp))
            done = qualify("--out", str(out), *QUICK_HTTP, env=env, timeout=RUN_TIMEOUT_S)
            left = sorted(p.name for p in machine_tmp.iterdir())
        finally:
            shutil.rmtree(machine_tmp, ignore_errors=True)
        return {"run": ran(done), "args": list(QUICK_HTTP), "out": str(DEEP_OUT), "machine_tmp_left": left}

    return shared(factory, "quick-self-test-http", [*QUICK_HTTP, str(DEEP_OUT), "own TMPDIR"], make)


# --- the TRTMC ladder through the test doubles --------------------------------------------------------------------


def trtmc_every_row(factory: pytest.TempPathFactory) -> SharedRun:
    """The fixture tree's every in-group row through the TRTMC test doubles (no --profile: the normal profiles run,
    the rest are held or listed) on the synthetic workload, which the doubles answer for real.

    Read by test_qualify.py (every step of the chain, the row's evidence) and test_gates.py (one model row and
    one variant row). One AIPerf run (vidqa-2b)."""

    def make(folder: Path) -> dict[str, Any]:
        env = install_doubles(folder / "bin")
        done = qualify("--trtmc", str(FAMILIES), "--out", str(folder / "out"), *QUICK, env=env, timeout=RUN_TIMEOUT_S)
        return {"run": ran(done)}

    return shared(factory, "trtmc-every-row", {"families": str(FAMILIES), "args": QUICK}, make)


TRTMC_KEY = "sk-serve-TESTKEY-0123456789"
TRTMC_HUB_TOKEN = "hf_TESTTOKEN_0123456789abcdef"
HUB_REVISION = "1" * 40


def trtmc_resumed_after_faults(factory: pytest.TempPathFactory) -> SharedRun:
    """vidqa-2b through the TRTMC test doubles, run three times with the same command: a build that dies after
    writing part of the bundle, then a trtmc-server that never gets ready (`--startup-timeout 4`), then the run that
    goes on and qualifies, reusing the bundle the second run built. The hub token is set (the build double prints
    it, as a careless tool would) and the server wants the API key of --api-key-file (as trtmc-server does); the
    checkpoint's tokenizer is in a hub cache (HF_HUB_CACHE) at the revision the manifest pins, and the video goes
    over the http transport. After each run the --out directory is copied to `after-<phase>/`.

    Read by test_faults.py (the faults and the resume), test_qualify.py (the hub cache's tokenizer) and
    test_video_transport.py (the http transport on the TRTMC ladder). One AIPerf run (the last)."""

    def make(folder: Path) -> dict[str, Any]:
        hub = folder / "hub"
        snapshot = hub / "models--example--VidQA-2B" / "snapshots" / HUB_REVISION
        ensure_local_tokenizer(snapshot)  # stands in for the checkpoint's tokenizer files, as the build left them
        (hub / "models--example--VidQA-2B" / "refs").mkdir()
        (hub / "models--example--VidQA-2B" / "refs" / "main").write_text(HUB_REVISION)  # what the hub served as main
        key_file = folder / "serve.key"
        key_file.write_text(TRTMC_KEY + "\n")
        env = install_doubles(folder / "bin")
        env.pop("TRTMC_SERVE_TOKEN", None)
        env.update(HF_TOKEN=TRTMC_HUB_TOKEN, HF_HUB_CACHE=str(hub))
        out = folder / "out"
        args = [
            "--trtmc", str(FAMILIES), "--out", str(out), "--profile", "vidqa-2b", "--api-key-file", str(key_file),
            *QUICK, "--video-transport", "http",
        ]  # fmt: skip
        phases = {
            "build-dies": (dict(env, TRTMC_BUILD_DOUBLE_DIES_AFTER_WRITING="1"), []),
            "never-ready": (dict(env, TRTMC_SERVER_DOUBLE_READY_AFTER_S="3600"), ["--startup-timeout", "20"]),
            "resume": (env, []),
        }
        facts: dict[str, Any] = {"args": args}
        for phase, (phase_env, extra) in phases.items():
            facts[phase] = ran(qualify(*args, *extra, env=phase_env, timeout=RUN_TIMEOUT_S))
            shutil.copytree(out, folder / f"after-{phase}", symlinks=True)
        return facts

    return shared(factory, "trtmc-resumed-after-faults", {"families": str(FAMILIES), "v": 1}, make)


# --- endpoints the tests start themselves -------------------------------------------------------------------------

NUM_FRAMES = {"chat_template_kwargs": {"num_frames": 16}}


def with_extra_body(tmp: Path, extra: dict) -> Path:
    """A copy of the synthetic workload declaring `extra` as its generation.extra_body, sealed; its workload.json."""
    copy = tmp / "synthetic-extra"
    shutil.copytree(builtin_workload("synthetic").root, copy)
    raw = json.loads((copy / "workload.json").read_text())
    raw["generation"]["extra_body"] = extra
    (copy / "workload.json").write_text(json.dumps(raw))
    seal_workload_file(copy)
    return copy / "workload.json"


def endpoint_with_native_route(factory: pytest.TempPathFactory) -> SharedRun:
    """The reference endpoint (its own process) with its native Task route named (`--native-url`), on a copy of the
    synthetic workload whose generation.extra_body asks for 16 frames; the server records each body's fields in
    `extra-records.jsonl`.

    Read by test_gates.py (the native route checked: identity held) and test_video_transport.py (the extra body
    on every chat request). One AIPerf run."""

    def make(folder: Path) -> dict[str, Any]:
        workload = with_extra_body(folder, NUM_FRAMES)
        with reference(folder, name="extra") as url:
            done = qualify(
                "--endpoint", url, "--model", DEFAULT_MODEL_NAME, "--workload", str(workload), "--repeats", "1",
                "--warmup", "1", "--out", str(folder / "out"), "--native-url", url, timeout=RUN_TIMEOUT_S,
            )  # fmt: skip
        return {"run": ran(done)}

    return shared(factory, "endpoint-native-route", {"extra_body": NUM_FRAMES}, make)


REPEATED = ("--num-profile-runs", "3", "--goodput", "request_latency:60000")


def endpoint_repeated_runs(factory: pytest.TempPathFactory) -> SharedRun:
    """The reference endpoint (its own process, its defaults) measured three times over (`--num-profile-runs 3`),
    with a goodput objective every request meets.

    Read by test_throughput.py (each run's figures, the intervals, goodput) and test_differences.py (the A of
    `report A B`, against a slower server). Three AIPerf runs."""

    def make(folder: Path) -> dict[str, Any]:
        with reference(folder, name="repeated") as url:
            done = qualify(
                "--url", url, "--model", DEFAULT_MODEL_NAME, *QUICK, "--out", str(folder / "out"), *REPEATED,
                timeout=RUN_TIMEOUT_S,
            )  # fmt: skip
        return {"run": ran(done)}

    return shared(factory, "endpoint-repeated-runs", list(REPEATED), make)


SWEEP = ("--concurrency", "1,4")
SWEEP_CAPACITY, SWEEP_TASK_MS = 8, 600


def endpoint_sweep(factory: pytest.TempPathFactory) -> SharedRun:
    """The reference endpoint answering up to eight requests at once, each task 600 ms, measured at concurrency 1
    and 4 (`--concurrency 1,4`: one AIPerf run a level, six profiling requests each), given as `--endpoint URL/v1`
    (the OpenAI client's base URL, which users paste).

    Read by test_throughput.py (each level's run, join, grades, commands and batches; the report's curve),
    test_server_capacity.py (a server that answers every request at once scales with concurrency: the 600 ms task
    is long beside what the clock adds) and test_qualify_options.py (a URL ending in /v1 measures the server).
    Two AIPerf runs."""

    def make(folder: Path) -> dict[str, Any]:
        with reference(folder, name="sweep", capacity=SWEEP_CAPACITY, added_task_ms=SWEEP_TASK_MS) as url:
            done = qualify(
                "--endpoint", url + "/v1", "--model", DEFAULT_MODEL_NAME, *QUICK, "--out", str(folder / "out"),
                *SWEEP, timeout=RUN_TIMEOUT_S,
            )  # fmt: skip
        return {"run": ran(done)}

    return shared(factory, "endpoint-sweep", [*SWEEP, SWEEP_CAPACITY, SWEEP_TASK_MS, "/v1"], make)


SERVE_TOKEN = "sk-test-0123456789abcdef"


def endpoint_auto_with_key(factory: pytest.TempPathFactory) -> SharedRun:
    """The reference endpoint (in this process) refusing video as a data URL, as `transformers serve` does, run with
    `--video-transport auto`, an API key in $TRTMC_SERVE_TOKEN, and the server's stated sampling (uniform:16, applied
    by the server; the workload declares uniform:8); no native route named. Its records are `server-records.jsonl`.

    Read by test_qualify.py (the key reaches no artifact; the sampling the server applied), test_gates.py (no
    native route: identity not-applicable, and the row still qualifies), test_video_transport.py (auto falls
    back to http after the refusal), test_row_failures.py (the earlier run of an out that a second run with
    another model adds its row to, on a copy) and test_staged_rows.py (the earlier row that an interrupted `--force`
    re-run leaves byte for byte, on a copy). One AIPerf run."""

    def make(folder: Path) -> dict[str, Any]:
        config = ReferenceConfig(records_path=folder / "server-records.jsonl", faults=FaultKnobs(refuse_data_urls=True))
        with ReferenceServer(config) as server:
            done = qualify(
                "--endpoint", server.url, "--model", DEFAULT_MODEL_NAME, *QUICK, "--out", str(folder / "out"),
                "--server-setting", f"sampling_policy={server.config.sampling_policy}",
                "--server-setting", "sampling_where=server", "--video-transport", "auto",
                env=dict(os.environ, TRTMC_SERVE_TOKEN=SERVE_TOKEN), timeout=RUN_TIMEOUT_S,
            )  # fmt: skip
        return {"run": ran(done), "sampling_policy": config.sampling_policy}

    return shared(factory, "endpoint-auto-with-key", {"token": SERVE_TOKEN, "transport": "auto"}, make)


FILE_KEY = "sk-file-TESTKEY-9876543210fedcba"
REQUIRED_KEY_ENV = "REFERENCE_REQUIRED_KEY"


def _cmdlines() -> list[bytes]:
    """Every process's command line as the kernel lists it (NUL between arguments), read once."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "cmdline").read_bytes())
            except OSError:
                continue
    return found


def _holding(cmdlines: list[bytes], *texts: str) -> list[str]:
    """The command lines that hold any of `texts`, readable (NULs as spaces), 200 characters at most."""
    return [
        c.replace(b"\0", b" ").decode(errors="replace")[:200] for c in cmdlines if any(t.encode() in c for t in texts)
    ]


def endpoint_with_key_file(factory: pytest.TempPathFactory) -> SharedRun:
    """The reference endpoint (in this process) that refuses any request without its API key, qualified with the key
    in `--api-key-file`; while the run lives, every process listing is read for the key (`listed`) and for AIPerf
    (`seen_aiperf`). Each answer takes 300 ms more, so the listing is read many times while AIPerf runs.

    Read by test_security.py (the key reaches the server but no artifact, log or command) and
    test_hostile_input.py (the key is in no process listing). One AIPerf run."""

    def make(folder: Path) -> dict[str, Any]:
        key_file = folder / "api.key"
        key_file.write_text(FILE_KEY + "\n")
        env = {k: v for k, v in os.environ.items() if k not in ("TRTMC_SERVE_TOKEN", REQUIRED_KEY_ENV)}
        argv = [sys.executable, "-m", "trtmc_videoqa", "qualify", "--out", str(folder / "out"), *QUICK]
        os.environ[REQUIRED_KEY_ENV] = FILE_KEY  # the server (in this process) reads its key from here
        try:
            config = ReferenceConfig(
                api_key_env=REQUIRED_KEY_ENV,
                records_path=folder / "records.jsonl",
                faults=FaultKnobs(added_task_ms=300),
            )
            with ReferenceServer(config) as server:
                argv += ["--model", DEFAULT_MODEL_NAME, "--endpoint", server.url, "--api-key-file", str(key_file)]
                process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                listed: list[str] = []
                seen_aiperf = False
                deadline = time.monotonic() + RUN_TIMEOUT_S
                while process.poll() is None and time.monotonic() < deadline:
                    cmdlines = _cmdlines()  # one pass over /proc for both questions (it was three)
                    listed += _holding(cmdlines, FILE_KEY)
                    seen_aiperf = seen_aiperf or bool(_holding(cmdlines, "aiperf profile", "--config"))
                    time.sleep(0.02)
                if process.poll() is None:
                    process.kill()
                stdout, stderr = process.communicate(timeout=60)
        finally:
            os.environ.pop(REQUIRED_KEY_ENV, None)
        done = subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
        return {"run": ran(done), "listed": listed, "seen_aiperf": seen_aiperf}

    return shared(factory, "endpoint-key-file", {"key": FILE_KEY}, make)
