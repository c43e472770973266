"""Plain helpers shared by the test modules: the console script run as a user runs it, and what its runs leave.
The shared fixtures are in conftest.py; these are functions because tests call them with their own arguments."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from trtmc_videoqa.aiperf.dataset import PlannedRequest, RequestPlan
from trtmc_videoqa.aiperf.runner import RunOutcome
from trtmc_videoqa.common.safe_names import row_dir_name
from trtmc_videoqa.plan.settings import RunSettings
from trtmc_videoqa.reference import FaultKnobs, ReferenceConfig, argv_for_subprocess
from trtmc_videoqa.results import Provenance, RequestRow, ResultRow, StageResult
from trtmc_videoqa.results.layout import ROWS_STAGING
from trtmc_videoqa.serving.process import ServerProcess, free_loopback_port
from trtmc_videoqa.stages.aiperf import _aiperf_stage

# The tests' own HTTP requests to the servers they start. httpx.get and httpx.post build a client per call, and with it
# an SSL context that loads the CA store: about 25 ms of CPU each, hundreds of times a run. This client is built
# once; like them it opens a connection for every request (none is kept alive) and waits 5 s unless told otherwise.
HTTP = httpx.Client(trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))

# A small run where a test is not about volume: the synthetic workload, one warmup and six profiling requests.
QUICK = ("--workload", "synthetic", "--repeats", "1", "--warmup", "1")


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python -m trtmc_videoqa ARGS` in a subprocess (env None: this process's environment), its output kept."""
    argv = [sys.executable, "-m", "trtmc_videoqa", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def qualify(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return cli("qualify", *args, env=env, timeout=timeout)


def run_main(
    capsys: pytest.CaptureFixture[str] | None,
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`trtmc-videoqa ARGS` in this process: `main(argv)` with its output captured, for what a command does with its
    arguments and what its run leaves (refusals, help, rows, reports); the servers and tools a run starts are still
    real processes. `env` (the whole environment, as for `cli`) and `cwd` hold for this call only; `capsys` None
    (a fixture wider than one test has none) captures into a buffer instead. What only our own process shows (the
    console script, exit codes on signals, a terminal, what is left when it is killed, a hang on hostile input)
    stays with `cli`. argparse's own exits (--help, --version, a usage error) are SystemExit here; their code is
    returned like any other."""
    from trtmc_videoqa.cli.main import main

    if capsys is not None:
        capsys.readouterr()  # only this command's output
    streams = sys.stdout, sys.stderr  # main wraps them (control characters out); put pytest's own back after
    if capsys is None:
        sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    buffers = sys.stdout, sys.stderr
    environ, where = dict(os.environ), Path.cwd()
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    try:
        code = main(list(args))
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    finally:
        sys.stdout, sys.stderr = streams
        os.chdir(where)
        if env is not None:
            os.environ.clear()
            os.environ.update(environ)
    out, err = capsys.readouterr() if capsys is not None else (buffers[0].getvalue(), buffers[1].getvalue())
    return subprocess.CompletedProcess(["trtmc-videoqa", *args], code, out, err)


def interpreter_tools_only(folder: Path) -> str:
    """A PATH of this interpreter's own folder and `folder` holding only a link to `ldd`, where the machine has one:
    no docker, GPU tool, TRTMC or ffmpeg on it. Without `ldd`, doctor cannot read which FFmpeg libraries torchcodec
    links from its files and imports it, and torch with it, in a child interpreter: about 6 s of CPU a call."""
    folder.mkdir(parents=True, exist_ok=True)
    ldd = shutil.which("ldd")
    if ldd:
        (folder / "ldd").symlink_to(ldd)
    return os.pathsep.join([str(Path(sys.executable).parent), str(folder)])


def row(out: Path, profile: str) -> ResultRow:
    """The result row a run wrote for `profile` under its output directory `out`."""
    return ResultRow.model_validate_json((out / "checkpoints" / profile / "result.json").read_bytes())


def building(out: Path, profile: str) -> Path:
    """Where a run builds the row `profile` before it puts it in place as checkpoints/<profile>/ (rows/staging.py)."""
    return out / ROWS_STAGING / row_dir_name(profile)


def eventually(check: Callable[[], bool], within_s: float = 60, every_s: float = 0.05) -> bool:
    """Whether `check()` holds within `within_s` (a bound for what would otherwise wait forever, far above the time
    it takes on a busy machine); checked again every `every_s`."""
    deadline = time.monotonic() + within_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(every_s)
    return True


def no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr


PROGRESS_LINE = re.compile(r"^  \[ *\d+\.\d s\] ")


def one_message(done: subprocess.CompletedProcess[str]) -> str:
    """stderr, beside its progress lines ("  [  1.2 s] ..."), is exactly one non-blank line, and it is that line."""
    lines = [line for line in done.stderr.splitlines() if line.strip() and not PROGRESS_LINE.match(line)]
    assert len(lines) == 1, done.stderr
    return lines[0]


@contextmanager
def reference(
    tmp: Path,
    *,
    port: int | None = None,
    name: str = "reference",
    max_body_bytes: int = 4 << 20,
    model_name: str | None = None,
    capacity: int = 1,
    stream: bool = False,
    **faults: object,
) -> Iterator[str]:
    """The reference endpoint as its own process (so the crash knob ends only it), ready before it is used; it
    serves `model_name` where given, `capacity` tasks at once, and streams where `stream` says so."""
    port = port or free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    config = ReferenceConfig(
        port=port,
        records_path=tmp / f"{name}-records.jsonl",
        max_body_bytes=max_body_bytes,
        faults=FaultKnobs(**faults),
        capacity=capacity,
        stream=stream,
        **({"model_name": model_name} if model_name else {}),
    )
    with ServerProcess(argv_for_subprocess(config), url=url, log_path=tmp / f"{name}.log", startup_timeout_s=60):
        yield url


def git(repo: Path, *args: str) -> str:
    """`git -C repo ARGS` with a throwaway identity; its stdout, stripped."""
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def unrecorded_aiperf_stage(outcome: RunOutcome, clip_path: str) -> StageResult:
    """The aiperf stage for a run of one planned request that AIPerf exported no record of, ending as `outcome`."""
    planned = PlannedRequest(
        session_id="q.c.r00", phase="profiling", question_id="q", clip_id="c", repeat=0, clip_path=clip_path, text="t"
    )
    records = [
        RequestRow(session_id="q.c.r00", phase="profiling", question_id="q", clip_id="c", repeat=0,
                   error="no record: AIPerf exported none for this request")
    ]  # fmt: skip
    plan = RequestPlan(requests=[planned], max_tokens=8)
    return _aiperf_stage(outcome, records, plan, RunSettings(), server_gone=False)


def endpoint_provenance(endpoint: str, served_by: str | None = "some server") -> Provenance:
    """The provenance of a hand-made endpoint row of the synthetic workload, for the report's tests."""
    return Provenance(
        tool_versions={},
        workload="synthetic",
        workload_digest="0" * 64,
        endpoint=endpoint,
        mode="endpoint",
        served_by=served_by,
    )
