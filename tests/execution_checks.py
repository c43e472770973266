"""Checks of a row's execution.jsonl (aiperf_qual's evidence stream), shared by the self-test, the TRTMC chain and
the resume tests: the committed schema, the fields aiperf_qual's readers take, and the round trip from each record
back to the AIPerf raw record it names.

READER_FIELDS lists what TRTMC's aiperf_qual code reads from a line, by file and commit (read through the search
tools, not copied): `accuracy_recovery.batches` and `aligned_batches` @3878755c, `execution.Session.natural_performance`
and `paired_dataset` @3878755c, `benchmark_perf.refresh` @2fe790f7.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from trtmc_videoqa.aiperf_qual.execution import EXECUTION_FILE, READ_AT_COMMIT, SUPERSEDE_EVENT, request_sha
from trtmc_videoqa.results import ResultRow

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "schemas" / f"aiperf_qual.execution.{READ_AT_COMMIT}.schema.json"

NUMBER = (int, float)
# path -> the JSON types a reader takes there (None: JSON null)
READER_FIELDS: dict[str, tuple[type | None, ...]] = {
    "batch_id": (int,),  # batches(): item["batch_id"]
    "records": (list,),  # batches(): "records" in item
    "workload": (str,),  # natural_performance, recover(), refresh()
    "role": (str,),  # natural_performance: batch["role"]
    "identity.side": (str,),  # aligned_batches, refresh()
    "identity.precision": (str, None),  # paired_dataset
    "identity.timing_scope": (str, None),  # paired_dataset
    "identity.concurrency": (int,),  # paired_dataset
    "gpu_busy_percent": (*NUMBER, None),  # paired_dataset
    "warmup": (int,),  # paired_dataset
    "expected_requests": (int, None),  # paired_dataset
    "aiperf_exit": (int,),  # aligned_batches: AiperfRun(..., batch["aiperf_exit"], [])
    "aiperf_metrics.metrics": (dict,),  # aiperf_metrics.entries
    "records[].sample_id": (str, int),
    "records[].unit_id": (str,),
    "records[].request_sha": (str,),
    "records[].model_call_ms": (*NUMBER, None),
    "records[].valid": (bool,),
    "records[].output_valid": (bool,),  # refresh()
    "records[].work": (list, dict, None),  # paired_dataset: dict(row["work"])
    "records[].capacity_rejection": (bool, str, dict, None),
    "records[].request_problems": (list,),
    "records[].output_ref.aiperf_run": (str,),
    "records[].output_ref.record_index": (int,),
}


def lines(row_dir: Path) -> list[dict[str, Any]]:
    path = row_dir / EXECUTION_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def active_batches(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What aiperf_qual's `batches(out)` keeps: batch lines not named by a supersede event (their rule, restated)."""
    superseded = {i for item in items if item.get("event") == SUPERSEDE_EVENT for i in item["batch_ids"]}
    return [item for item in items if "records" in item and item["batch_id"] not in superseded]


def _values(item: Any, path: list[str]) -> list[Any]:
    if not path:
        return [item]
    head, rest = path[0], path[1:]
    if head.endswith("[]"):
        return [v for element in item[head[:-2]] for v in _values(element, rest)]
    assert head in item, f"missing {head}"
    return _values(item[head], rest)


def check_reader_fields(batch: dict[str, Any]) -> None:
    for path, types in READER_FIELDS.items():
        for value in _values(batch, path.split(".")):
            allowed = tuple(t for t in types if t is not None)
            ok = (value is None and None in types) or (
                isinstance(value, allowed) and not (isinstance(value, bool) and bool not in types)
            )
            assert ok, f"{path}: {value!r} is not one of {types}"


def raw_profiling_records(run: Path) -> list[dict[str, Any]]:
    """As aiperf_qual's AiperfRun.raw_records() finds them: the merged raw export, else the per-processor files."""
    paths = sorted(run.glob("**/profile_export_raw.jsonl")) or sorted(run.glob("**/raw_records/*.jsonl"))
    found = []
    for path in paths:
        for line in path.read_text().splitlines():
            item = json.loads(line)
            if item["metadata"].get("benchmark_phase") == "profiling":
                found.append(item)
    return found


def check_round_trip(row_dir: Path, batch: dict[str, Any]) -> None:
    """Each record names a raw record of a run inside the row folder whose payload hashes to its request_sha and
    whose identity is the record's (what aligned_batches re-checks)."""
    runs = {r["output_ref"]["aiperf_run"] for r in batch["records"]}
    assert len(runs) <= 1, runs  # one AIPerf run per batch
    for name in runs:
        run = (row_dir / name).resolve()
        assert run.is_relative_to(row_dir.resolve()) and run.is_dir(), name
        raws = raw_profiling_records(run)
        for record in batch["records"]:
            raw = raws[record["output_ref"]["record_index"]]
            assert request_sha(raw.get("payload") or {}) == record["request_sha"]
            assert raw["metadata"]["conversation_id"] == record["sample_id"]
            assert raw["metadata"]["x_request_id"] == record["output_ref"]["request_id"]


def check_execution(row_dir: Path, row: ResultRow) -> list[dict[str, Any]]:
    """Every line valid against the committed schema, every batch round-trips, and the one active batch is this
    row's AIPerf run: one record per profiling request, the warmup apart, task times as the row joined them."""
    items = lines(row_dir)
    validator = Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    for item in items:
        validator.validate(item)
    for batch in (item for item in items if "records" in item):
        check_reader_fields(batch)
        check_round_trip(row_dir, batch)
    active = active_batches(items)
    assert len(active) == 1, [b["batch_id"] for b in active]
    batch = active[0]
    assert {r["output_ref"]["aiperf_run"] for r in batch["records"]} == {"aiperf/export"}
    profiling = {r.session_id: r for r in row.requests if r.phase == "profiling"}
    warmup = {r.session_id for r in row.requests if r.phase == "warmup"}
    assert batch["warmup"] == row.warmup_requests == len(warmup) > 0
    assert batch["expected_requests"] == row.profiling_requests_planned == len(batch["records"])
    assert sorted(r["sample_id"] for r in batch["records"]) == sorted(profiling)
    assert not warmup & {r["sample_id"] for r in batch["records"]}
    for record in batch["records"]:
        ours = profiling[record["sample_id"]]
        assert record["output_ref"]["request_id"] == ours.x_request_id
        assert record["model_call_ms"] == ours.server_task_ms
        assert record["unit_id"] == f"{ours.question_id}/{ours.clip_id}"
    assert batch["aiperf_exit"] == 0 and batch["aiperf_metrics"]["metrics"]["request_latency"]["count"] > 0
    return items
