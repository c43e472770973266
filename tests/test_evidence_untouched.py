"""Issue 26, item 6: the publish step never rewrites the measured evidence after the fact.

The attack: a question ending "(asked as root)" (on GitHub's hosted runners the user is `runner`, an ordinary word)
was rewritten to "asked as <user-or-host>" in aiperf/inputs.jsonl, the raw export and the published workload, so 0
of 8 request_sha values re-computed, the published workload was refused, and answers were rewritten too. Now the
request bodies, the answers, the workloads and execution.jsonl keep their bytes; only the clip references the tool
wrote into its own request plan are mapped; the public check warns (naming file and line) where the user or host
name is a word of workload or server text and fails where it is machine-derived.

Unit tests on small trees; one end-to-end run (AIPerf against the reference endpoint) whose questions end with this
machine's own user name, then every request_sha of the published run re-computes and the published workload loads
and plans again.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from execution_checks import check_execution
from helpers import cli, no_traceback, qualify, row

from trtmc_videoqa.aiperf_qual.execution import request_sha
from trtmc_videoqa.publish.check import PublicSentinels, check_public, scan_tree
from trtmc_videoqa.publish.evidence import is_measured, is_outside_text, map_file_references
from trtmc_videoqa.publish.rewrite import public_map, rewrite_public_files
from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, ReferenceConfig, ReferenceServer
from trtmc_videoqa.workloads import builtin_workload, load_workload
from trtmc_videoqa.workloads.seal import seal_workload_file

USER = "runner"  # the hosted runner's user: an ordinary word of a question
ROW = "checkpoints/p"


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _digests(root: Path, names: list[str]) -> dict[str, str]:
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in names}


@pytest.mark.parametrize(
    ("relative", "measured", "outside"),
    [
        (f"{ROW}/aiperf/inputs.jsonl", True, True),
        (f"{ROW}/aiperf/plan.json", True, True),
        (f"{ROW}/aiperf/export/profile_export_raw.jsonl", True, True),
        (f"{ROW}/aiperf/export/raw_records/record_processor_1.jsonl", True, True),
        (f"{ROW}/aiperf/export/inputs.json", True, True),
        (f"{ROW}/aiperf/export/profile_export.jsonl", True, True),
        (f"{ROW}/aiperf/export.previous/profile_export_raw.jsonl", True, True),
        (f"{ROW}/requests.jsonl", True, True),
        (f"{ROW}/execution.jsonl", True, True),
        ("workload/w/files/workload.json", True, True),
        ("workload/w/files/ATTRIBUTION.md", True, True),
        ("workload/w/sampling.json", False, True),  # the workload's prepared facts: its words, rewritable paths
        (f"{ROW}/capability.json", False, True),
        (f"{ROW}/identity.json", False, True),
        (f"{ROW}/aiperf/export/profile_export_aiperf.json", False, False),  # AIPerf's summary: its config's paths
        (f"{ROW}/aiperf/outcome.json", False, False),
        (f"{ROW}/result.json", False, False),
        (f"{ROW}/command.txt", False, False),
        ("report.md", False, False),
        ("inventory.json", False, False),
    ],
)
def test_which_files_are_measured_evidence_and_which_hold_outside_text(
    relative: str, measured: bool, outside: bool
) -> None:
    assert (is_measured(relative), is_outside_text(relative)) == (measured, outside)


def _tree(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """An output folder as a run leaves it before publishing: a workload outside it, the request plan naming its
    clip by absolute path, a raw export whose question says "(asked as runner)", an answer that says it too, and
    the files the tool composes with this machine's paths."""
    out, source = tmp_path / "out", tmp_path / "src" / "w"
    clip = _write(source, "clip.mp4", "not really a clip")
    question = f"Which way? (asked as {USER})"
    payload = {"messages": [{"role": "user", "content": question}], "model": "m", "max_tokens": 8}
    raw = {"metadata": {"conversation_id": "s0", "x_request_id": "x0", "benchmark_phase": "profiling"}}
    raw |= {"payload": payload, "responses": [{"text": f'{{"choices": [{{"message": {{"content": "{USER}"}}}}]}}'}]}
    sha = request_sha(payload)
    _write(out, f"{ROW}/aiperf/inputs.jsonl", json.dumps({"session_id": "s0", "text": question, "video": str(clip)}))
    _write(out, f"{ROW}/aiperf/plan.json", json.dumps({"requests": [{"clip_path": str(clip), "text": question}]}))
    _write(out, f"{ROW}/aiperf/export/profile_export_raw.jsonl", json.dumps(raw) + "\n")
    _write(out, f"{ROW}/requests.jsonl", json.dumps({"session_id": "s0", "answer": f"asked as {USER}"}) + "\n")
    _write(out, f"{ROW}/execution.jsonl", json.dumps({"records": [{"request_sha": sha}]}) + "\n")
    _write(out, "workload/w/files/workload.json", json.dumps({"questions": [{"prompt": question}]}))
    _write(out, f"{ROW}/command.txt", f"# aiperf\naiperf profile --input-file {out}/{ROW}/aiperf/inputs.jsonl\n")
    _write(out, f"{ROW}/result.json", json.dumps({"answer": f"asked as {USER}", "log": f"{out}/x"}, indent=2))
    return out, source, {"sha": sha, "clip": str(clip), "question": question}


MEASURED = [
    f"{ROW}/aiperf/export/profile_export_raw.jsonl",
    f"{ROW}/requests.jsonl",
    f"{ROW}/execution.jsonl",
    "workload/w/files/workload.json",
]


def test_publishing_leaves_the_measured_evidence_byte_for_byte(tmp_path: Path) -> None:
    out, source, facts = _tree(tmp_path)
    before = _digests(out, MEASURED)
    rewrite_public_files(out, public_map(out, workloads={"w": source}))
    assert _digests(out, MEASURED) == before
    raw = json.loads((out / MEASURED[0]).read_text())
    assert request_sha(raw["payload"]) == facts["sha"]  # the request_sha re-computes from the published export
    # The files the tool composes are made portable: paths, never the question's or the answer's words.
    assert (out / ROW / "command.txt").read_text().endswith(f"--input-file {ROW}/aiperf/inputs.jsonl\n")
    result = json.loads((out / ROW / "result.json").read_text())
    assert result == {"answer": f"asked as {USER}", "log": "x"}


def test_only_the_clip_references_of_the_request_plan_are_mapped(tmp_path: Path) -> None:
    out, source, facts = _tree(tmp_path)
    rewrite_public_files(out, public_map(out, workloads={"w": source}))
    line = json.loads((out / ROW / "aiperf" / "inputs.jsonl").read_text())
    assert line == {"session_id": "s0", "text": facts["question"], "video": "workload/w/files/clip.mp4"}
    plan = json.loads((out / ROW / "aiperf" / "plan.json").read_text())
    assert plan == {"requests": [{"clip_path": "workload/w/files/clip.mp4", "text": facts["question"]}]}
    text = '{"text": "see /abs/x", "video": "/abs/x", "clip_path": "http://127.0.0.1:1/c.mp4"}'
    mapped = map_file_references(text, lambda value: value.replace("/abs/x", "rel/x"))
    assert mapped == '{"text": "see /abs/x", "video": "rel/x", "clip_path": "http://127.0.0.1:1/c.mp4"}'


def _sentinels(out: Path) -> PublicSentinels:
    return PublicSentinels(paths=[str(out)], words=[USER], secrets=[])


def test_the_name_as_a_word_of_workload_or_server_text_warns_naming_the_file(tmp_path: Path) -> None:
    out, source, _ = _tree(tmp_path)
    rewrite_public_files(out, public_map(out, workloads={"w": source}))
    said: list[str] = []
    assert check_public(out, _sentinels(out), warn=said.append) > 0  # passes
    assert len(said) == 1
    for place in (f"{ROW}/requests.jsonl:1", f"{ROW}/aiperf/inputs.jsonl:1", "workload/w/files/workload.json:1"):
        assert place in said[0]
    assert f"{ROW}/result.json:2" in said[0]  # the tool's copy of the answer: the same token as the answer's


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (f"ssh {USER}@build-7 uptime", "user@host"),
        (f"cache in /home/{USER}/.cache/x", "a path"),
        (f"ran by {USER} today", "a bare name no outside text holds"),
    ],
)
def test_the_name_where_it_is_machine_derived_fails(tmp_path: Path, text: str, why: str) -> None:
    out, source, _ = _tree(tmp_path)
    _write(out, f"{ROW}/command.txt", f"# note\n{text}\n")
    _write(out, f"{ROW}/requests.jsonl", json.dumps({"answer": "B"}) + "\n")  # no outside text names the user
    _write(out, "workload/w/files/workload.json", "{}")
    (out / ROW / "aiperf" / "inputs.jsonl").write_text("{}")
    (out / ROW / "aiperf" / "plan.json").write_text("{}")
    (out / ROW / "aiperf" / "export" / "profile_export_raw.jsonl").write_text("{}")
    (out / ROW / "result.json").write_text("{}")
    scan = scan_tree(out, _sentinels(out))
    named = [(hit.file, hit.line) for hit in scan.hits if hit.kind == "user-or-host"]
    assert named == [(f"{ROW}/command.txt", 2)], why


def test_user_at_host_stays_a_failure_even_when_a_question_says_the_name(tmp_path: Path) -> None:
    out, source, _ = _tree(tmp_path)
    _write(out, f"{ROW}/command.txt", f"# note\nfetched by {USER}@build-7\n")
    scan = scan_tree(out, _sentinels(out))
    assert [(hit.file, hit.kind) for hit in scan.hits if hit.kind == "user-or-host"] == [
        (f"{ROW}/command.txt", "user-or-host")
    ]
    assert {hit.file for hit in scan.warnings} >= {f"{ROW}/requests.jsonl", "workload/w/files/workload.json"}


# --- end to end: one AIPerf run -----------------------------------------------------------------------------------


def _asked_as(tmp: Path, user: str) -> Path:
    """A copy of the synthetic workload whose every question ends "(asked as USER)", sealed; its folder."""
    copy = tmp / "asked-as"
    shutil.copytree(builtin_workload("synthetic").root, copy)
    raw = json.loads((copy / "workload.json").read_text())
    raw["name"] = "asked-as"
    for question in raw["questions"]:
        question["prompt"] = f"{question['prompt']} (asked as {user})"
    (copy / "workload.json").write_text(json.dumps(raw))
    seal_workload_file(copy)
    return copy


@pytest.mark.e2e
def test_a_published_run_whose_questions_name_the_user_keeps_every_request_sha_and_its_workload(
    tmp_path: Path,
) -> None:
    user = getpass.getuser()  # this machine's own user name: root in CI, runner on a hosted runner
    workload = _asked_as(tmp_path, user)
    out = tmp_path / "out"
    with ReferenceServer(ReferenceConfig()) as server:
        done = qualify(
            "--endpoint", server.url, "--model", DEFAULT_MODEL_NAME, "--workload", str(workload),
            "--repeats", "1", "--warmup", "1", "--out", str(out),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    no_traceback(done)
    profile = next(p.name for p in (out / "checkpoints").iterdir())
    measured = row(out, profile)
    row_dir = out / "checkpoints" / profile
    assert measured.status == "endpoint-qualified", measured.status_reason
    # The evidence says what was asked, as it was asked.
    asked = f"(asked as {user})"
    for name in ("aiperf/inputs.jsonl", "aiperf/export/profile_export_raw.jsonl", "aiperf/plan.json"):
        assert asked in (row_dir / name).read_text(), name
    assert asked in (out / "workload" / "asked-as" / "files" / "workload.json").read_text()
    # Every request_sha re-computes from the published raw export (tests/execution_checks.py).
    items = check_execution(row_dir, measured)
    assert sum(len(item.get("records", [])) for item in items) == measured.profiling_requests_planned > 0
    # The public check passes, and where the name is a word of the questions it says so.
    checked = cli("report", "--check-public", str(out))
    assert checked.returncode == 0, checked.stderr
    if len(user) >= 3:
        assert "workload or server text" in checked.stderr and "aiperf/inputs.jsonl" in checked.stderr
    # The published workload loads (its digest and clips hold) and qualify plans it again.
    published = out / "workload" / "asked-as" / "files"
    assert load_workload(published).digest == load_workload(workload).digest
    again = cli(
        "qualify", "--dry-run", "--endpoint", "http://127.0.0.1:9", "--model", "m", "--workload", str(published)
    )
    assert again.returncode == 0, again.stderr
