"""Reports rebuilt from artifacts alone, merged across runs, in every format."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from helpers import endpoint_provenance, run_main

from trtmc_videoqa.report import build_report
from trtmc_videoqa.report.build import MEASURED
from trtmc_videoqa.report.group import group_line
from trtmc_videoqa.report.html import render_html
from trtmc_videoqa.report.junit import render_junit
from trtmc_videoqa.report.markdown import render_markdown, render_step_summary
from trtmc_videoqa.results import (
    AnswerExample,
    IdentityAnswer,
    IdentityCheck,
    IdentityPair,
    LatencyStats,
    OutputCheck,
    Provenance,
    Report,
    RequestRow,
    ResultRow,
    StageResult,
)


def _row(profile: str, status: str, endpoint: str, **extra) -> ResultRow:
    provenance = endpoint_provenance(endpoint)
    requests = [
        RequestRow(
            session_id=f"q.forward.r{i:02d}",
            phase="profiling",
            question_id="q",
            clip_id="forward",
            repeat=i,
            client_latency_ms=10.0 + i,
            server_task_ms=8.0 + i,
            answer="A",
            expected="A",
            grade="correct",
        )
        for i in range(3)
    ]
    return ResultRow(
        profile=profile,
        status=status,
        status_reason=f"{status} because",
        provenance=provenance,
        requests=requests,
        client_latency=LatencyStats(count=3, p50_ms=11.0),
        **extra,
    )


def _write(out: Path, rows: list[ResultRow]) -> Path:
    """Each row as a run leaves it: result.json with the evidence a measured row's folder holds beside it."""
    for row in rows:
        path = out / "checkpoints" / row.profile / "result.json"
        (path.parent / "aiperf").mkdir(parents=True)
        path.write_text(row.model_dump_json())
        (path.parent / "aiperf" / "outcome.json").write_text('{"exit_code": 0, "timed_out": false}\n')
        (path.parent / "requests.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in row.requests))
    return out


def test_two_runs_merge_side_by_side_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _write(
        tmp_path / "a",
        [_row("ckpt", "endpoint-qualified", "http://127.0.0.1:1"), _row("gap", "unsupported", "http://127.0.0.1:1")],
    )
    second = _write(
        tmp_path / "b",
        [
            _row("ckpt", "failed", "http://127.0.0.1:2", failed_stage="aiperf"),
            _row("nogpu", "blocked", "http://127.0.0.1:2"),
        ],
    )
    summary = tmp_path / "summary.md"
    merged = tmp_path / "merged"
    done = run_main(
        capsys,
        "report",
        str(first),
        str(second),
        "--out",
        str(merged),
        env={"GITHUB_STEP_SUMMARY": str(summary), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    report = Report.model_validate_json((merged / "report.json").read_bytes())
    assert [(r.profile, r.status) for r in report.rows] == [
        ("ckpt", "endpoint-qualified"),
        ("ckpt", "failed"),
        ("gap", "unsupported"),
        ("nogpu", "blocked"),
    ]
    assert report.counts == {"blocked": 1, "endpoint-qualified": 1, "failed": 1, "unsupported": 1}
    assert not report.reference_self_test
    # aiperf_qual's verdicts, set by the report from each row's status (the rows were written without them), and the
    # group's verdict: the worst, every row listed under its own in aiperf_qual's severity order
    assert [r.aiperf_qual_verdict for r in report.rows] == ["acc-inconclusive", "error", "not-covered", "not-run"]
    assert report.aiperf_qual.verdict == "error"
    assert list(report.aiperf_qual.rows) == ["error", "not-run", "not-covered", "acc-inconclusive"]
    markdown = (merged / "report.md").read_text()
    assert "**aiperf_qual verdict of the group: error (every row; no TRTMC row in this report" in markdown
    assert "| error | ckpt |" in markdown and "<th>aiperf_qual verdict</th>" in (merged / "report.html").read_text()
    assert "- aiperf_qual verdict: error" in markdown  # each row's own, in its section
    suite = ET.parse(merged / "junit.xml").getroot()
    # four rows and the group's testcase (an endpoint run: it passes, saying what the run is)
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("5", "1", "2")
    failure = suite.find("testcase/failure")
    assert failure is not None and "failed at aiperf" in failure.get("message")
    assert report.group.status == "endpoint" and "no TRTMC model was qualified" in report.group.line
    skipped = [
        case.find("skipped").get("message") for case in suite.iter("testcase") if case.find("skipped") is not None
    ]
    assert any(m.startswith("unsupported: unsupported because") for m in skipped)
    markdown = (merged / "report.md").read_text()
    # the two ckpt rows are told apart by the server each one measured: short in the table, in full in the section
    assert "| ckpt | **failed** | aiperf | some server at 127.0.0.1:2 | – |" in markdown
    assert "| ckpt | **endpoint-qualified** | – | some server at 127.0.0.1:1 | – |" in markdown
    assert "- Served by: some server at http://127.0.0.1:2" in markdown
    html = (merged / "report.html").read_text()
    assert html.count('<svg class="distribution"') == 4 and html.count('<svg class="per-request"') == 4
    assert "<script" not in html
    assert '<td title="some server at http://127.0.0.1:2">some server at 127.0.0.1:2</td>' in html
    assert "Served by: some server at http://127.0.0.1:2</p>" in html
    step_summary = summary.read_text()
    assert "| ckpt | **endpoint-qualified** | – | some server at 127.0.0.1:1 | – |" in step_summary
    assert (
        step_summary.count("<details><summary>") == 4 and "- Status: **failed** (failed stage: aiperf)" in step_summary
    )


def test_report_of_a_directory_without_results_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = run_main(capsys, "report", str(tmp_path))
    assert done.returncode == 2 and "holds no checkpoints/*/result.json" in done.stderr
    bad = tmp_path / "checkpoints" / "x" / "result.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"profile": "x"}))
    done = run_main(capsys, "report", str(tmp_path))  # a file that is no row is named in the report, not a stop
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert "checkpoints/x/result.json" in (tmp_path / "report.md").read_text()


# --- the group line, models apart from variants, and the row details ------------------------------------------------


def _trtmc(profile: str, status: str, *, verdict: str = "temporal-video-qa", normal: bool | None = True, **extra):
    """A row of a TRTMC run; an unsupported row carries no provenance, as the inventory's unsupported rows do."""
    provenance = Provenance(tool_versions={}, workload="synthetic", workload_digest="0" * 64, mode="trtmc")
    return ResultRow(
        profile=profile,
        family="vidqa",
        checkpoint=f"example/{profile}",
        revision="1" * 40,
        verdict=verdict,
        normal_profile=normal,
        status=status,
        status_reason=extra.pop("status_reason", f"{status} because"),
        # a measured row carries its requests (and, written out, the evidence files beside it)
        requests=_row(profile, status, "http://127.0.0.1:1").requests if status in MEASURED else [],
        **({"provenance": None if status == "unsupported" else provenance} | extra),
    )


def _gap(profile: str, reason: str, evidence: str) -> ResultRow:
    return _trtmc(profile, "unsupported", verdict="image-only", status_reason=reason, status_evidence=[evidence])


def _one_row_report(row: ResultRow) -> Report:
    """A report of this row alone, rendered without any folder."""
    return Report(
        title="t", generated_by="g", sources=[], reference_self_test=False, group=group_line([row]), rows=[row],
        counts={},
    )  # fmt: skip


def _report(tmp_path: Path, rows: list[ResultRow]) -> Report:
    return build_report([_write(tmp_path / "run", rows)])


def _junit_group(report: Report) -> ET.Element:
    suite = ET.fromstring(render_junit(report))
    cases = [case for case in suite.iter("testcase") if case.get("name") == "group"]
    assert len(cases) == 1 and cases[0].get("classname") == "trtmc-videoqa.group"
    assert suite.get("tests") == str(len(report.rows) + 1)
    return cases[0]


def test_a_group_without_capability_is_blocked_with_the_most_common_gap_and_its_evidence(tmp_path: Path) -> None:
    one_image = "answers about one image per request"
    rows = [
        _gap("vlm-a", one_image, "families/vlm/tests/manifests/vlm-a.json:6"),
        _gap("vlm-b", one_image, "families/vlm/tests/manifests/vlm-b.json:7"),
        _gap("gen", "generates video", "families/gen/tests/manifests/gen.json:3"),
        _trtmc("outside", "unsupported", verdict="text-or-speech", in_group=False),
    ]
    report = _report(tmp_path, rows)
    assert report.group.status == "blocked"
    assert report.group.line.startswith("Group: blocked: 3 in-group rows, 0 with an existing native temporal video QA")
    assert one_image in report.group.line and "families/vlm/tests/manifests/vlm-a.json:6" in report.group.line
    assert "2 of 3 unsupported" in report.group.line
    case = _junit_group(report)
    assert case.find("skipped").get("message") == report.group.line
    suite = ET.fromstring(render_junit(report))
    assert suite.get("skipped") == "5"  # four unsupported rows and the group


def test_a_capable_normal_profile_that_failed_fails_the_group(tmp_path: Path) -> None:
    rows = [
        _trtmc("vidqa-2b", "failed", failed_stage="output-check", status_reason="8 of 8 answers unparseable"),
        _trtmc("other-7b", "aiperf-qualified"),
        _trtmc("vidqa-2b-fp8", "failed", normal=False, failed_stage="aiperf"),  # a variant never fails the group
    ]
    report = _report(tmp_path, rows)
    assert report.group.status == "failed"
    assert report.group.line == (
        "Group: failed: 1 of 2 capable checkpoint(s) failed (vidqa-2b at output-check: 8 of 8 answers unparseable)"
    )
    case = _junit_group(report)
    assert case.find("failure").get("message") == report.group.line
    assert ET.fromstring(render_junit(report)).get("failures") == "3"  # two failed rows and the group


def test_every_capable_normal_profile_qualified_qualifies_the_group(tmp_path: Path) -> None:
    rows = [
        _trtmc("vidqa-2b", "aiperf-qualified"),
        _trtmc("other-7b", "aiperf-qualified"),
        _trtmc("vidqa-2b-native", "planned", normal=False),
        _gap("vlm-3b", "answers about one image per request", "families/vlm/tests/manifests/vlm-3b.json:6"),
    ]
    report = _report(tmp_path, rows)
    assert report.group.status == "qualified"
    assert report.group.line == "Group: qualified: every capable checkpoint's normal profile (2) is aiperf-qualified"
    case = _junit_group(report)
    assert case.find("skipped") is None and case.find("failure") is None
    # models and variants are counted apart, as the inventory counts them; counts stay every row by status
    assert report.models == {"aiperf-qualified": 2, "unsupported": 1}
    assert report.variants == {"planned": 1}
    assert report.counts == {"aiperf-qualified": 2, "planned": 1, "unsupported": 1}
    markdown = render_markdown(report)
    assert (
        "Counts: models aiperf-qualified 2, unsupported 1; variants planned 1; all rows aiperf-qualified 2" in markdown
    )
    assert "Counts: models aiperf-qualified 2" in render_html(report)


def test_a_capable_profile_short_of_qualified_blocks_the_group_and_is_named(tmp_path: Path) -> None:
    rows = [
        _trtmc("vidqa-2b", "aiperf-qualified"),
        _trtmc("other-7b", "blocked", status_reason="no GPU on this machine"),
        _trtmc("tiny", "planned", normal=None, provenance=None),  # an old row without a normal-profile answer
    ]
    group = group_line(rows)
    assert group.status == "blocked"
    assert group.line == (
        "Group: blocked: 1 of 2 capable checkpoint(s) not aiperf-qualified: other-7b (blocked: no GPU on this machine)"
    )
    report = _report(tmp_path, rows)
    assert report.models == {"aiperf-qualified": 1, "blocked": 1} and report.variants == {}
    assert report.counts == {"aiperf-qualified": 1, "blocked": 1, "planned": 1}


def test_the_self_test_says_what_it_is_and_never_qualified(tmp_path: Path) -> None:
    rows = [
        _row("reference-self-test.synthetic", "endpoint-qualified", "http://127.0.0.1:1", reference_self_test=True),
        _row("reference-self-test.bigbuckbunny", "endpoint-qualified", "http://127.0.0.1:1", reference_self_test=True),
    ]
    report = _report(tmp_path, rows)
    assert report.group.status == "reference-self-test"
    assert report.group.line == (
        "Reference self-test: the tool checked against a test double; no TRTMC model was qualified; "
        "2 row(s), statuses: endpoint-qualified 2"
    )
    case = _junit_group(report)
    assert case.find("system-out").text == report.group.line
    assert case.find("skipped") is None and case.find("failure") is None
    assert report.models == report.variants == {}  # no TRTMC checkpoint behind a test double
    assert "qualified: every" not in render_markdown(report)


def test_an_endpoint_run_says_what_it_is_and_a_mixed_report_counts_only_trtmc_rows(tmp_path: Path) -> None:
    endpoint = [_row("served", "endpoint-qualified", "http://127.0.0.1:1"), _row("x", "failed", "http://127.0.0.1:1")]
    group = group_line(endpoint)
    assert group.status == "endpoint"
    assert group.line == (
        "Endpoint run: 2 row(s) of a server this tool did not build (statuses endpoint-qualified 1, failed 1); "
        "no TRTMC model was qualified"
    )
    case = _junit_group(_report(tmp_path, endpoint))
    assert case.find("system-out").text == group.line and case.find("failure") is None
    mixed = group_line([*endpoint, _trtmc("vidqa-2b", "aiperf-qualified")])
    assert mixed.status == "qualified"
    assert mixed.line.endswith("; plus 2 self-test/endpoint row(s), not counted")


def test_every_report_opens_with_the_group_line(tmp_path: Path) -> None:
    report = _report(tmp_path, [_trtmc("vidqa-2b", "blocked", status_reason="no GPU")])
    line = report.group.line
    markdown = render_markdown(report).splitlines()
    assert markdown[0].startswith("# ") and markdown[2] == f"**{line}**"
    summary = render_step_summary(report).splitlines()
    assert summary[0].startswith("## ") and summary[2] == f"**{line}**"
    assert markdown[4].startswith("Counts: ") and markdown[6].startswith("| profile | status | failed stage |")
    html = render_html(report)
    assert html.index(line) < html.index("Counts: ") < html.index('<table class="summary">') < html.index("<h2>")
    assert json.loads(report.model_dump_json())["group"] == {"status": "blocked", "line": line}


def _ran(status: str = "endpoint-qualified", **extra) -> ResultRow:
    stages = [StageResult(name="aiperf", status="passed"), StageResult(name="timing", status="skipped")]
    return _row("served", status, "http://127.0.0.1:1", stages=stages, **extra)


def test_a_task_time_the_server_did_not_report_is_said_and_client_latency_stands_alone() -> None:
    row = _ran(timing_scope="not reported by this server")
    report = _one_row_report(row)
    markdown = render_markdown(report)
    assert "- server task time: not reported by this server; client latency stands alone" in markdown
    assert "Server task time (`" not in markdown
    assert "server task time: not reported by this server" in render_html(report)
    timed = _ran(
        server_task_time=LatencyStats(count=3, mean_ms=9.0, p50_ms=9.0),
        task_time_field="task_ms",
        timing_scope="public_task_call_wall",
    )
    report = report.model_copy(update={"rows": [timed]})
    markdown = render_markdown(report)
    assert "- Server task time (`task_ms`, public_task_call_wall): mean 9.0 ms, p50 9.0" in markdown
    assert "not reported by this server" not in markdown


def _pair(question: str, chat: str, native: str) -> IdentityPair:
    return IdentityPair(
        question_id=question,
        clip_id="forward",
        chat=IdentityAnswer(route="POST /v1/chat/completions", request_id=f"chat-{question}", answer=chat),
        native=IdentityAnswer(route="POST /v1/tasks/generate", request_id=f"native-{question}", answer=native),
        verdict="same" if chat == native else "different",
    )


def test_identity_is_shown_as_it_is_and_not_applicable_is_never_a_pass() -> None:
    reason = "no native route named (--native-url)"
    row = _ran(identity=IdentityCheck(verdict="not-applicable", reason=reason))
    report = _one_row_report(row)
    markdown = render_markdown(report)
    assert f"identity: not-applicable ({reason}); not a pass" in markdown
    table_row = next(line for line in markdown.splitlines() if line.startswith("| served |"))
    assert "held" not in table_row and "passed" not in table_row  # the verdict is in the row's section, as it is
    html = render_html(report)
    assert f"identity: not-applicable ({reason}); not a pass" in html
    drift = _ran(
        identity=IdentityCheck(
            verdict="differs",
            reason="1 of 2 pairs differ",
            native_route="POST /v1/tasks/generate",
            pairs=[_pair("q1", "A", "A"), _pair("q2", "B", "C because")],
        )
    )
    report = report.model_copy(update={"rows": [drift]})
    markdown = render_markdown(report)
    assert "identity: differs (1 of 2 pairs differ)" in markdown
    assert "Native route: `POST /v1/tasks/generate`" in markdown and "Pairs: 2 (same 1, different 1)" in markdown
    assert "First differing pair (question q2, clip forward, different): chat `B`" in markdown
    assert "native `C because`" in markdown
    html = render_html(report)
    assert "<th>chat answer</th><th>native answer</th>" in html and "C because" in html and "chat-q1" in html


def test_output_check_counts_and_examples_are_shown() -> None:
    examples = [
        AnswerExample(
            session_id=f"q{i}.forward.r00", question_id=f"q{i}", clip_id="forward", outcome=outcome, answer=answer
        )
        for i, (outcome, answer) in enumerate(
            [("unparseable", "zebra | banana"), ("cut-off", "B because the"), ("resolved", "A")]
        )
    ]
    check = OutputCheck(
        passed=False, checked=8, by_outcome={"resolved": 6, "unparseable": 1, "cut-off": 1}, examples=examples
    )
    row = _ran(status="failed", failed_stage="output-check", output_check=check)
    report = _one_row_report(row)
    markdown = render_markdown(report)
    assert "- Output check: failed, 8 answer(s) checked: resolved 6, unparseable 1, cut-off 1" in markdown
    assert "  - unparseable: `q0.forward.r00` (question q0, clip forward): `zebra | banana`" in markdown
    assert "`B because the`" in markdown and "  - resolved: `q2.forward.r00`" in markdown
    table_row = next(line for line in markdown.splitlines() if line.startswith("| served |"))
    assert "| **failed** | output-check |" in table_row  # the counts are in the row's section, above
    html = render_html(report)
    assert "zebra | banana" in html and "<th>outcome</th>" in html
    assert "Output check: failed, 8 answer(s) checked: resolved 6, unparseable 1, cut-off 1" in html
    declared = check.model_copy(update={"passed": True, "declared_no_answer": "'cannot tell' on a real clip"})
    report = report.model_copy(update={"rows": [_ran(output_check=declared)]})
    assert "Declared no-answer (the run's own plan): 'cannot tell' on a real clip" in render_markdown(report)


def test_row_details_say_normal_profile_or_variant_and_the_profile_gap(tmp_path: Path) -> None:
    rows = [
        _trtmc("vidqa-2b", "aiperf-qualified"),
        _trtmc("vidqa-2b-tp2", "planned", normal=False, variant_kinds=["tp"]),
        _trtmc(
            "olddiff-video-l0",
            "unsupported",
            verdict="video-generation",
            normal=False,
            variant_kinds=["l0"],
            profile_gap="no full-model profile in this checkout",
        ),
    ]
    report = _report(tmp_path, rows)
    markdown = render_markdown(report)
    assert "- Profile: normal profile of its checkpoint (example/vidqa-2b@111111111111), counted as a model" in markdown
    assert "- Profile: variant of its checkpoint: not counted as a model; variant kinds: tp" in markdown
    assert "- Profile gap: no full-model profile in this checkout" in markdown
    html = render_html(report)
    assert "variant of its checkpoint: not counted as a model" in html and "Profile gap: no full-model" in html


# --- at a glance: the compact table, the question grid, the latency distribution ------------------------------------


def _asked(question: str, clip: str, repeat: int, answer: str, expected: str, grade: str) -> RequestRow:
    return RequestRow(
        session_id=f"{question}.{clip}.r{repeat:02d}",
        phase="profiling",
        question_id=question,
        clip_id=clip,
        repeat=repeat,
        client_latency_ms=40.0 + 7 * repeat,
        server_task_ms=30.0 + 5 * repeat,
        answer=answer,
        expected=expected,
        grade=grade,
    )


def _time_blind() -> ResultRow:
    """A model that ignores time: right on the forward clip, the same letter (wrong) on the reversed one; one
    question it gets right both ways, one request that failed."""
    requests = [
        *(_asked("direction", "forward", r, "A", "A", "correct") for r in range(3)),
        *(_asked("direction", "reversed", r, "A", "B", "wrong") for r in range(3)),
        *(
            _asked("colour", clip, r, letter, letter, "correct")
            for r in range(3)
            for clip, letter in (("forward", "B"), ("reversed", "C"))
        ),
    ]
    requests.append(_asked("first", "forward", 0, "The square, I think, moves left", "A", "unparseable"))
    requests.append(
        _asked("first", "reversed", 0, "", "B", "").model_copy(
            update={"error": "HTTP 500", "http_status": 500, "expected": None, "grade": None}
        )
    )
    long_profile = "vidqa-" + "x" * 90
    served = _row(long_profile, "endpoint-qualified", "http://user:secret@long-host-name.example.org:8000/v1")
    return served.model_copy(
        update=dict(
            requests=requests,
            server_task_time=LatencyStats(count=9, p50_ms=35.0, p90_ms=40.0),
            client_latency=LatencyStats(count=9, p50_ms=47.0, p90_ms=54.0),
            status_reason="complete AIPerf run; timing: joined (for all 9; by id); output-check: 8 of 9 resolved",
        )
    )


def test_the_questions_show_as_a_grid_a_time_blind_model_right_forward_and_wrong_reversed() -> None:
    from trtmc_videoqa.report.grid import question_grid

    row = _time_blind()
    grid = question_grid(row)
    assert grid.clips == ("forward", "reversed") and [line.question_id for line in grid.lines] == [
        "direction",
        "colour",
        "first",
    ]
    assert (grid.both.right, grid.both.pairs) == (3, 7)  # colour's three repeats; direction 0 of 3; first 0 of 1
    report = _one_row_report(row)
    markdown = render_markdown(report)
    assert "| direction | ✓ A ×3 · accepted A | ✗ A ×3 · accepted B | ✗ 0/3 |" in markdown
    assert "| colour | ✓ B ×3 · accepted B | ✓ C ×3 · accepted C | ✓ 3/3 |" in markdown
    assert "| first | ? The squar… · accepted A | ! HTTP 500 | ✗ 0/1 |" in markdown
    table_row = next(line for line in markdown.splitlines() if line.startswith("| vidqa-"))
    assert table_row.endswith("| 3/7 |")
    html = render_html(report)
    assert '<table class="grid">' in html and '<span class="wrong">✗ A ×3</span>' in html
    assert '<span class="correct">✓ A ×3</span> <span class="accepted">accepted A</span>' in html
    assert 'title="r00: A (wrong)\nr01: A (wrong)\nr02: A (wrong)"' in html  # every repeat's answer on hover


def test_the_summary_is_short_and_the_stage_story_moves_to_the_rows_section() -> None:
    row = _time_blind()
    report = _one_row_report(row)
    markdown = render_markdown(report)
    cells = [
        cell.strip()
        for line in markdown.splitlines()
        if line.startswith("|") and not set(line) <= set("|-: ")
        for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]
    ]
    assert max(len(cell) for cell in cells) <= 80
    table_row = next(line for line in markdown.splitlines() if line.startswith("| vidqa-"))
    assert "secret" not in table_row and "long-host-name.example.org:8000" in table_row  # no user, no scheme
    assert "x" * 90 not in table_row and f"### vidqa-{'x' * 90}" in markdown  # shortened; whole in its section
    # the reason a part a line (a `;` inside brackets is not a boundary), the rest folded in <details>
    assert "  - timing: joined (for all 9; by id)\n  - output-check: 8 of 9 resolved" in markdown
    assert "<details><summary>Stages, checks, provenance and commands</summary>\n\n" in markdown
    html = render_html(report)
    assert "<li>timing: joined (for all 9; by id)</li><li>output-check: 8 of 9 resolved</li>" in html
    summary = html[html.index('<table class="summary">') : html.index("</table>")]
    assert f'title="vidqa-{"x" * 90}"' in summary and "complete AIPerf run" not in summary


def test_latency_is_a_distribution_in_the_page_and_percentiles_in_the_markdown() -> None:
    row = _time_blind()
    report = _one_row_report(row)
    markdown = render_markdown(report)
    assert "  - client end-to-end (AIPerf): p50 47.0 ms, p90 54.0 ms, p99 – (needs n≥100), n=9" in markdown
    assert "  - server task time: p50 35.0 ms, p90 40.0 ms, p99 – (needs n≥100), n=9" in markdown
    html = render_html(report)
    svg = html[html.index('<svg class="distribution"') : html.index("</svg>", html.index('<svg class="distribution"'))]
    assert svg.count("<path ") == 2 and svg.count("<circle ") == 4  # two CDFs; p50 and p90 on each (no p99)
    assert "client end-to-end p50: 47.0 ms" in svg and "server task time p90: 40.0 ms" in svg
    untimed = row.model_copy(update={"server_task_time": None, "requests": [
        r.model_copy(update={"server_task_ms": None}) for r in row.requests
    ]})  # fmt: skip
    html = render_html(report.model_copy(update={"rows": [untimed]}))
    assert "server task time: not reported" in html and "server task time: not reported by this server" in html


@pytest.mark.timeout(120)  # a hang guard: Infinity looped forever in the latency plot's axis
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_a_hand_made_row_with_a_non_finite_number_is_named_not_drawn(tmp_path: Path, value: str) -> None:
    """`report` on a row whose client latency is no finite number: that row is named unreadable, with the field,
    the other rows are reported, and the command exits 0 with every format written."""
    out = _write(
        tmp_path / "run", [_row("good", "endpoint-qualified", "http://127.0.0.1:1"), _row("bad", "failed", "u")]
    )
    bad = out / "checkpoints" / "bad" / "result.json"
    bad.write_text(bad.read_text().replace('"client_latency_ms":10.0', f'"client_latency_ms":{value}', 1))
    assert value in bad.read_text()
    done = run_main(None, "report", str(out), "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [row["profile"] for row in report["rows"]] == ["good"]
    (unreadable,) = report["unreadable"]
    assert unreadable["path"] == "checkpoints/bad/result.json"
    assert unreadable["error"] == "requests.0.client_latency_ms: Input should be a finite number"
    assert "checkpoints/bad/result.json" in (tmp_path / "report" / "report.md").read_text()
    assert (tmp_path / "report" / "report.html").is_file()


def test_values_are_made_public_before_any_format_escapes_them(tmp_path: Path) -> None:
    from trtmc_videoqa.report import write_report
    from trtmc_videoqa.results import GroupLine, Report, ResultRow

    path = "/data/q&x'y[1]/out"
    row = ResultRow(profile="p", status="failed", status_reason=f"plan: nothing at {path}/checkpoints")
    report = Report(
        title="t",
        generated_by="g",
        sources=[path],
        reference_self_test=False,
        rows=[row],
        counts={"failed": 1},
        group=GroupLine(status="failed", line="Group: failed"),
    )
    write_report(report, tmp_path, public=lambda text: text.replace(path, "$OUT"))
    for name in ("report.md", "report.html", "junit.xml", "report.json"):
        text = (tmp_path / name).read_text()
        assert "q&" not in text and "y[1]" not in text and "y\\\\[1" not in text, name  # no rendering of it
        assert "$OUT" in text, name
    assert json.loads((tmp_path / "report.json").read_text())["values_made_public"] == 2
