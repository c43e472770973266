"""aiperf_qual's vocabulary and evidence format, without a run: the verdict table, the supersede transitions of
execution.jsonl, the request identity, the committed schema against the fields aiperf_qual's readers take, and the
copy of the table in docs/statuses.md."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from execution_checks import READER_FIELDS, SCHEMA_FILE, active_batches, check_reader_fields
from jsonschema import Draft202012Validator, ValidationError

from trtmc_videoqa.aiperf_qual.execution import (
    READ_AT_COMMIT,
    BatchIdentity,
    ExecutionBatch,
    ExecutionRecord,
    MetricsCapture,
    OutputRef,
    SupersedeEvent,
    request_sha,
)
from trtmc_videoqa.aiperf_qual.execution_file import next_lines, request_problems
from trtmc_videoqa.aiperf_qual.reader_check import verdict_of
from trtmc_videoqa.aiperf_qual.verdicts import SEVERITY, TABLE, group_verdict, verdict_for
from trtmc_videoqa.machine.gpu import busy_percent
from trtmc_videoqa.results import STAGE_ORDER, AiperfQualVerdict, QualificationStatus, ResultRow

ROOT = Path(__file__).resolve().parents[1]
STATUSES: tuple[str, ...] = QualificationStatus.__args__  # type: ignore[attr-defined]
VERDICTS: tuple[str, ...] = AiperfQualVerdict.__args__  # type: ignore[attr-defined]


# --- the verdict table -----------------------------------------------------------------------------------------


def test_every_status_and_failed_stage_maps_to_exactly_one_known_verdict() -> None:
    keys = {(status, None) for status in STATUSES} | {("failed", stage) for stage in STAGE_ORDER}
    assert set(TABLE) == keys  # no status or stage left out, none invented
    assert {verdict for verdict, _ in TABLE.values()} <= set(VERDICTS)
    assert sorted(SEVERITY) == sorted(VERDICTS)  # every verdict has its place in the severity order


@pytest.mark.parametrize(
    ("status", "stage", "verdict"),
    [
        ("unsupported", None, "not-covered"),
        ("planned", None, "not-run"),
        ("blocked", None, "not-run"),
        ("failed", "output-check", "acc-issue"),
        ("failed", "identity", "acc-issue"),
        ("failed", "correctness", "acc-issue"),
        ("failed", "aiperf", "error"),
        ("failed", "build", "build-failed"),
        ("failed", "timing", "perf-inconclusive"),
        ("aiperf-qualified", None, "acc-inconclusive"),  # no gold benchmark against the native model ran
        ("unverified", None, "error"),
        ("blocked", "build", "not-run"),  # a stage on a status other than failed does not change it
    ],
)
def test_the_mapping_the_issue_names(status: str, stage: str | None, verdict: str) -> None:
    assert verdict_for(status, stage) == verdict  # type: ignore[arg-type]


def test_the_severity_order_is_aiperf_quals_worst_first() -> None:
    # campaign.py's CATEGORIES @00442e00 (smoke categories aside: never a verdict of ours)
    assert SEVERITY[:4] == ("error", "config-error", "build-failed", "not-run")
    assert SEVERITY.index("acc-issue") < SEVERITY.index("not-covered") < SEVERITY.index("acc-inconclusive")
    assert SEVERITY.index("perf-issue") < SEVERITY.index("perf-inconclusive") < SEVERITY.index("pass")


def _row(profile: str, status: str, stage: str | None = None) -> ResultRow:
    return ResultRow(profile=profile, status=status, status_reason="x", failed_stage=stage)  # type: ignore[arg-type]


def test_the_group_verdict_is_its_worst_row_and_lists_every_row_worst_first() -> None:
    rows = [_row("a", "aiperf-qualified"), _row("b", "failed", "identity"), _row("c", "unsupported")]
    group = group_verdict(rows, rows[:2], "models")
    assert group.verdict == "acc-issue"
    assert list(group.rows.items()) == [("acc-issue", ["b"]), ("not-covered", ["c"]), ("acc-inconclusive", ["a"])]
    assert group_verdict(rows, [], "none").verdict is None


def test_the_documented_table_is_the_code_table() -> None:
    text = (ROOT / "docs" / "statuses.md").read_text()
    section = text[text.index("## aiperf_qual's verdict") :]
    found = {}
    for status, stage, verdict in re.findall(r"^\| `([a-z-]+)` \| (`[a-z-]+`|–) \| `([a-z-]+)` \|", section, re.M):
        found[(status, None if stage == "–" else stage.strip("`"))] = verdict
    assert found == {key: verdict for key, (verdict, _) in TABLE.items()}


# --- execution.jsonl --------------------------------------------------------------------------------------------


def test_request_sha_is_aiperf_quals_canonical_payload_digest() -> None:
    payload = {"model": "m", "messages": [{"role": "user", "content": "é"}], "max_tokens": 8}
    canonical = '{"max_tokens":8,"messages":[{"content":"\\u00e9","role":"user"}],"model":"m"}'
    assert request_sha(payload) == hashlib.sha256(canonical.encode()).hexdigest()


def test_a_request_that_leaves_a_control_to_the_server_says_so() -> None:
    assert request_problems({"max_tokens": 8, "temperature": 0}) == []
    assert request_problems({"max_completion_tokens": 8}) == ["temperature not set: left to the server's default"]


def _batch(batch_id: int, run: str = "aiperf/export") -> ExecutionBatch:
    record = ExecutionRecord(
        sample_id="q.forward.r00",
        unit_id="q/forward",
        request_sha="a" * 64,
        model_call_ms=12.5,
        valid=True,
        output_valid=True,
        work=[("output_tokens", 1)],
        capacity_rejection=False,
        output_ref=OutputRef(aiperf_run=run, record_index=0, request_id="rid"),
    )
    return ExecutionBatch(
        batch_id=batch_id,
        workload="synthetic",
        role="both",
        identity=BatchIdentity(
            side="candidate", precision="bf16", timing_scope="public_task_call_wall", concurrency=1, operation="chat"
        ),
        gpu_busy_percent=None,
        warmup=2,
        expected_requests=1,
        aiperf_exit=0,
        aiperf_metrics=MetricsCapture(source=f"{run}/profile_export_aiperf.json"),
        records=[record],
    )


def _dumped(lines: list[ExecutionBatch | SupersedeEvent]) -> list[dict]:
    return [json.loads(line.model_dump_json()) for line in lines]


def test_a_first_attempt_is_one_batch() -> None:
    assert _dumped(next_lines([], set(), _batch(0))) == _dumped([_batch(0)])


def test_a_rerun_moves_the_earlier_batch_aside_and_supersedes_it() -> None:
    lines = _dumped(next_lines([_batch(0)], set(), _batch(0)))
    first, event, second = lines
    assert first["records"][0]["output_ref"]["aiperf_run"] == "aiperf/export.previous"
    assert first["aiperf_metrics"]["source"] == "aiperf/export.previous/profile_export_aiperf.json"
    assert event == {"event": "supersede_failed_attempt", "batch_ids": [0]}
    assert second["batch_id"] == 1 and second["records"][0]["output_ref"]["aiperf_run"] == "aiperf/export"
    assert [b["batch_id"] for b in active_batches(lines)] == [1]


def test_a_third_attempt_drops_the_batch_whose_export_was_replaced() -> None:
    moved = next_lines([_batch(0)], set(), _batch(0))
    batches = [line for line in moved if isinstance(line, ExecutionBatch)]
    lines = _dumped(next_lines(batches, {0}, _batch(0)))
    assert [line.get("batch_id", "event") for line in lines] == [1, "event", 2]
    assert lines[1]["batch_ids"] == [1] and [b["batch_id"] for b in active_batches(lines)] == [2]


def test_an_attempt_that_ran_no_aiperf_supersedes_the_earlier_batch_in_place() -> None:
    lines = _dumped(next_lines([_batch(0)], set(), None))
    assert lines[0]["records"][0]["output_ref"]["aiperf_run"] == "aiperf/export"  # its export was not moved
    assert lines[1] == {"event": "supersede_failed_attempt", "batch_ids": [0]} and active_batches(lines) == []
    assert _dumped(next_lines([_batch(0)], {0}, None)) == lines  # again: the same file


def test_the_committed_schema_takes_our_lines_and_refuses_what_a_reader_would_trip_on() -> None:
    validator = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    for line in _dumped(next_lines([_batch(0)], set(), _batch(0))):
        validator.validate(line)
    good = _dumped([_batch(0)])[0]
    check_reader_fields(good)
    broken = [
        {k: v for k, v in good.items() if k != "batch_id"},
        {**good, "records": [{**good["records"][0], "request_sha": "not-a-digest"}]},
        {**good, "records": [{**good["records"][0], "output_ref": {"aiperf_run": "/abs", "record_index": 0}}]},
        {
            **good,
            "records": [
                {**good["records"][0], "output_ref": {**good["records"][0]["output_ref"], "aiperf_run": "../x"}}
            ],
        },
        {**good, "role": "accuracy"},
        {"event": "supersede_failed_attempt", "batch_ids": []},
    ]
    for line in broken:
        with pytest.raises(ValidationError):
            validator.validate(line)


def test_the_committed_schema_requires_every_field_a_reader_takes() -> None:
    """READER_FIELDS (what aiperf_qual's code reads, by file and commit) is a subset of the schema's required."""
    schema = json.loads(SCHEMA_FILE.read_text())
    assert READ_AT_COMMIT in SCHEMA_FILE.name and READ_AT_COMMIT in schema["description"]
    defs = schema["$defs"]
    for path in READER_FIELDS:
        node = defs["batch"]
        parts = path.split(".")
        for part in parts[:-1]:
            name = part.removesuffix("[]")
            assert name in node["required"], path
            node = defs["record"] if part.endswith("[]") else node["properties"][name]
        assert parts[-1] in node["required"], path


# --- GPU idleness and the reader's answer -----------------------------------------------------------------------


def test_gpu_busy_is_the_busiest_gpu_and_nothing_unreadable_counts_as_idle() -> None:
    assert busy_percent("3\n17\n") == 17.0
    assert busy_percent("[N/A]\n") is None
    assert busy_percent("TEST DOUBLE (not a GPU), 0.0, 0 MiB\n") is None
    assert busy_percent("") is None


def test_what_the_reader_says_decides_the_level() -> None:
    assert verdict_of("r", {"batches": [1], "records": 30, "aligned": 30}).level == "ok"
    assert verdict_of("r", {"error": "KeyError: 'batch_id'"}).level == "fail"
    cannot = {"batches": [0], "records": 30, "aligned_error": "AttributeError: no conversation_indices"}
    assert verdict_of("r", cannot).level == "warn"
    refused = {"batches": [0], "records": 30, "aligned_error": "ValueError: execution row does not match"}
    assert verdict_of("r", refused).level == "fail"
