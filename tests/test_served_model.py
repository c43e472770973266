"""The served model checked: the name each answer gives (and GET /v1/models where that is asked) beside --model,
on capability.json, result.json and the reports; another model fails the row at the capability check, naming both.

The rule alone (serving/served_model.py), then the capability check against real loopback servers: the pinned-server
test double (tests/doubles/pinned_server.py), a raw server and the reference endpoint (a test double), and a whole
`qualify --endpoint` run that ends at the capability check (no AIPerf).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from doubles.pinned_server import PinnedServer
from helpers import QUICK, row, run_main
from raw_server import RawServer, response

from trtmc_videoqa.climb.prompts import workload_prompts
from trtmc_videoqa.plan.settings import RunSettings
from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, ReferenceConfig, ReferenceServer
from trtmc_videoqa.report.markdown import render_markdown
from trtmc_videoqa.results import Report, ResultRow
from trtmc_videoqa.serving.served_model import judge_served_model, same_model
from trtmc_videoqa.stages.capability import CapabilityRequest, check_over_transports
from trtmc_videoqa.workloads import builtin_workload

WRONG = "not-the-model-you-asked-for"
ASKED = "Qwen/Qwen2.5-VL-72B-Instruct"
PROMPT = workload_prompts(builtin_workload("synthetic"))[0]


# --- the rule ----------------------------------------------------------------------------------------------------


def test_a_hub_id_is_the_same_model_with_or_without_its_revision(tmp_path: Path) -> None:
    assert same_model(ASKED, f"{ASKED}@main", tmp_path) and same_model(f"{ASKED}@main", ASKED, tmp_path)
    assert same_model(f"{ASKED}@dev", f"{ASKED}@dev", tmp_path)
    assert not same_model(f"{ASKED}@v1", f"{ASKED}@v2", tmp_path)  # two revisions named: they must agree
    assert not same_model(ASKED, WRONG, tmp_path) and not same_model(ASKED, "Qwen/Qwen2.5-VL-7B-Instruct", tmp_path)


def test_a_local_folder_is_the_same_model_as_its_absolute_path_and_the_reverse(tmp_path: Path) -> None:
    folder = tmp_path / "models" / "my@model"  # an @ in a path is part of the path, not a revision
    folder.mkdir(parents=True)
    assert same_model("models/my@model", str(folder), tmp_path)
    assert same_model(str(folder), "./models/my@model", tmp_path)
    assert same_model(str(folder), str(folder) + "/", tmp_path)
    assert not same_model("models/my@model", str(tmp_path / "models" / "my"), tmp_path)
    assert not same_model("./models/other", str(folder), tmp_path)


def test_the_answers_decide_and_a_server_that_names_none_is_recorded_as_such(tmp_path: Path) -> None:
    same = judge_served_model(ASKED, [f"{ASKED}@main"], cwd=tmp_path)
    assert (same.verdict, same.answered) == ("same", [f"{ASKED}@main"])
    differs = judge_served_model(ASKED, [ASKED, WRONG], cwd=tmp_path)
    assert differs.verdict == "differs" and WRONG in differs.detail
    unnamed = judge_served_model(ASKED, [], None, "HTTP 404", cwd=tmp_path)
    assert unnamed.verdict == "unnamed" and "HTTP 404" in unnamed.detail
    listed_other = judge_served_model(ASKED, [], [WRONG], cwd=tmp_path)  # no name in the answers: the list decides
    assert listed_other.verdict == "differs" and repr(WRONG) in listed_other.detail
    assert judge_served_model(ASKED, [], [WRONG, ASKED], cwd=tmp_path).verdict == "same"
    many = judge_served_model(ASKED, [ASKED], [f"m{i}" for i in range(30)] + [ASKED], cwd=tmp_path)
    assert many.listed is not None and len(many.listed) == 21 and many.listed[-1] == "and 11 more"


# --- the capability check ----------------------------------------------------------------------------------------


def _check(url: str, model: str, folder: Path, transport: str = "data-url"):
    request = CapabilityRequest(url, model, None, PROMPT, 16, {}, {PROMPT.clip_id: url + "/clip.mp4"})
    return check_over_transports(request, RunSettings(video_transport=transport), folder)


def test_answers_naming_another_model_fail_the_check_naming_both(tmp_path: Path) -> None:
    with PinnedServer(ASKED, answer_model=WRONG) as server:
        outcome = _check(server.url, ASKED, tmp_path)
    assert outcome.stage.status == "failed" and outcome.transport == "data-url"  # the video was taken: still failed
    assert ASKED in outcome.stage.detail and WRONG in outcome.stage.detail and "/v1/models" in outcome.stage.detail
    assert ("GET", "/v1/models", None) in server.requests  # asked, as the answers named another model
    saved = json.loads((tmp_path / "capability.json").read_text())
    assert saved["model"] == WRONG and saved["served_model"]["verdict"] == "differs"
    assert saved["served_model"]["answered"] == [WRONG] and saved["served_model"]["listed"] == [WRONG]


def test_transformers_serves_hub_id_at_main_is_the_model_asked_for(tmp_path: Path) -> None:
    with PinnedServer(ASKED, answer_model=f"{ASKED}@main") as server:
        outcome = _check(server.url, ASKED, tmp_path)
    assert outcome.stage.status == "passed", outcome.stage.detail
    assert outcome.capability and outcome.capability.served_model
    assert outcome.capability.served_model.verdict == "same"
    assert [r for r in server.requests if r[0] == "GET"] == []  # the answers settled it: /v1/models not asked


def test_the_reference_endpoint_names_the_model_it_is_asked_for(tmp_path: Path) -> None:
    """The self-test's server answers under its own name, which is the name the self-test asks for."""
    with ReferenceServer(ReferenceConfig()) as server:
        outcome = _check(server.url, DEFAULT_MODEL_NAME, tmp_path)
    assert outcome.stage.status == "passed", outcome.stage.detail
    served = outcome.capability.served_model if outcome.capability else None
    assert served is not None and served.verdict == "same" and served.answered == [DEFAULT_MODEL_NAME]


def _nameless(n: int, request: bytes) -> bytes:
    if request.startswith(b"GET "):
        return response(b'{"detail":"Not Found"}', status="404 Not Found")
    body = {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": "A"}}]}
    return response(json.dumps(body).encode(), headers=("Content-Type: application/json",))


def test_a_server_that_names_no_model_is_recorded_as_such_and_not_failed(tmp_path: Path) -> None:
    with RawServer(_nameless) as server:
        outcome = _check(server.url, ASKED, tmp_path)
        asked = [r.split(b" ", 2)[1] for r in server.requests if r.startswith(b"GET ")]
    assert outcome.stage.status == "passed", outcome.stage.detail
    served = outcome.capability.served_model if outcome.capability else None
    assert served is not None and served.verdict == "unnamed" and served.answered == []
    assert served.listed is None and served.listed_note == "HTTP 404" and asked == [b"/v1/models"]


# --- a whole run, and the reports --------------------------------------------------------------------------------


def test_qualify_against_a_server_of_another_model_fails_at_capability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every answer and /v1/models name another model: the row is failed at capability, naming both; the row and
    the reports carry the names. (It used to be endpoint-qualified.)"""
    out = tmp_path / "out"
    with PinnedServer(WRONG, pinned=False) as server:  # whatever is asked, answered under another model's name
        run_main(capsys, "qualify", "--endpoint", server.url, "--model", "wanted-model", *QUICK, "--out", str(out))
    result = row(out, "wanted-model")
    assert (result.status, result.failed_stage) == ("failed", "capability"), result.status_reason
    assert "wanted-model" in result.status_reason and WRONG in result.status_reason
    assert result.served_model is not None and result.served_model.verdict == "differs"
    assert result.served_model.asked == "wanted-model" and result.served_model.answered == [WRONG]
    assert not (out / "checkpoints" / "wanted-model" / "aiperf").exists()  # nothing measured after it
    assert f"Served model: {WRONG!r}" in (out / "report.md").read_text()
    assert WRONG in (out / "report.html").read_text()


def test_the_report_says_the_served_model_in_one_line_and_old_rows_still_read() -> None:
    old = {"profile": "p", "status": "planned", "status_reason": "r"}  # a result.json from before the field
    assert ResultRow.model_validate(old).served_model is None
    judged = judge_served_model("m", ["m@main"], cwd=Path("/"))
    shown = ResultRow.model_validate(old | {"served_model": judged.model_dump()})
    report = Report(
        title="t", generated_by="g", sources=["s"], reference_self_test=False,
        group={"status": "endpoint", "line": "l"}, rows=[shown], counts={},
    )  # fmt: skip
    assert "- Served model: 'm@main' (asked for 'm': the same model)" in render_markdown(report)
