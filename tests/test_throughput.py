"""Throughput and latency over load levels and repeated runs (docs/throughput.md): `--concurrency 1,4` and
`--num-profile-runs N` against the reference endpoint, each AIPerf run with its own records, task-time join and
graded answers; the settings refused where they clash; the status rule that every level must pass."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import execution_checks
import pytest
from helpers import cli, run_main
from shared_runs import SharedRun

from trtmc_videoqa.aiperf.dataset import PlannedRequest, Prompt, RequestPlan, plan_requests
from trtmc_videoqa.aiperf_qual.execution import ExecutionBatch, MetricsCapture
from trtmc_videoqa.aiperf_qual.execution_file import AiperfEvidence, next_lines
from trtmc_videoqa.climb.levels import LevelRun, Load
from trtmc_videoqa.climb.stats import latency_stats
from trtmc_videoqa.climb.sweep import sweep_of
from trtmc_videoqa.plan.settings import RunSettings
from trtmc_videoqa.publish.evidence import is_file_reference_file, is_measured
from trtmc_videoqa.results import (
    TINY_WORKLOAD_NOTE,
    LoadLevel,
    RecordedCommand,
    RequestRow,
    ResultRow,
    StageResult,
    Sweep,
)
from trtmc_videoqa.rows.status import failing_level

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def swept(sweep_run: SharedRun) -> tuple[Path, ResultRow, str]:
    """The sweep `--concurrency 1,4` (shared_runs.endpoint_sweep): its row's folder, its row, the terminal."""
    done = sweep_run.done()
    assert done.returncode == 0, done.stdout + done.stderr
    (row_dir,) = (sweep_run.out / "checkpoints").iterdir()
    return row_dir, ResultRow.model_validate_json((row_dir / "result.json").read_text()), done.stdout


def _requests(row_dir: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (row_dir / name).read_text().splitlines()]


@pytest.mark.e2e
def test_each_level_is_its_own_aiperf_run_joined_and_graded(swept: tuple[Path, ResultRow, str]) -> None:
    row_dir, row, _ = swept
    assert row.status == "endpoint-qualified" and row.sweep is not None
    assert row.sweep.axis == "concurrency" and [level.concurrency for level in row.sweep.levels] == [1, 4]
    ids: set[str] = set()
    for level in row.sweep.levels:
        (run,) = level.runs
        assert level.passed and run.passed and level.errors == 0 and level.completed == 6
        requests = _requests(row_dir, run.requests)
        profiling = [r for r in requests if r["phase"] == "profiling"]
        assert len(profiling) == 6 and len([r for r in requests if r["phase"] == "warmup"]) == 1  # warmup kept out
        # Every request joined to its own record and the server's task time, and graded from its own answer.
        assert all(r["x_request_id"] and r["server_task_ms"] is not None and r["grade"] for r in profiling)
        assert level.client_latency is not None and level.client_latency.p50_ms is not None
        assert level.server_task_time is not None and level.server_task_time.count == 6
        assert level.requests_per_s and level.clips_per_s and level.output_tokens_per_s
        assert level.questions == 3 and level.repeat_pairs == "3/3"
        assert not ids & {r["session_id"] for r in requests}  # ids unique across the row's runs
        ids |= {r["session_id"] for r in requests}
    # The top-level figures stay the first level's, which readers before sweeps know.
    assert row.requests_per_s == row.sweep.levels[0].runs[0].requests_per_s
    assert row.sweep.best_level in (1.0, 4.0)


@pytest.mark.e2e
def test_each_level_has_its_command_its_batch_and_the_terminal_names_the_best(
    swept: tuple[Path, ResultRow, str],
) -> None:
    row_dir, row, terminal = swept
    commands = (row_dir / "command.txt").read_text()
    assert "# aiperf\n" in commands and "# aiperf-c4\n" in commands
    assert "--concurrency 4" in commands.split("# aiperf-c4\n", 1)[1]
    items = execution_checks.lines(row_dir)
    active = execution_checks.active_batches(items)
    assert [b["identity"]["concurrency"] for b in active] == [1, 4]  # one batch per level
    assert {b["records"][0]["output_ref"]["aiperf_run"] for b in active} == {"aiperf/export", "aiperf/c4/export"}
    for batch in active:
        execution_checks.check_reader_fields(batch)
        execution_checks.check_round_trip(row_dir, batch)
        assert len(batch["records"]) == batch["expected_requests"] == 6 and batch["warmup"] == 1
    assert "best level: concurrency" in terminal
    out = row_dir.parent.parent
    checked = cli("doctor", "--aiperf-qual", "--trtmc", str(FIXTURES / "trtmc_families"), "--artifacts", str(out))
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.e2e
def test_repeated_runs_give_each_runs_figures_and_intervals(repeated_runs_run: SharedRun) -> None:
    done = repeated_runs_run.done()
    assert done.returncode == 0, done.stdout + done.stderr  # --num-profile-runs 3 --goodput request_latency:60000
    (result,) = (repeated_runs_run.out / "checkpoints").glob("*/result.json")
    row = ResultRow.model_validate_json(result.read_bytes())
    assert row.status == "endpoint-qualified" and row.sweep is not None and row.sweep.runs_per_level == 3
    (level,) = row.sweep.levels
    assert [run.run for run in level.runs] == [1, 2, 3] and all(run.completed == 6 for run in level.runs)
    assert set(level.intervals) == {"client_p50_ms", "task_p50_ms", "requests_per_s"}
    for interval in [*level.intervals.values(), level.both_right_interval]:
        assert interval is not None and interval.low <= interval.mean <= interval.high
        assert interval.note == TINY_WORKLOAD_NOTE and interval.confidence == 0.95
    assert level.intervals["requests_per_s"].n == 3
    assert level.both_right_interval is not None and level.both_right_interval.method == "Clopper-Pearson exact"
    assert level.repeat_pairs == "9/9"  # a count over the runs' repeat pairs, no interval
    assert level.goodput_met and row.sweep.goodput_best_level == 1.0


def test_the_two_lists_together_are_refused_naming_both(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    done = run_main(capsys, "qualify", "--concurrency", "1,2", "--request-rate", "2,4", "--out", str(tmp_path))
    assert done.returncode == 2 and "--concurrency" in done.stderr and "--request-rate" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--num-profile-runs", "11", "--num-profile-runs"),
        ("--goodput", "time_to_first_token:5", "request_latency:MS"),
        ("--concurrency", "1,x", "comma-separated"),
        ("--concurrency", "2,2", "each once"),
        ("--confidence-level", "1", "--confidence-level"),
    ],
)
def test_a_bad_level_or_objective_is_refused_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str, value: str, said: str
) -> None:
    done = run_main(capsys, "qualify", option, value, "--out", str(tmp_path))
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr


def _level(concurrency: int, passed: bool) -> LoadLevel:
    detail = "" if passed else "c4: 2 request(s) failed (2 HTTP 500)"
    return LoadLevel(concurrency=concurrency, passed=passed, failed_at=None if passed else "aiperf", detail=detail)


def test_a_row_is_qualified_only_when_every_level_passes_and_a_failure_names_its_level() -> None:
    def sweep(*levels: LoadLevel) -> Sweep:
        return Sweep(axis="concurrency", runs_per_level=1, confidence=0.95, levels=list(levels))

    assert failing_level(None) is None and failing_level(sweep(_level(1, True), _level(4, True))) is None
    stage, reason = failing_level(sweep(_level(1, True), _level(4, False))) or ("", "")
    assert stage == "aiperf" and "concurrency 4" in reason and "HTTP 500" in reason


def test_a_further_runs_ids_and_files_are_its_own() -> None:
    prompt = Prompt(question_id="q", clip_id="forward", clip_path="/c.mp4", text="t")
    first = plan_requests([prompt], repeats=1, warmup=1, max_tokens=8)
    further = plan_requests([prompt], repeats=1, warmup=1, max_tokens=8, id_prefix="c4.")
    assert not {r.session_id for r in first.requests} & {r.session_id for r in further.requests}
    assert is_file_reference_file("checkpoints/m/aiperf/c4/inputs.jsonl")  # its clip paths made portable
    assert is_measured("checkpoints/m/aiperf/c4-run2/export/profile_export_raw.jsonl")
    assert not is_file_reference_file("checkpoints/m/aiperf/elsewhere/inputs.jsonl")


def _batch(run: str) -> ExecutionBatch:
    return ExecutionBatch.model_validate(
        {
            "batch_id": 0,
            "workload": "synthetic",
            "role": "both",
            "identity": {
                "side": "candidate",
                "precision": None,
                "timing_scope": None,
                "concurrency": 1,
                "operation": "x",
            },
            "gpu_busy_percent": None,
            "warmup": 1,
            "expected_requests": 0,
            "aiperf_exit": 0,
            "aiperf_metrics": {"source": f"{run}/profile_export_aiperf.json"},
            "records": [],
        }
    )


def test_execution_jsonl_holds_a_batch_per_run_and_a_rerun_keeps_only_the_first_runs_export() -> None:
    new = [_batch("aiperf/export"), _batch("aiperf/c4/export")]
    lines = [json.loads(line.model_dump_json()) for line in next_lines([], set(), new)]
    assert [line["batch_id"] for line in lines] == [0, 1]
    again = [json.loads(line.model_dump_json()) for line in next_lines([*new[:1], new[1]], set(), new)]
    # The earlier first run's export is set aside and superseded; its further run's export was replaced: dropped.
    assert [line.get("batch_id", "event") for line in again] == [0, "event", 1, 2]
    assert again[0]["aiperf_metrics"]["source"].startswith("aiperf/export.previous/")
    assert [b["batch_id"] for b in execution_checks.active_batches(again)] == [1, 2]


def test_the_dry_run_names_the_levels_and_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = ("qualify", "--dry-run", "--out", str(tmp_path), "--num-profile-runs", "2")
    done = run_main(capsys, *args, "--concurrency", "1,4")
    assert done.returncode == 0 and "load: concurrency 1, 4, 2 runs each" in done.stdout
    assert "4 AIPerf run(s) per checkpoint" in done.stdout


def _run(concurrency: int, run: int, latencies: list[float], *, failed: str | None = None) -> LevelRun:
    """A measured run as the stages leave it: its records and figures, each stage's verdict on it."""
    load = Load(concurrency=concurrency, request_rate=None, run=run, first=(concurrency, run) == (1, 1))
    records = [
        RequestRow(
            session_id=f"{load.id_prefix}q.c.r{i:02d}",
            phase="profiling",
            question_id="q",
            clip_id="c",
            repeat=i,
            client_latency_ms=ms,
            server_task_ms=ms / 2,
        )
        for i, ms in enumerate(latencies)
    ]
    evidence = AiperfEvidence(exit_code=0, gpu_busy_percent=None, records=(), metrics=MetricsCapture(source="x"))
    measured = LevelRun(
        load=load,
        plan=RequestPlan(
            requests=[
                PlannedRequest(
                    session_id=r.session_id,
                    phase="profiling",
                    question_id="q",
                    clip_id="c",
                    repeat=r.repeat,
                    clip_path="/c.mp4",
                    text="t",
                )
                for r in records
            ],
            max_tokens=8,
        ),
        command=RecordedCommand.of(["aiperf"]),
        evidence=evidence,
        records=records,
        figures={
            "client_latency": latency_stats(latencies),
            "server_task_time": latency_stats([ms / 2 for ms in latencies]),
            "requests_per_s": 1000 * concurrency / max(latencies),
        },
    )
    for name in ("aiperf", "timing"):
        status = "failed" if failed == name else "passed"
        measured.stages[name] = StageResult(name=name, status=status, detail=f"{name} said so")
    return measured


def test_the_sweep_gives_each_level_its_runs_intervals_best_level_and_goodput() -> None:
    runs = [
        _run(1, 1, [100.0, 110.0]),
        _run(4, 1, [300.0, 320.0]),
        _run(1, 2, [104.0, 108.0]),
        _run(4, 2, [310.0, 330.0], failed="timing"),
    ]
    settings = RunSettings(concurrency=(1, 4), num_profile_runs=2, goodput="request_latency:200")
    sweep = sweep_of(runs, settings)
    assert sweep is not None and [level.concurrency for level in sweep.levels] == [1, 4]
    low, high = sweep.levels
    assert [run.label for run in low.runs] == ["c1", "c1-run2"] and [run.label for run in high.runs] == [
        "c4",
        "c4-run2",
    ]
    assert low.passed and not high.passed and high.failed_at == "timing" and high.detail.startswith("c4-run2:")
    assert set(low.intervals) == {"client_p50_ms", "task_p50_ms", "requests_per_s"}
    assert low.intervals["client_p50_ms"].n == 2 and low.intervals["client_p50_ms"].mean == pytest.approx(105.5)
    assert sweep.best_level == 1.0  # the failing level is never the best, however fast
    assert low.goodput_met and not high.goodput_met and sweep.goodput_best_level == 1.0
    assert failing_level(sweep) == ("timing", "timing: concurrency 4 did not pass: c4-run2: timing said so")


def test_the_levels_runs_and_objective_join_the_cache_key_only_when_they_shape_the_measurement() -> None:
    plain = RunSettings().measured()
    assert "concurrency" not in plain and "request_rate" not in plain and "goodput" not in plain
    assert plain["num_profile_runs"] == 1 and plain["confidence_level"] == 0.95
    swept = RunSettings(concurrency=(1, 4), num_profile_runs=3, goodput="request_latency:500").measured()
    assert swept["concurrency"] == (1, 4) and swept["num_profile_runs"] == 3
    assert swept["goodput"] == "request_latency:500"
    assert RunSettings(request_rate=(2.5,)).measured()["request_rate"] == (2.5,)


def test_a_streamed_level_has_its_ttft_and_itl_and_an_unstreamed_one_has_none() -> None:
    streamed = _run(1, 1, [100.0, 120.0, 140.0])
    streamed.records = [
        r.model_copy(update={"ttft_ms": 10.0 * (i + 1), "itl_ms": 2.0 + i}) for i, r in enumerate(streamed.records)
    ]
    sweep = sweep_of([streamed, _run(4, 1, [300.0, 320.0])], RunSettings(concurrency=(1, 4)))
    assert sweep is not None
    first, second = sweep.levels
    assert first.ttft is not None and first.ttft.count == 3 and first.ttft.p50_ms == 20.0
    assert first.itl is not None and first.itl.p50_ms == 3.0
    assert second.ttft is None and second.itl is None  # nothing streamed at this level: no figure, not a zero


@pytest.mark.e2e
def test_the_report_draws_the_levels_as_a_curve_beside_their_table(swept: tuple[Path, ResultRow, str]) -> None:
    row_dir, row, _ = swept
    out = row_dir.parent.parent
    assert row.sweep is not None
    page = (out / "report.html").read_text()
    start = page.index('<svg class="throughput-curve"')
    svg = ET.fromstring(page[start : page.index("</svg>", start) + len("</svg>")])
    circles = list(svg.iter("{http://www.w3.org/2000/svg}circle"))
    assert [c.get("data-level") for c in circles] == ["c1", "c4"]
    # each level sits across by the requests per second it achieved
    per_s = [level.requests_per_s or 0.0 for level in row.sweep.levels]
    xs = [float(c.get("cx", "nan")) for c in circles]
    assert (xs[0] < xs[1]) == (per_s[0] < per_s[1]) and xs[0] != xs[1]
    assert '<table class="sweep">' in page
    markdown = (out / "report.md").read_text()
    for level in row.sweep.levels:
        (line,) = [line for line in markdown.splitlines() if line.startswith(f"| c{level.concurrency} |")]
        assert line.split(" | ")[1] == f"{level.requests_per_s:.3g}" and line.endswith("| passed |")
