"""Differences that are real (docs/throughput.md): `report A B` and `compare` say, figure by figure at each shared
load level, whether B is faster, slower or no clearly different from A by Welch's t over per-run medians, and for
both-right by Fisher's exact test; one run a side, or too few questions for any outcome to count, cannot be judged."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from helpers import QUICK, endpoint_provenance, reference, run_main
from shared_runs import SharedRun, tripwire_aiperf

from trtmc_videoqa.cli.run_output import print_outcome
from trtmc_videoqa.reference import DEFAULT_MODEL_NAME
from trtmc_videoqa.report.difference_view import terminal_lines
from trtmc_videoqa.report.differences import (
    FISHER,
    WELCH_MEDIANS,
    Sourced,
    both_right_difference,
    compared_pairs,
    report_differences,
    timed_difference,
)
from trtmc_videoqa.report.html import render_html
from trtmc_videoqa.report.markdown import render_markdown
from trtmc_videoqa.results import (
    ComparisonFacts,
    LatencyStats,
    LoadLevel,
    Report,
    ResultRow,
    RunFigures,
    Sweep,
)
from trtmc_videoqa.runs.owner import RunOutcome

# --- the tests on known numbers ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stats() -> ModuleType:  # scipy.stats, imported here, not at collection: about 1.5 s of CPU in every worker
    from scipy import stats

    return stats


def test_welchs_interval_is_scipys_and_a_higher_latency_is_slower(stats: ModuleType) -> None:
    a, b = [101.0, 104.0, 99.0], [180.0, 171.0, 190.0, 176.0]
    judged = timed_difference("client_p50_ms", a, b)
    expected = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    assert judged.low is not None and judged.high is not None and judged.difference is not None
    assert math.isclose(judged.low, expected.low) and math.isclose(judged.high, expected.high)
    assert math.isclose(judged.difference, sum(b) / 4 - sum(a) / 3)
    assert judged.verdict == "slower" and judged.test == WELCH_MEDIANS and judged.a_values == a
    assert timed_difference("client_p50_ms", b, a).verdict == "faster"
    # throughput the other way round: more requests per second is faster
    assert timed_difference("requests_per_s", a, b).verdict == "faster"
    assert timed_difference("requests_per_s", b, a, confidence=0.9).verdict == "slower"


def test_an_interval_that_holds_zero_is_no_clear_difference(stats: ModuleType) -> None:
    a, b = [100.0, 140.0, 95.0], [120.0, 98.0, 130.0]
    judged = timed_difference("task_p50_ms", a, b)
    expected = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    assert math.isclose(judged.low or 0, expected.low) and judged.low < 0 < judged.high  # type: ignore[operator]
    assert judged.verdict == "no clear difference" and "holds 0" in judged.why


@pytest.mark.parametrize(("a", "b"), [([100.0], [900.0]), ([100.0, 101.0], [900.0]), ([], [1.0, 2.0])])
def test_one_run_a_side_cannot_be_judged_however_far_apart(a: list[float], b: list[float]) -> None:
    judged = timed_difference("client_p50_ms", a, b)
    assert judged.verdict == "cannot be judged"
    assert judged.difference is None and judged.low is None and judged.high is None
    assert "--num-profile-runs 2" in judged.why and "2 runs a side" in judged.why


def test_both_right_uses_fishers_exact_test_and_says_when_no_outcome_could_count(stats: ModuleType) -> None:
    # 3 questions a side (synthetic): even 3/3 against 0/3 gives p = 2/C(6,3) = 0.1, never below 0.05
    tiny = both_right_difference(0, 3, 3, 3)
    assert tiny.verdict == "cannot be judged" and tiny.p_value is None and "p = 0.1" in tiny.why
    assert tiny.a_estimate == 0.0 and tiny.b_estimate == 1.0  # the shares are still given
    # 4 a side: all against none gives p = 2/C(8,4) = 0.0286, below 0.05
    fewer = both_right_difference(4, 4, 0, 4)
    assert fewer.verdict == "fewer right" and fewer.test == FISHER
    assert fewer.p_value is not None and math.isclose(fewer.p_value, 2 / math.comb(8, 4))
    assert math.isclose(fewer.p_value, stats.fisher_exact([[4, 0], [0, 4]]).pvalue)
    assert both_right_difference(0, 4, 4, 4).verdict == "more right"
    same = both_right_difference(3, 4, 2, 4)
    assert same.verdict == "no clear difference" and same.p_value == 1.0
    assert both_right_difference(0, 0, 1, 3).verdict == "cannot be judged"


# --- rows compared in a report ----------------------------------------------------------------------------------


def _run(index: int, client: float, task: float, rate: float) -> RunFigures:
    return RunFigures(
        run=index,
        label=f"c1-run{index}",
        folder="aiperf",
        requests="requests.jsonl",
        requests_per_s=rate,
        client_latency=LatencyStats(count=6, p50_ms=client),
        server_task_time=LatencyStats(count=6, p50_ms=task),
        completed=6,
        passed=True,
    )


def _row(profile: str, endpoint: str, runs: list[tuple[float, float, float]], right: int = 3, **extra) -> ResultRow:
    """A measured row of synthetic at concurrency 1 with one run per (client p50, task p50, requests/s)."""
    level = LoadLevel(
        concurrency=1,
        runs=[_run(i, *figures) for i, figures in enumerate(runs, 1)],
        questions=3,
        questions_both_right=right,
        passed=True,
    )
    provenance = endpoint_provenance(endpoint, served_by=None)
    sweep = Sweep(axis="concurrency", runs_per_level=len(runs), confidence=0.95, levels=[level])
    return ResultRow(
        profile=profile,
        status="endpoint-qualified",
        status_reason="measured",
        provenance=provenance,
        client_latency=LatencyStats(count=6, p50_ms=runs[0][0]),
        sweep=sweep,
        **extra,
    )


FAST = [(100.0, 80.0, 9.0), (104.0, 82.0, 8.8), (98.0, 79.0, 9.1)]
SLOW = [(900.0, 880.0, 1.1), (910.0, 881.0, 1.1)]


def test_a_profile_in_two_folders_and_a_comparison_beside_its_trtmc_row_are_the_pairs() -> None:
    a = Sourced("A", _row("m", "http://127.0.0.1:1", FAST))
    b = Sourced("B", _row("m", "http://127.0.0.1:2", SLOW))
    alone = Sourced("A", _row("other", "http://127.0.0.1:1", FAST))
    facts = ComparisonFacts(
        server="transformers serve", checkpoint="x", compared_profile="other", device="cpu", media_adaptation="none"
    )
    upstream = Sourced("A", _row("other.transformers-serve", "http://127.0.0.1:3", SLOW, comparison=facts))
    pairs = compared_pairs([a, alone, upstream, b])
    assert [(x.row.profile, x.source, y.row.profile, y.source) for x, y in pairs] == [
        ("m", "A", "m", "B"),
        ("other", "A", "other.transformers-serve", "A"),
    ]
    (pair, _) = report_differences([a, b, alone, upstream])
    verdicts = {(f.figure, f.level): f.verdict for f in pair.figures}
    assert verdicts == {
        ("client_p50_ms", 1.0): "slower",
        ("task_p50_ms", 1.0): "slower",
        ("requests_per_s", 1.0): "slower",
        ("both_right", 1.0): "cannot be judged",
    }
    assert pair.a.source == "A" and pair.b.endpoint == "http://127.0.0.1:2" and "tiny workloads" in pair.note


def test_levels_measured_on_one_side_only_are_named_and_other_workloads_never_compared() -> None:
    a, b = _row("m", "u1", FAST), _row("m", "u2", SLOW)
    assert b.sweep is not None
    b.sweep.levels[0].concurrency = 4
    (pair,) = report_differences([Sourced("A", a), Sourced("B", b)])
    assert pair.figures == [] and pair.not_compared == "measured on one side only: A's concurrency 1, B's concurrency 4"
    other = _row("m", "u2", SLOW)
    assert other.provenance is not None
    other.provenance.workload = "bigbuckbunny"
    (pair,) = report_differences([Sourced("A", a), Sourced("B", other)])
    assert pair.figures == [] and "different questions, not compared" in (pair.not_compared or "")


def _write(out: Path, row: ResultRow) -> Path:
    """The row as a run leaves it: result.json beside the evidence a measured row's folder holds."""
    folder = out / "checkpoints" / row.profile
    (folder / "aiperf").mkdir(parents=True)
    (folder / "result.json").write_text(row.model_dump_json())
    (folder / "aiperf" / "outcome.json").write_text('{"exit_code": 0, "timed_out": false}\n')
    (folder / "requests.jsonl").write_text("{}\n")
    return out


def test_report_a_b_says_each_verdict_and_its_test_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _write(tmp_path / "a", _row("m", "http://127.0.0.1:1", FAST).model_copy(update={"requests": []}))
    b = _write(tmp_path / "b", _row("m", "http://127.0.0.1:2", SLOW[:1]))
    # the rows carry no requests: the report calls them unverified, and still compares what they measured
    done = run_main(capsys, "report", str(a), str(b), "--out", str(tmp_path / "ab"))
    assert done.returncode == 0, done.stderr
    report = Report.model_validate_json((tmp_path / "ab" / "report.json").read_bytes())
    (pair,) = report.differences
    assert {f.verdict for f in pair.figures} == {"cannot be judged"}  # B ran once: no winner, however far apart
    assert "B m against A m:" in done.stdout
    assert "client p50 at concurrency 1: cannot be judged by Welch's t: 1 run against 3, 2 a side needed" in done.stdout
    markdown = (tmp_path / "ab" / "report.md").read_text()
    assert "## Differences between rows" in markdown and "| client p50 | concurrency 1 |" in markdown
    assert "| Welch's t, run medians |" in markdown and "--num-profile-runs 2 or more" in markdown
    assert "| Fisher's exact |" in markdown and "tiny workloads" in markdown
    html = (tmp_path / "ab" / "report.html").read_text()
    assert '<table class="differences">' in html and "<td>Welch&#x27;s t, run medians</td>" in html


def test_the_markdown_and_page_give_the_interval_and_the_terminal_the_verdict() -> None:
    rows = [Sourced("A", _row("m", "u1", FAST)), Sourced("B", _row("m", "u2", SLOW))]
    report = Report(
        title="t",
        generated_by="g",
        sources=["A", "B"],
        reference_self_test=False,
        group={"status": "endpoint", "line": "l"},
        rows=[s.row for s in rows],
        counts={},
        differences=report_differences(rows),
    )
    markdown, html = render_markdown(report), render_html(report)
    for text in (markdown, html):
        assert "B slower" in text and "101 ms mean, 3 runs" in text and "905 ms mean, 2 runs" in text
        assert "+804 ms (95%: 762 to 847 ms)" in text
        assert "client p50, task p50, requests/s at concurrency 1: the interval excludes 0 (3 runs against 2)" in text
        assert "client p50 at concurrency 1, run by run: A 100 ms, 104 ms, 98 ms; B 900 ms, 910 ms" in text
    # GitHub's tables stay narrow: no cell over 80 characters (the whys go beneath the table)
    table = [line for line in markdown.splitlines() if line.startswith("| client p50 |")]
    assert table and all(len(cell.strip()) <= 80 for cell in table[0].split("|"))
    lines = terminal_lines(report.differences)
    assert lines[1] == "  client p50 at concurrency 1: B slower by Welch's t: +804 ms (95%: 762 to 847 ms)"
    assert lines[3] == "  requests/s at concurrency 1: B slower by Welch's t: −7.87 (95%: −8.25 to −7.49)"
    assert all(len(line) <= 100 for line in lines)


def test_compares_terminal_names_the_difference_or_where_to_find_it(capsys: pytest.CaptureFixture[str]) -> None:
    facts = ComparisonFacts(
        server="transformers serve", checkpoint="x", compared_profile="m", device="cpu", media_adaptation="none"
    )
    upstream = _row("m.transformers-serve", "u2", SLOW, comparison=facts)
    differences = report_differences([Sourced("out", _row("m", "u1", FAST)), Sourced("out", upstream)])
    print_outcome(RunOutcome([upstream], Path("report.html"), 0, tuple(differences)))
    shown = capsys.readouterr().out
    assert "B m.transformers-serve against A m:" in shown and "task p50 at concurrency 1: B slower" in shown
    print_outcome(RunOutcome([upstream], Path("report.html"), 0))
    shown = capsys.readouterr().out
    assert "no row m in --out to compare with; `trtmc-videoqa report TRTMC_DIR COMPARE_DIR`" in shown


# --- end to end -------------------------------------------------------------------------------------------------


SLOWER_MS = 2000  # the slower server's added task time: with 2 runs (Welch's t at 1 degree of freedom, t = 12.7) it
# stays clear of a spread of up to 300 ms between its two runs on a loaded machine


@pytest.mark.e2e
def test_report_a_b_finds_the_slower_server_slower_by_welch(
    repeated_runs_run: SharedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A: the reference endpoint over three runs (shared); B: the same with every task two seconds longer, two runs."""
    assert repeated_runs_run.done().returncode == 0
    slow = tmp_path / "slow"
    with reference(tmp_path, name="slow", added_task_ms=SLOWER_MS) as url:
        argv = ["--url", url, "--model", DEFAULT_MODEL_NAME, *QUICK, "--num-profile-runs", "2", "--out", str(slow)]
        measured = run_main(None, "qualify", *argv)
    assert measured.returncode == 0, measured.stdout + measured.stderr
    done = run_main(capsys, "report", str(repeated_runs_run.out), str(slow), "--out", str(tmp_path / "ab"))
    assert done.returncode == 0, done.stderr
    report = Report.model_validate_json((tmp_path / "ab" / "report.json").read_bytes())
    (pair,) = report.differences
    assert pair.a.source == str(repeated_runs_run.out) and pair.b.source == str(slow)
    judged = {figure.figure: figure for figure in pair.figures}
    assert [len(judged["client_p50_ms"].a_values), len(judged["client_p50_ms"].b_values)] == [3, 2]
    for name in ("client_p50_ms", "task_p50_ms"):
        assert judged[name].verdict == "slower" and judged[name].test == WELCH_MEDIANS, judged[name]
        assert judged[name].low is not None and judged[name].low > 0
    assert judged["requests_per_s"].verdict in ("slower", "no clear difference")  # never faster
    assert judged["both_right"].verdict == "cannot be judged"  # 3 questions a side
    assert "task p50 at concurrency 1: B slower by Welch's t: +" in done.stdout
    assert "| task p50 | concurrency 1 |" in (tmp_path / "ab" / "report.md").read_text()


@pytest.mark.e2e
def test_report_a_b_of_one_run_rows_says_it_cannot_be_judged(
    auto_key_run: SharedRun, key_file_run: SharedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two one-run rows of one model (shared), the second server 300 ms slower a task: still no winner."""
    done = run_main(capsys, "report", str(auto_key_run.out), str(key_file_run.out), "--out", str(tmp_path / "ab"))
    assert done.returncode == 0, done.stderr
    report = Report.model_validate_json((tmp_path / "ab" / "report.json").read_bytes())
    (pair,) = report.differences
    assert {f.figure for f in pair.figures} == {"client_p50_ms", "task_p50_ms", "requests_per_s", "both_right"}
    assert {f.verdict for f in pair.figures} == {"cannot be judged"}
    assert all(f.difference is None for f in pair.figures if f.figure != "both_right")
    assert "client p50 at concurrency 1: cannot be judged by Welch's t: 1 run against 1" in done.stdout
    assert "B slower" not in done.stdout and "B faster" not in done.stdout
    assert "A has 1 run and B 1 run with this figure" in (tmp_path / "ab" / "report.md").read_text()


@pytest.mark.e2e
def test_a_runs_terminal_judges_a_comparison_row_beside_its_trtmc_row(
    quick_http_run: SharedRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A finished run's --out (shared, reused without AIPerf) holding, beside its row, a comparison row that names it:
    the run's own report and terminal judge the pair, one run a side: cannot be judged."""
    out = quick_http_run.copy(tmp_path / "out")
    trtmc = out / "checkpoints" / "reference-self-test.synthetic"
    upstream = out / "checkpoints" / "reference-self-test.synthetic.transformers-serve"
    shutil.copytree(trtmc, upstream)
    facts = ComparisonFacts(
        server="transformers serve", checkpoint="x", compared_profile=trtmc.name, device="cpu", media_adaptation="none"
    )
    row = ResultRow.model_validate_json((trtmc / "result.json").read_bytes())
    changed = row.model_copy(update={"profile": upstream.name, "comparison": facts})
    (upstream / "result.json").write_text(changed.model_dump_json())
    aiperf, launched = tripwire_aiperf(tmp_path / "tripwire")
    env = dict(quick_http_run.env(), TRTMC_VIDEOQA_AIPERF=str(aiperf))
    done = run_main(capsys, "qualify", "--out", str(out), *quick_http_run.facts["args"], env=env)
    assert done.returncode == 0 and not launched.exists(), done.stdout + done.stderr
    assert f"B {upstream.name} against A {trtmc.name}:" in done.stdout
    assert "client p50 at concurrency 1: cannot be judged by Welch's t: 1 run against 1" in done.stdout
    report = Report.model_validate_json((out / "report.json").read_bytes())
    (pair,) = report.differences
    assert (pair.a.profile, pair.b.profile) == (trtmc.name, upstream.name)
    assert "Differences between rows" in (out / "report.html").read_text()
