"""Hostile input, class by class: each class is tried in more than one form.

1. Writes that go where nobody asked: every file the tool writes is a regular file it created, never a link's
   target, a device or a FIFO, and never in a folder that nobody named. The tool runs as root in containers and CI,
   so a device target is tried for real where this test runs as root (a character device made with mknod in the
   test's own folder, never one of the machine's).
2. SIGTERM and SIGHUP (what `docker stop`, `timeout` and a CI cancel send) stop every child as Ctrl-C does, record
   the row as interrupted, write the report of what exists and exit 143 or 129.
3. Secrets: a server key is never on a command line (`ps`), and a URL with a credential in it is refused.
4. One foreign file never breaks a run: a result file that cannot be read is named in every report while the rest
   is reported, and a row that claims a measured status without the evidence beside it is `unverified`.
5. Injection: text from a server or a checkout (a model name, a fingerprint, an answer, a manifest or file name)
   holding `|`, a newline, `<script>` or control characters keeps report.md and inventory.md rows whole, passes no
   HTML, leaves junit.xml valid XML, and prints no escape sequence (text_escape.py: one function per format).
6. Limits that hold: time limits refuse nan, negative and infinite values; the capability check waits as long as
   --request-timeout says and names it; --against reads only a regular file; deeply nested JSON is a 400; doctor
   refuses a script that is not aiperf's own; an invalid MODEL.toml is said, not taken. (A strip's size cap and mode,
   and the report after an interruption, are tried with classes 1 and 2 above.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import HTTP, QUICK, building, eventually, no_traceback, one_message, qualify, run_main
from shared_runs import SharedRun, tripwire_aiperf

from trtmc_videoqa.common.atomic_write import UnsafeTarget, check_target, write_text_atomic
from trtmc_videoqa.common.output_lock import LOCK_NAME, OutputLock
from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, FaultKnobs, ReferenceConfig, ReferenceServer
from trtmc_videoqa.results import GroupLine, Provenance, Report, RequestRow, ResultRow

# --- 1. writes that go where nobody asked -----------------------------------------------------------------------


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _device(path: Path) -> Path:
    """A character device like /dev/full (1, 7), made in the test's own folder; root only."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root, where the device form must be tried: mknod needs root")
        pytest.skip("mknod needs root (CI runs as root)")
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    return path


def _link_to_victim(path: Path) -> Path:
    victim = path.parent / "victim.txt"
    victim.write_text("not yours\n")
    path.symlink_to(victim)
    return path


TARGETS = {"fifo": _fifo, "device": _device, "link": _link_to_victim}


def _unchanged(path: Path, kind: str) -> None:
    mode = os.lstat(path).st_mode
    expected = {"fifo": stat.S_ISFIFO, "device": stat.S_ISCHR, "link": stat.S_ISLNK}[kind]
    assert expected(mode), f"{path} was replaced"
    if kind == "link":
        assert (path.parent / "victim.txt").read_text() == "not yours\n"


# The refusals below run in this process (`run_main`): what is checked is the exit code, the message and the target
# left as it was, not the process. A write that did open a FIFO would block: pytest's timeout, by its thread method,
# is the hang guard (the worker is ended and the test fails), never a measure of speed.
WRITE_HANG_GUARD_S = 120


@pytest.mark.timeout(WRITE_HANG_GUARD_S, method="thread")
@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_a_strip_is_never_written_into_a_fifo_device_or_link(clips, tmp_path: Path, kind: str) -> None:
    target = TARGETS[kind](tmp_path / "strip.png")
    done = run_main(None, "probe", str(clips.mp4), "--policy", "uniform:4", "--strip", str(target))
    assert done.returncode == 2, done.stdout + done.stderr
    no_traceback(done)
    message = one_message(done)
    assert str(target) in message and "writes only regular files" in message
    _unchanged(target, kind)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


@pytest.mark.timeout(WRITE_HANG_GUARD_S, method="thread")
@pytest.mark.parametrize("option", ["probe --strip", "serve-reference --url-file"])
def test_a_folder_that_does_not_exist_is_not_made(clips, tmp_path: Path, option: str) -> None:
    target = tmp_path / "nonexistent" / "dir" / "out.file"
    if option == "probe --strip":
        done = run_main(None, "probe", str(clips.mp4), "--policy", "uniform:4", "--strip", str(target))
    else:
        done = run_main(None, "serve-reference", "--port", "0", "--url-file", str(target))
    assert done.returncode == 2, done.stdout + done.stderr
    no_traceback(done)
    assert "does not exist: create the folder first" in one_message(done)
    assert not (tmp_path / "nonexistent").exists()


@pytest.mark.timeout(WRITE_HANG_GUARD_S, method="thread")
@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_the_url_file_is_never_written_through_a_link_or_into_a_fifo(tmp_path: Path, kind: str) -> None:
    target = TARGETS[kind](tmp_path / "url")
    done = run_main(None, "serve-reference", "--port", "0", "--url-file", str(target))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "writes only regular files" in one_message(done)
    _unchanged(target, kind)


def test_temporary_names_are_new_each_time_so_a_planted_link_is_never_followed(tmp_path: Path) -> None:
    # The old url-file temporary was .NAME.PID.tmp: predictable. Plant links at every name of that shape a process
    # could have; a write makes its own fresh name (mkstemp, created exclusively) and follows none of them.
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    for pid in (os.getpid(), os.getppid(), 1):
        (tmp_path / f".url.{pid}.tmp").symlink_to(victim)
    write_text_atomic(tmp_path / "url", "http://127.0.0.1:1\n", make_parents=False)
    assert victim.read_text() == "not yours\n"
    assert (tmp_path / "url").read_text() == "http://127.0.0.1:1\n" and not (tmp_path / "url").is_symlink()


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_planted_lock_is_refused_and_its_target_untouched(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    lock = TARGETS[kind](out / LOCK_NAME)
    with pytest.raises(UnsafeTarget, match="writes only regular files"):
        OutputLock(out).__enter__()
    _unchanged(lock, kind)


def test_qualify_refuses_a_symlinked_lock_before_anything_runs(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    lock = _link_to_victim(out / LOCK_NAME)
    # an endpoint where nothing listens: were the lock taken, the run would stop at the capability check
    done = run_main(capsys, "qualify", "--out", str(out), *QUICK, "--endpoint", "http://127.0.0.1:9", "--model", "m")
    assert done.returncode == 2, done.stderr
    assert LOCK_NAME in one_message(done) and "symbolic link" in done.stderr
    _unchanged(lock, "link")
    assert not (out / "checkpoints").exists()


@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_check_target_names_what_is_there(tmp_path: Path, kind: str) -> None:
    target = TARGETS[kind](tmp_path / "x")
    words = {"fifo": "a FIFO", "device": "a character device", "link": "a symbolic link"}[kind]
    with pytest.raises(UnsafeTarget, match=words):
        check_target(target)
    check_target(tmp_path / "absent")  # absent: fine
    (tmp_path / "plain").write_text("")
    check_target(tmp_path / "plain")  # a regular file: fine, it will be replaced


def test_a_log_is_never_opened_through_a_link(tmp_path: Path) -> None:
    from trtmc_videoqa.common.atomic_write import open_for_writing

    link = _link_to_victim(tmp_path / "server.log")
    with pytest.raises(UnsafeTarget, match="a symbolic link"):
        open_for_writing(link)
    _unchanged(link, "link")
    fifo = _fifo(tmp_path / "aiperf.log")
    with pytest.raises(UnsafeTarget, match="a FIFO"):  # and the open does not block on it
        open_for_writing(fifo)


def test_strip_pngs_are_readable_by_everyone_and_huge_strips_are_refused(
    clips, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_main(capsys, "probe", str(clips.mp4), "--policy", "uniform:4", "--strip", str(tmp_path / "s.png"))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE((tmp_path / "s.png").stat().st_mode) == 0o644
    from trtmc_videoqa.media import SamplingPolicy, probe_clip
    from trtmc_videoqa.media.strip import MAX_STRIP_PIXELS, write_strip

    manifest = probe_clip(clips.mp4)
    resolved = SamplingPolicy.parse("uniform:4").resolve(manifest.frames_counted, manifest.fps, manifest.start_time_s)
    frames_allowed = MAX_STRIP_PIXELS // (manifest.width * manifest.height)
    huge = (manifest.width * (frames_allowed + 1), manifest.height)  # as if each frame were that wide
    from trtmc_videoqa.media import ClipError

    with pytest.raises(ClipError, match="million pixels"):
        write_strip(clips.mp4, resolved, tmp_path / "huge.png", frame_size=huge)
    assert not (tmp_path / "huge.png").exists()


# Plain writes that bypass every check above: Path.write_text/write_bytes, open for writing, shutil's copies and
# moves (copyfile, copy, copy2 and copytree write through a link at the target), and PyAV opening a path for
# writing anywhere but the temporary file `atomic_target` gives it.
PLAIN_WRITES = re.compile(
    r"""\.write_text\(|\.write_bytes\(|\.open\("[wa]|open\(path, "w|shutil\.(copy|move)"""
    r"""|av\.open\((?!str\(temporary\)).*"w"""
)


def test_no_module_writes_a_file_but_through_the_safe_writers() -> None:
    """A source scan: a plain write in src/ would bypass every check above."""
    src = Path(__file__).resolve().parents[1] / "src" / "trtmc_videoqa"
    found = [
        f"{path.relative_to(src)}:{number}"
        for path in sorted(src.rglob("*.py"))
        if path.name != "atomic_write.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if PLAIN_WRITES.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(
    "line",
    [
        'path.write_text("x")',
        'out.open("wb")',
        "shutil.copyfile(source, destination)",
        "shutil.copy2(a, b)",
        "shutil.copytree(a, b)",
        'with av.open(str(out), "w", format="mp4") as target:',
        'av.open(str(path), mode="w", format="mp4")',
    ],
)
def test_the_scan_finds_each_plain_write(line: str) -> None:
    assert PLAIN_WRITES.search(line)
    assert not PLAIN_WRITES.search('with av.open(str(temporary), "w", format="mp4") as target:')


# --- 2. SIGTERM and SIGHUP stop a run as Ctrl-C does: no orphan, the row interrupted, the report written ------------


def _processes_naming(text: str) -> set[int]:
    """Live processes whose command line names `text` (the run's output folder: the reference server, AIPerf)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.add(int(entry.name))
    return found


@pytest.mark.e2e
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_during_aiperf_leaves_no_process_and_a_report(tmp_path: Path, signum: int, code: int) -> None:
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "trtmc_videoqa", "qualify", "--out", str(out), *QUICK]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        # Bounded wait until AIPerf runs beside the reference server this run started (both name the out folder).
        while time.monotonic() < deadline and process.poll() is None:
            seen |= _processes_naming(str(out)) - {process.pid}
            if (building(out, "reference-self-test.synthetic") / "aiperf" / "inputs.jsonl").exists() and any(
                "aiperf" in (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace")
                for pid in seen
                if (Path("/proc") / str(pid)).exists()
            ):
                break
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()
        time.sleep(1.0)  # AIPerf's workers are up
        seen |= _processes_naming(str(out)) - {process.pid}
        os.kill(process.pid, signum)  # to our process only, as `docker stop` or `timeout` sends it
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and f"interrupted ({signal.Signals(signum).name})" in stderr
    assert len(seen) >= 2  # the reference server and AIPerf's processes were there
    # and none of them, nor anything else naming the run, is left (a process just killed may take a moment to go)
    assert eventually(lambda: _processes_naming(str(out)) == set()), _processes_naming(str(out))
    interrupted = ResultRow.model_validate_json(
        (out / "checkpoints" / "reference-self-test.synthetic" / "result.json").read_bytes()
    )
    assert (interrupted.status, interrupted.failed_stage) == ("interrupted", None)
    assert interrupted.interruption is not None and interrupted.interruption.stage == "aiperf"
    assert interrupted.interruption.signal == signal.Signals(signum).name
    assert (out / "report.md").is_file() and "reference-self-test.synthetic" in (out / "report.md").read_text()
    assert not (out / LOCK_NAME).exists()


# --- 3. secrets: never in `ps`, never in a URL ----------------------------------------------------------------------


@pytest.mark.e2e
def test_the_api_key_is_in_no_process_listing_while_aiperf_runs(key_file_run: SharedRun) -> None:
    # shared_runs.endpoint_with_key_file read every process listing while its run lived, AIPerf's time included
    done = key_file_run.done()
    assert done.returncode == 0, done.stderr
    assert key_file_run.facts["seen_aiperf"]  # the listing was read while AIPerf ran
    assert key_file_run.facts["listed"] == []
    measured = ResultRow.model_validate_json(
        (key_file_run.out / "checkpoints" / DEFAULT_MODEL_NAME / "result.json").read_bytes()
    )
    assert measured.status == "endpoint-qualified"  # every request carried the key (the server refuses without)


@pytest.mark.parametrize("option", ["--endpoint", "--native-url"])
def test_a_credential_inside_a_url_is_refused_without_being_repeated(
    tmp_path: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "KEYinURL0123456789"
    url = f"http://someone:{secret}@127.0.0.1:9"
    args = ["--endpoint", url] if option == "--endpoint" else ["--endpoint", "http://127.0.0.1:9", "--native-url", url]
    done = run_main(capsys, "qualify", *args, "--model", "m", "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    message = one_message(done)
    assert option in message and "--api-key-env" in message
    assert secret not in done.stdout + done.stderr
    assert not (tmp_path / "out").exists()


# --- 4. one foreign file never breaks a run, and a claim without its evidence is never qualified -------------------


FOREIGN = {
    "a brace": lambda path: path.write_text("{"),
    "another tool's json": lambda path: path.write_text('{"profile": "x", "status": "aiperf-qualified"}'),
    "a fifo": lambda path: os.mkfifo(path),
}


@pytest.mark.e2e
@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_foreign_result_file_is_named_in_the_report_and_the_run_goes_on(
    self_test_run: SharedRun, tmp_path: Path, kind: str
) -> None:
    out = self_test_run.copy(tmp_path / "out")  # the README's self-test, finished (shared_runs.self_test)
    stray = out / "checkpoints" / "x" / "result.json"
    stray.parent.mkdir()
    FOREIGN[kind](stray)
    aiperf, launched = tripwire_aiperf(tmp_path / "tripwire")  # the rows are reused; the report is written again
    done = qualify("--out", str(out), env=dict(self_test_run.env(), TRTMC_VIDEOQA_AIPERF=str(aiperf)), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("(reused)") == 2 and not launched.exists()
    no_traceback(done)
    report = (out / "report.md").read_text()
    assert "Result files that could not be read" in report and "checkpoints/x/result.json" in report
    assert "reference-self-test.synthetic" in report  # the rest is reported
    junit = (out / "junit.xml").read_text()
    assert 'name="checkpoints/x/result.json"' in junit and "could not be read" in junit


def _strip_evidence(row_dir: Path) -> None:
    (row_dir / "aiperf" / "outcome.json").unlink()
    (row_dir / "requests.jsonl").unlink()


def _claim_without_requests(row_dir: Path) -> None:
    raw = json.loads((row_dir / "result.json").read_text())
    raw["requests"] = []
    (row_dir / "result.json").write_text(json.dumps(raw))


@pytest.mark.e2e
@pytest.mark.parametrize("edit", [_strip_evidence, _claim_without_requests])
def test_a_row_claiming_a_status_without_its_evidence_is_unverified(
    self_test_run: SharedRun, tmp_path: Path, edit: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    out = self_test_run.copy(tmp_path / "out")  # the README's self-test, finished (shared_runs.self_test)
    row_dir = out / "checkpoints" / "reference-self-test.synthetic"
    edit(row_dir)
    done = run_main(capsys, "report", str(out))
    assert done.returncode == 0, done.stderr
    report = Report.model_validate_json((out / "report.json").read_text())
    rows = {r.profile: r for r in report.rows}
    claimed = rows["reference-self-test.synthetic"]
    assert claimed.status == "unverified" and "claims endpoint-qualified" in claimed.status_reason
    assert rows["reference-self-test.bigbuckbunny"].status == "endpoint-qualified"  # its evidence is all there
    assert "**unverified**" in (out / "report.md").read_text()
    assert 'message="unverified: claims endpoint-qualified' in (out / "junit.xml").read_text()


# --- 5. injection into Markdown, HTML, XML and the terminal ---------------------------------------------------------

HOSTILE = "evil|cell\nnext line <script>alert(1)</script> `tick` \x1b[31mred\x1b[0m \x07bell"


def _hostile_report() -> Report:
    # A row as a server's text would fill it.
    requests = [RequestRow(session_id="s|1", phase="profiling", question_id="q", clip_id="c", repeat=0, answer=HOSTILE)]
    row = ResultRow(
        profile=HOSTILE,
        status="failed",
        failed_stage="output-check",
        status_reason=f"answers like {HOSTILE}",
        status_evidence=[f"file`{HOSTILE}"],
        requests=requests,
        provenance=Provenance(
            tool_versions={}, workload="synthetic", workload_digest="0" * 64, mode="endpoint", served_by=HOSTILE
        ),
        commands={"aiperf": f"aiperf profile --model '{HOSTILE}'"},
    )
    return Report(
        title=HOSTILE,
        generated_by="t",
        sources=["."],
        reference_self_test=False,
        group=GroupLine(status="endpoint", line=HOSTILE),
        rows=[row],
        counts={"failed": 1},
    )


def _outside_code(markdown: str) -> str:
    """The Markdown with its fenced blocks and inline code spans (which show text as it is) taken out."""
    without_blocks = re.sub(r"^( *)(`{3,})\n.*?^\1\2$", "", markdown, flags=re.M | re.S)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", without_blocks)


def test_markdown_rows_stay_rows_and_carry_no_html_or_controls() -> None:
    from trtmc_videoqa.report.markdown import render_markdown

    text = render_markdown(_hostile_report())
    assert "\x1b" not in text and "\x07" not in text
    assert "<script>" not in _outside_code(text)  # in a code span or block it is text, not HTML
    header = next(line for line in text.splitlines() if line.startswith("| profile |"))
    columns = len(re.findall(r"(?<!\\)\|", header))
    table = [line for line in text.splitlines() if line.startswith("| ") and "profile |" not in line]
    assert table and all(len(re.findall(r"(?<!\\)\|", line)) == columns for line in table)  # one row, its cells
    assert "next line" in text  # the text is there, on the row's line
    fence = next(line.strip() for line in text.splitlines() if line.strip().startswith("```"))
    assert fence != "```" or "```" not in HOSTILE  # a fence longer than any backtick run inside


def test_html_escapes_and_junit_is_valid_xml() -> None:
    from xml.etree import ElementTree

    from trtmc_videoqa.report.html import render_html
    from trtmc_videoqa.report.junit import render_junit

    page = render_html(_hostile_report())
    assert "<script>alert" not in page and "\x1b" not in page and "&lt;script&gt;" in page
    junit = render_junit(_hostile_report())
    root = ElementTree.fromstring(junit.encode())  # ESC or BEL would make this raise
    assert "\x1b" not in junit and root.find("testcase") is not None


def test_the_inventory_of_a_hostile_manifest_keeps_its_table_and_terminal_clean(tmp_path: Path, capsys) -> None:
    import shutil as sh

    tree = tmp_path / "trtmc"
    sh.copytree(Path(__file__).parent / "fixtures" / "trtmc_families", tree)
    manifests = tree / "families" / "vidqa" / "tests" / "manifests"
    data = json.loads((manifests / "vidqa-2b.json").read_text())
    data["name"] = "vidqa|2b\x1b[2J<b>x</b>"
    (manifests / "evil|name\x1b.json").write_text(json.dumps(data))
    done = run_main(capsys, "inventory", "--trtmc", str(tree), "--out", str(tmp_path / "inv"))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr  # printed, never driving the terminal
    text = (tmp_path / "inv" / "inventory.md").read_text()
    assert "\x1b" not in text and "<b>" not in _outside_code(text)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| profile |"))
    table = lines[start : next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))]
    header = table[0]  # the rows' table, up to its end (other tables of the page have columns of their own)
    columns = len(re.findall(r"(?<!\\)\|", header))
    rows = [line for line in table if line.startswith("| ") and "---" not in line]
    assert rows and all(len(re.findall(r"(?<!\\)\|", line)) == columns for line in rows if "profile |" not in line)


def test_an_error_naming_a_hostile_path_prints_no_control_character(tmp_path: Path, capsys) -> None:
    done = run_main(capsys, "probe", str(tmp_path / "clip\x1b[2J\x1b]0;title\x07.mp4"))
    assert done.returncode == 2
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr and "clip" in done.stderr


# --- 6. limits that hold --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--request-timeout", "--aiperf-wall-limit", "--startup-timeout"])
@pytest.mark.parametrize("value", ["nan", "-1", "inf"])
def test_time_limits_refuse_nan_negative_and_infinite_values(
    tmp_path: Path, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_main(capsys, "qualify", "--out", str(tmp_path / "out"), *QUICK, option, value, "--dry-run")
    assert done.returncode == 2, done.stdout
    assert option in one_message(done)
    assert not (tmp_path / "out").exists()


def test_the_capability_check_waits_as_long_as_request_timeout_says_and_says_so(tmp_path: Path) -> None:
    from trtmc_videoqa.serving.capability import check_capability
    from trtmc_videoqa.workloads import builtin_workload

    clip = builtin_workload("synthetic").clip_path("forward")
    # The server answers after 30 s; the check gives up after the 0.5 s it is given. The bound below is a guard
    # against waiting for the answer (or a fixed 120 s), 20 times the limit: never a figure of how fast it is.
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(added_task_ms=30_000))) as slow:
        started = time.monotonic()
        result = check_capability(
            slow.url, DEFAULT_MODEL_NAME, clip, "q?", max_tokens=4, timeout_s=0.5, body_limit=1 << 22
        )
        waited = time.monotonic() - started
    assert not result.accepted and waited < 10  # the limit given, not the server's answer
    assert "within 0.5 s (--request-timeout)" in result.detail and "raise --request-timeout" in result.detail


@pytest.mark.e2e
def test_qualify_passes_request_timeout_to_the_capability_check(tmp_path: Path) -> None:
    with ReferenceServer(ReferenceConfig(faults=FaultKnobs(added_task_ms=4000))) as slow:
        args = ("--endpoint", slow.url, "--model", DEFAULT_MODEL_NAME, "--request-timeout", "1")
        done = qualify(*args, "--out", str(tmp_path / "out"), *QUICK, timeout=120)
    assert done.returncode == 3, done.stderr  # the row failed at capability
    failed = ResultRow.model_validate_json(
        (tmp_path / "out" / "checkpoints" / DEFAULT_MODEL_NAME / "result.json").read_bytes()
    )
    # Stopped by the 1 s limit: with the default limit the server's 4 s answer would pass the check, and AIPerf run
    assert failed.failed_stage == "capability" and "within 1 s (--request-timeout)" in failed.status_reason
    assert not (tmp_path / "out" / "checkpoints" / DEFAULT_MODEL_NAME / "aiperf").exists()


@pytest.mark.timeout(WRITE_HANG_GUARD_S, method="thread")  # reading a FIFO with no writer would block
@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_against_reads_only_a_regular_file(tmp_path: Path, kind: str) -> None:
    against = "/dev/zero" if kind == "/dev/zero" else str(_fifo(tmp_path / "old.json"))
    tree = Path(__file__).parent / "fixtures" / "trtmc_families"
    done = run_main(None, "inventory", "--trtmc", str(tree), "--out", str(tmp_path / "inv"), "--against", against)
    assert done.returncode == 2, done.stderr  # at once: never read forever, never waiting on a writer
    no_traceback(done)
    assert "not a regular file" in one_message(done) and "MemoryError" not in done.stderr


@pytest.mark.parametrize("nested", ["[" * 50_000 + "]" * 50_000, '{"a":' * 50_000 + "1" + "}" * 50_000])
def test_the_reference_server_answers_deeply_nested_json_with_400(nested: str) -> None:

    with ReferenceServer(ReferenceConfig()) as server:
        for route in ("/v1/chat/completions", "/v1/tasks/generate"):
            response = HTTP.post(server.url + route, content=nested, headers={"content-type": "application/json"})
            assert response.status_code == 400, (route, response.text[:200])
            assert "nested too deeply" in response.text


@pytest.mark.parametrize(
    "script",
    [
        "#!{python}\nprint('9.9.9')\n",  # prints a version, under a Python that has aiperf installed
        "#!{python}\nimport sys\nfrom json import dumps\nsys.exit(0)\n",  # runs something else
    ],
)
def test_doctor_refuses_a_script_that_is_not_aiperfs_own(tmp_path: Path, script: str, capsys, monkeypatch) -> None:
    fake = tmp_path / "aiperf"
    fake.write_text(script.format(python=sys.executable))
    fake.chmod(0o755)
    monkeypatch.setenv("TRTMC_VIDEOQA_AIPERF", str(fake))
    done = run_main(capsys, "doctor")
    assert done.returncode == 3  # a required part missing: doctor's verdict
    line = next(line for line in done.stdout.splitlines() if " aiperf " in f" {line} ")
    assert line.startswith("FAIL") and "not aiperf's console script" in line


@pytest.mark.parametrize("broken", ["[e2e_defaults\ninput = ", "\x00\x01 not toml = = ="])
def test_an_invalid_model_toml_is_said_not_taken(tmp_path: Path, broken: str, capsys) -> None:
    tree = tmp_path / "trtmc"
    shutil.copytree(Path(__file__).parent / "fixtures" / "trtmc_e2e", tree)
    (tree / "tests" / "e2e" / "models" / "oldvl" / "MODEL.toml").write_text(broken)
    done = run_main(capsys, "inventory", "--trtmc", str(tree), "--out", str(tmp_path / "inv"))
    assert done.returncode == 0, done.stderr
    inventory = json.loads((tmp_path / "inv" / "inventory.json").read_text())
    assert any(
        "oldvl/MODEL.toml: not valid TOML" in item or "oldvl/MODEL.toml: unreadable" in item
        for item in inventory["lacking"]
    )
    assert "MODEL.toml" in (tmp_path / "inv" / "inventory.md").read_text()
