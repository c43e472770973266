"""Reports rebuilt from artifacts alone, merged across runs, in every format."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

from helpers import cli

from trtmc_videoqa.results import LatencyStats, Provenance, Report, RequestRow, ResultRow


def _row(profile: str, status: str, endpoint: str, **extra) -> ResultRow:
    provenance = Provenance(
        tool_versions={},
        workload="synthetic",
        workload_digest="0" * 64,
        endpoint=endpoint,
        mode="endpoint",
        served_by="some server",
    )
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
    for row in rows:
        path = out / "checkpoints" / row.profile / "result.json"
        path.parent.mkdir(parents=True)
        path.write_text(row.model_dump_json())
    return out


def test_two_runs_merge_side_by_side_in_every_format(tmp_path: Path) -> None:
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
    done = cli(
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
    suite = ET.parse(merged / "junit.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "2")
    failure = suite.find("testcase/failure")
    assert failure is not None and "failed at aiperf" in failure.get("message")
    skipped = [
        case.find("skipped").get("message") for case in suite.iter("testcase") if case.find("skipped") is not None
    ]
    assert any(m.startswith("unsupported: unsupported because") for m in skipped)
    markdown = (merged / "report.md").read_text()
    # the two ckpt rows are told apart by the server each one measured
    assert "| ckpt | " in markdown and "at http://127.0.0.1:2 | **failed** (at aiperf)" in markdown
    assert "at http://127.0.0.1:1 | **endpoint-qualified**" in markdown
    html = (merged / "report.html").read_text()
    assert html.count("<svg") == 4 and "<script" not in html
    assert "at http://127.0.0.1:2</td>" in html
    assert "at http://127.0.0.1:1 | **endpoint-qualified**" in summary.read_text()


def test_report_of_a_directory_without_results_is_bad_input(tmp_path: Path) -> None:
    done = cli("report", str(tmp_path))
    assert done.returncode == 2 and "holds no checkpoints/*/result.json" in done.stderr
    bad = tmp_path / "checkpoints" / "x" / "result.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps({"profile": "x"}))
    done = cli("report", str(tmp_path))
    assert done.returncode == 2 and "is not a result of this tool" in done.stderr and "Traceback" not in done.stderr
