"""`--streaming` end to end with the published AIPerf: against the reference endpoint with its stream setting on, the
row records AIPerf's time to first token, inter-token latency and output tokens per second, grades the answers
from the streamed text and still joins the server's task time (from the stream's last chunk); on a TRTMC row whose
trtmc-server refuses stream=true (the test double, as trtmc-server's text schema does), the row is measured
unstreamed and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from doubles.toolchain import install_doubles
from helpers import QUICK, reference, row, run_main

pytestmark = pytest.mark.e2e

MODEL = "trtmc-videoqa-reference"
FIXTURES = Path(__file__).parent / "fixtures"
# Several words, so that each answer is several tokens (AIPerf's ITL needs two) and still names one option.
ANSWER = "The answer is B"


def test_a_streamed_row_has_ttft_itl_graded_answers_and_the_task_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with reference(tmp_path, stream=True, answer_text=ANSWER) as url:
        done = run_main(capsys, "qualify", "--url", url, "--model", MODEL, "--out", str(out), *QUICK, "--streaming")
    streamed = row(out, MODEL)
    aiperf = next(stage for stage in streamed.stages if stage.name == "aiperf")
    assert aiperf.status == "passed", (done.stderr, aiperf.detail)
    assert streamed.streamed and streamed.streaming_note is None
    assert "--streaming" in streamed.commands["aiperf"].argv
    profiling = [r for r in streamed.requests if r.phase == "profiling"]
    assert len(profiling) == 6
    for request in profiling:
        assert request.ttft_ms is not None and 0 < request.ttft_ms <= (request.client_latency_ms or 0), request
        assert request.itl_ms is not None and request.itl_ms >= 0, request
        assert request.output_tokens and request.output_tokens >= 2, request
        assert request.server_task_ms is not None, request  # joined from the stream's last chunk
        assert request.answer == ANSWER  # the streamed text, whole
        # Graded from that text: right where the expected letter is B, wrong elsewhere.
        assert request.grade == ("correct" if request.expected == "B" else "wrong"), request
    assert streamed.ttft and streamed.ttft.count == 6
    assert streamed.itl and streamed.itl.count == 6
    (level,) = streamed.sweep.levels if streamed.sweep else []
    assert level.ttft == streamed.ttft and level.itl == streamed.itl  # the level's own, its one run's here
    assert streamed.output_tokens_per_s and streamed.output_tokens_per_s > 0
    assert streamed.server_task_time and streamed.server_task_time.count == 6
    assert streamed.task_time_field == "response.trtmc_timing.model_call_ms"  # the stream's last chunk
    assert "TTFT" in (out / "report.md").read_text()


def test_a_trtmc_row_whose_server_refuses_stream_is_measured_unstreamed_and_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    argv = ("qualify", "--trtmc", str(FIXTURES / "trtmc_families"), "--out", str(out), "--profile", "vidqa-2b")
    done = run_main(capsys, *argv, *QUICK, "--streaming", env=install_doubles(tmp_path / "bin"))
    measured = row(out, "vidqa-2b")
    aiperf = next(stage for stage in measured.stages if stage.name == "aiperf")
    assert aiperf.status == "passed", (done.stderr, aiperf.detail)
    assert not measured.streamed and measured.ttft is None
    note = measured.streaming_note or ""
    assert "--streaming not used" in note and "stream=true is not supported" in note, note
    assert note in aiperf.detail
    assert "--streaming" not in measured.commands["aiperf"].argv
    assert measured.server_task_time and measured.server_task_time.count == 6


def test_the_self_test_streams_from_its_reference_endpoint(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--streaming on the self-test starts its reference endpoint with streaming on (the command recorded says so),
    and its row streams; the synthetic workload's one-letter answers are one token, so AIPerf gives no ITL."""
    out = tmp_path / "out"
    done = run_main(capsys, "qualify", "--out", str(out), *QUICK, "--streaming")
    assert done.returncode == 0, done.stderr
    measured = row(out, "reference-self-test.synthetic")
    assert measured.status == "endpoint-qualified" and measured.streamed, measured.status_reason
    assert "--stream" in measured.commands["serve"].argv
    assert measured.ttft and measured.ttft.count == 6 and measured.itl is None
    assert measured.accuracy and measured.accuracy.both_right == 1.0  # graded from the streamed letters
