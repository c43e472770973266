"""No orphans, and AIPerf bounded from outside (issue 26, item 7, and item 3's process-group memory backstop).

Every child the tool starts runs in a process group of its own and is registered with `common/child_groups.py`: a
watcher that outlives the tool (it reads a pipe only the tool writes) ends every registered group when the tool goes,
even after `kill -9`; the groups are recorded in the output folder's lock file, so a re-run on the same --out ends
what a watcher could not, and a lock file planted or left there can never make a run signal another's processes.

AIPerf is never patched: each of its processes gets an address-space limit, and a sampler sums the memory of its whole
process group and ends the group at --aiperf-memory-limit, the row naming the limit as its cause.

The stand-in "tool" here is a few lines of Python that take the output lock and start a group the way the runner does
(a leader and a grandchild, as AIPerf's services are); two tests launch AIPerf itself (e2e): a `kill -9` of qualify
during AIPerf, then a re-run, and a run under a memory limit AIPerf cannot keep to.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from helpers import QUICK, eventually, row, unrecorded_aiperf_stage

from trtmc_videoqa.aiperf.runner import run_with_wall_limit
from trtmc_videoqa.common import child_groups
from trtmc_videoqa.common.output_lock import LOCK_NAME, OutputBusy, OutputLock
from trtmc_videoqa.common.processes import ADDRESS_SPACE_HEADROOM
from trtmc_videoqa.common.scratch import link_parent_dir, links_to
from trtmc_videoqa.plan.settings import MIB
from trtmc_videoqa.results.layout import REFERENCE_RECORDS, RUN_SCRATCH_DIR

TOOL = textwrap.dedent(
    """
    import subprocess, sys, time
    from pathlib import Path
    from trtmc_videoqa.common import child_groups
    from trtmc_videoqa.common.output_lock import OutputLock

    out = Path(sys.argv[1])
    lock = OutputLock(out).__enter__()
    # "env": the run's variable, as every child gets it; "log": only a log in the output folder (AIPerf's services
    # rename themselves, which hides their environment).
    env = child_groups.child_environment(None) if sys.argv[2] == "env" else None
    group = subprocess.Popen(
        ["sh", "-c", "sleep 300 & sleep 301; wait"],
        env=env,
        stdout=open(out / "child.log", "w"),
        start_new_session=True,
    )
    child_groups.register(group.pid)
    print(group.pid, child_groups.run_token(), child_groups._watcher.pid, flush=True)
    time.sleep(600)
    """
)


def _carrying(token: str) -> list[int]:
    """Live processes (zombies aside) that carry the run's CHILD_ENV value: the processes of that run."""
    wanted = f"{child_groups.CHILD_ENV}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                stat = (entry / "stat").read_text()
                if stat[stat.rindex(")") + 2] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def _start_tool(out: Path, marked_by: str = "env") -> tuple[subprocess.Popen[str], int, str, int]:
    tool = subprocess.Popen([sys.executable, "-c", TOOL, str(out), marked_by], stdout=subprocess.PIPE, text=True)
    assert tool.stdout is not None
    pgid, token, watcher = tool.stdout.readline().split()
    deadline = time.monotonic() + 10
    while len(child_groups.members(int(pgid))) < 3 and time.monotonic() < deadline:  # sh and both sleeps
        time.sleep(0.02)
    return tool, int(pgid), token, int(watcher)


def test_kill_9_of_the_tool_ends_every_group_it_registered(tmp_path: Path) -> None:
    tool, pgid, token, watcher = _start_tool(tmp_path / "out")
    assert len(child_groups.members(pgid)) == 3 and set(child_groups.members(pgid)) <= set(_carrying(token))
    assert f"group {pgid} " in (tmp_path / "out" / LOCK_NAME).read_text()  # recorded with the lock
    tool.kill()  # SIGKILL: no finally of the tool runs
    tool.wait()
    assert eventually(lambda: not _carrying(token)), _carrying(token)  # every process of the run ends on its own
    assert eventually(lambda: not Path(f"/proc/{watcher}").exists())  # and so does the watcher


@pytest.mark.parametrize("marked_by", ["env", "log"])
def test_a_re_run_on_the_same_out_ends_what_a_killed_run_left(tmp_path: Path, marked_by: str) -> None:
    out = tmp_path / "out"
    tool, pgid, token, watcher = _start_tool(out, marked_by)
    os.kill(watcher, signal.SIGKILL)  # the watcher too: only the lock file knows the group now
    tool.kill()
    tool.wait()
    time.sleep(0.5)
    assert len(child_groups.members(pgid)) == 3  # left running
    with OutputLock(out):
        assert child_groups.members(pgid) == []  # ended before the new run does anything
    assert not (out / LOCK_NAME).exists()


def test_a_planted_lock_file_never_makes_a_run_signal_another_s_processes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)  # someone else's group, no run token
    try:
        started = child_groups.start_time(bystander.pid)
        (out / LOCK_NAME).write_text(
            f"99999\ngroup {bystander.pid} {started} 1.2\ngroup {bystander.pid} {started} {os.getpid()}.0\n"
            "group 1 0 1.2\ngroup 0 0 1.2\ngroup -1 0 x\n"
        )
        with OutputLock(out):
            pass
        time.sleep(0.2)
        assert bystander.poll() is None  # untouched
    finally:
        bystander.kill()
        bystander.wait()


def test_a_group_that_cannot_be_ended_is_named_and_the_folder_refused(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "out"
    tool, pgid, _, watcher = _start_tool(out)
    os.kill(watcher, signal.SIGKILL)
    tool.kill()
    tool.wait()
    monkeypatch.setattr(child_groups, "end_groups", lambda groups, grace_s=0: sorted(groups))
    try:
        with pytest.raises(OutputBusy) as refused, OutputLock(out):
            pass
        assert str(pgid) in str(refused.value) and f"kill -9 -- -{pgid}" in str(refused.value)
        assert f"group {pgid} " in (out / LOCK_NAME).read_text()  # still named for the next try
    finally:
        monkeypatch.undo()
        child_groups.end_groups({pgid: 0}, grace_s=0.5)


# --- AIPerf's memory, bounded from outside ------------------------------------------------------------------------

GREEDY = textwrap.dedent(
    """
    import os, resource, subprocess, sys, time
    time.sleep(0.3)  # the address-space limit is set just after the start
    print("RLIMIT_AS", resource.getrlimit(resource.RLIMIT_AS)[0], "GROUP", os.getpgrp(), flush=True)
    # A grandchild in the same group holds the memory, as one of AIPerf's services would.
    code = "import time\\nheld = []\\nfor _ in range(40):\\n    held.append(b'x' * (25 << 20)); time.sleep(0.05)\\n"
    code += "time.sleep(60)"
    subprocess.run([sys.executable, "-c", code])
    """
)


def test_the_group_is_ended_at_its_memory_limit_and_the_row_names_it(tmp_path: Path) -> None:
    limit = 200 * MIB
    started = time.monotonic()
    outcome = run_with_wall_limit(
        [sys.executable, "-c", GREEDY], wall_limit_s=60, log_path=tmp_path / "aiperf.log", memory_limit_bytes=limit
    )
    assert time.monotonic() - started < 20
    assert outcome.memory_exceeded and not outcome.timed_out and outcome.memory_limit_bytes == limit
    assert (outcome.peak_memory_bytes or 0) > limit
    log = (tmp_path / "aiperf.log").read_text()
    assert f"RLIMIT_AS {limit + ADDRESS_SPACE_HEADROOM} GROUP" in log
    assert child_groups.members(int(log.split("GROUP")[1].split()[0])) == []  # nothing of the group is left
    stage = unrecorded_aiperf_stage(outcome, "c.mp4")
    assert stage.status == "failed" and "past the --aiperf-memory-limit of 200 MiB" in stage.detail


@pytest.mark.parametrize("pidfd", [True, False])
def test_the_wait_sees_the_exit_and_the_time_running_out(pidfd: bool, monkeypatch) -> None:
    """The runner's wait: not exited while the command runs (its time up), exited (and reaped) once it has, again and
    again after; the same where no pidfd is given (Popen's own polling wait)."""
    from trtmc_videoqa.common.processes import _ExitWatch

    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    with _ExitWatch(process) as exited:
        assert not exited(0.05) and process.returncode is None
        assert process.stdin is not None
        process.stdin.close()  # the command ends
        assert exited(60) and process.returncode == 0
        assert exited(0)


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc")
def test_a_group_is_read_whatever_its_processes_are_named() -> None:
    """A process name is bytes, not always UTF-8 (prctl sets any): the group is still found, sized and dated."""
    rename = "import ctypes, sys; ctypes.CDLL(None).prctl(15, b'\\xffnot utf-8', 0, 0, 0); print(1, flush=True)"
    child = subprocess.Popen(
        [sys.executable, "-c", rename + "; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"1"  # renamed
        assert b"\xffnot" in Path(f"/proc/{child.pid}/stat").read_bytes()
        assert child_groups.members(child.pid) == [child.pid]
        assert child_groups.group_memory(child.pid) > 0 and child_groups.start_time(child.pid) > 0
    finally:
        child.kill()
        child.wait()


def test_without_a_limit_nothing_is_sampled(tmp_path: Path) -> None:
    outcome = run_with_wall_limit([sys.executable, "-c", "print('hi')"], wall_limit_s=60, log_path=tmp_path / "l")
    assert outcome.exit_code == 0 and outcome.peak_memory_bytes is None and not outcome.memory_exceeded
    assert outcome.refusal is None
    assert child_groups.live_groups() == {}  # registered while it ran, no longer


def _cmdlines() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue
    return found


# --- with AIPerf (e2e) --------------------------------------------------------------------------------------------

PROFILE = "reference-self-test.synthetic"


def _recorded_groups(out: Path) -> list[int]:
    """The process groups the run's lock file lists (it stays behind when the run is killed)."""
    try:
        lines = (out / LOCK_NAME).read_text().splitlines()
    except OSError:
        return []
    return [int(line.split()[1]) for line in lines if line.startswith("group ")]


def _processes_of(groups: list[int]) -> list[int]:
    return [pid for pgid in groups for pid in child_groups.members(pgid)]


def _is_aiperf(pid: int) -> bool:
    try:
        return b"aiperf" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.e2e
def test_kill_9_during_aiperf_leaves_no_process_and_a_re_run_counts_only_its_own_requests(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "trtmc_videoqa", "qualify", "--out", str(out), *QUICK]
    tool = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    groups: list[int] = []
    running: list[int] = []
    records = out / REFERENCE_RECORDS
    try:
        deadline = time.monotonic() + 180
        # Bounded wait until AIPerf's services run beside the reference server, in the groups the run recorded, and
        # its requests are under way: the server recorded one past the capability check's. Then at once: AIPerf's
        # requests take a fraction of a second here, its whole run after its services start about one.
        while time.monotonic() < deadline and tool.poll() is None:
            groups = _recorded_groups(out)
            running = _processes_of(groups)
            sent = len(records.read_bytes().splitlines()) if records.is_file() else 0
            if len(groups) >= 2 and sum(map(_is_aiperf, running)) >= 4 and sent >= 2:
                break
            time.sleep(0.02)
        assert tool.poll() is None and len(groups) >= 2, "AIPerf never ran"
        assert len(running) >= 5  # the reference server and AIPerf's services
        tool.kill()  # kill -9 of the tool alone: its children are in groups of their own
        tool.wait()
        ended = eventually(lambda: not _processes_of(groups))  # on their own: the run's watcher ends its groups
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()
    assert ended, _processes_of(groups)
    assert _links_to(out / RUN_SCRATCH_DIR), "the killed run left its scratch's link in the machine's temporary folder"
    again = subprocess.run([*argv], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert _links_to(out / RUN_SCRATCH_DIR) == []  # the re-run removed the killed run's, and its own
    measured = row(out, PROFILE)
    assert measured.status == "endpoint-qualified", measured.status_reason
    assert measured.profiling_requests_completed == 6 and measured.failed_requests == 0
    export = out / "checkpoints" / PROFILE / "aiperf" / "export" / "profile_export.jsonl"
    sessions = [json.loads(line)["metadata"]["conversation_id"] for line in export.read_text().splitlines()]
    assert len(sessions) == len(set(sessions)) == 7  # one warmup and six profiling requests, each sent once


def _links_to(scratch: Path) -> list[Path]:
    """The link parents in the machine's temporary folder (common/scratch.py) that point at `scratch`."""
    return links_to(Path(link_parent_dir(tempfile.gettempdir())), scratch)


@pytest.mark.e2e
def test_an_aiperf_run_past_its_memory_limit_is_ended_and_the_row_names_the_limit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    # 64 MiB: AIPerf's processes hold about 120 MiB together here (their PSS summed), whatever the machine's load
    argv = ["--out", str(out), *QUICK, "--aiperf-memory-limit", str(64 * MIB)]
    done = subprocess.run(
        [sys.executable, "-m", "trtmc_videoqa", "qualify", *argv], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 3, done.stderr  # the row failed at aiperf
    failed = row(out, PROFILE)
    assert (failed.status, failed.failed_stage) == ("failed", "aiperf")
    assert "past the --aiperf-memory-limit of 64 MiB" in failed.status_reason
    outcome = json.loads((out / "checkpoints" / PROFILE / "aiperf" / "outcome.json").read_text())
    assert outcome["memory_exceeded"] and outcome["peak_memory_bytes"] > 64 * MIB
    assert not [c for c in _cmdlines() if str(out) in c]
