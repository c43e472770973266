"""A setup error is not a capability gap: after a refused video request, one plain text request to the same model
with the same key tells a server that takes no video (text answered: `unsupported`, both answers its evidence) from
one set up or named wrong (text refused too: `failed` at capability, the server's words and the fix). A server
error on the video is a failure in the server's words, and its advice never names a transport already refused.

Against real loopback servers: the pinned-server test double (tests/doubles/pinned_server.py, as `transformers
serve MODEL` answers another model's name), the reference endpoint (a test double) and a raw server.
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
from trtmc_videoqa.serving.capability import setup_hint
from trtmc_videoqa.stages.capability import CapabilityRequest, check_over_transports
from trtmc_videoqa.workloads import builtin_workload

PINNED = "org/the-control-model"
PROMPT = workload_prompts(builtin_workload("synthetic"))[0]


def _check(url: str, model: str, folder: Path, transport: str = "data-url", api_key: str | None = None):
    request = CapabilityRequest(url, model, api_key, PROMPT, 16, {}, {PROMPT.clip_id: url + "/clip.mp4"})
    return check_over_transports(request, RunSettings(video_transport=transport), folder)


def test_a_wrong_model_on_a_pinned_server_is_failed_with_the_hint_never_unsupported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case of the issue: `transformers serve` pinned to the control model, `--model` a typo. Its 400 to the
    video used to make the row `unsupported`; the same 400 to a plain text request makes it a setup error."""
    out = tmp_path / "out"
    with PinnedServer(PINNED) as server:
        run_main(
            capsys, "qualify", "--endpoint", server.url, "--model", "org/the-contrl-model", *QUICK, "--out", str(out)
        )
    result = row(out, "org--the-contrl-model")
    assert (result.status, result.failed_stage) == ("failed", "capability"), result.status_reason
    reason = result.status_reason
    assert "plain text request to this model was refused too" in reason and "Server is pinned to" in reason
    assert "check --model" in reason and f"it lists {PINNED!r} at /v1/models" in reason
    posts = [model for method, _, model in server.requests if method == "POST"]
    assert posts == ["org/the-contrl-model", "org/the-contrl-model"]  # the video, then one plain text request
    saved = json.loads((out / "checkpoints" / "org--the-contrl-model" / "capability.json").read_text())
    assert saved["http_status"] == 400 and saved["text_only"]["http_status"] == 400
    assert "Server is pinned to" in saved["text_only"]["detail"]


def test_a_server_that_answers_text_but_refuses_video_is_unsupported_with_both_answers(tmp_path: Path) -> None:
    with PinnedServer(PINNED, video="refuse") as server:
        outcome = _check(server.url, PINNED, tmp_path)
    assert outcome.stage.status == "rejected", outcome.stage.detail
    assert "takes no video_url part" in outcome.stage.detail
    assert "a plain text request to the same model was answered (HTTP 200)" in outcome.stage.detail
    saved = json.loads((tmp_path / "capability.json").read_text())
    assert (saved["http_status"], saved["rejected"]) == (400, True)  # the video's answer
    assert (saved["text_only"]["http_status"], saved["text_only"]["answer"]) == (200, "A")  # the text's answer
    assert saved["served_model"]["verdict"] == "same"


def test_the_reference_endpoint_refusing_a_clip_it_cannot_decode_is_still_a_rejection(tmp_path: Path) -> None:
    """The reference endpoint answers plain text (as the video chat server it stands for), so a clip it cannot
    decode stays `rejected` after the text-only request; the same run naming another model is `failed`."""
    from trtmc_videoqa.reference import DEFAULT_MODEL_NAME, ReferenceConfig, ReferenceServer
    from trtmc_videoqa.reference.app import TEXT_ONLY_ANSWER
    from trtmc_videoqa.serving.clip_server import ClipServer
    from trtmc_videoqa.transports.clips import ServedFile

    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all" * 50)

    with ReferenceServer(ReferenceConfig()) as server, ClipServer({"/j.mp4": ServedFile(junk, "video/mp4")}) as clips:
        urls = {PROMPT.clip_id: clips.url_for("/j.mp4")}
        request = CapabilityRequest(server.url, DEFAULT_MODEL_NAME, None, PROMPT, 16, {}, urls)
        outcome = check_over_transports(request, RunSettings(video_transport="http"), tmp_path)
    assert outcome.stage.status == "rejected" and "cannot be decoded" in outcome.stage.detail
    assert outcome.capability and outcome.capability.text_only
    answer = outcome.capability.text_only.answer
    assert answer and TEXT_ONLY_ANSWER.startswith(answer)  # cut to the few tokens the text request asks for


def test_a_server_error_on_the_video_names_no_transport_the_server_has_refused(tmp_path: Path) -> None:
    """A bare 500 to a clip fetched by URL (transformers serve's decoder without FFmpeg): the server's words and its
    log, never `try --video-transport data-url` (which it refuses); no text request, as nothing was refused."""
    with PinnedServer(PINNED, video="fail") as server:
        over_http = _check(server.url, PINNED, tmp_path, "http")
        over_data = _check(server.url, PINNED, tmp_path / "data", "data-url")
        auto = _check(server.url, PINNED, tmp_path / "auto", "auto")
    assert over_http.stage.status == "failed" and "HTTP 500: Internal Server Error" in over_http.stage.detail
    assert "data-url" not in over_http.stage.detail and "its own log says why" in over_http.stage.detail
    # A bare 500 to a clip in the body is how servers that fetch only URLs refuse one: http is named there.
    assert "try --video-transport http" in over_data.stage.detail
    assert "try --video-transport" not in auto.stage.detail  # both were tried and both refused
    assert [r for r in server.requests if r[0] == "POST"] == [("POST", "/v1/chat/completions", PINNED)] * 4
    assert over_http.capability and over_http.capability.text_only is None


def _key_refused(n: int, request: bytes) -> bytes:
    """The video's content refused (400); a plain text request refused for the key (401)."""
    if b'"video_url"' in request:
        return response(b'{"detail":"bad request"}', status="400 Bad Request")
    return response(b'{"error":{"message":"invalid api key"}}', status="401 Unauthorized")


def test_a_text_request_refused_for_the_key_gives_the_key_hint(tmp_path: Path) -> None:
    with RawServer(_key_refused) as server:
        outcome = _check(server.url, PINNED, tmp_path, api_key="sk-wrong")
    assert outcome.stage.status == "failed" and "HTTP 401" in outcome.stage.detail
    assert "--api-key-env" in outcome.stage.detail and "invalid api key" in outcome.stage.detail


def test_the_hint_fits_the_answer() -> None:
    url = "http://127.0.0.1:1/v1"
    assert "--api-key-env NAME" in setup_hint(401, "", url, None)
    assert "refused the API key" in setup_hint(403, "", url, None)
    pinned = setup_hint(400, "Server is pinned to 'a'; requested 'b'.", url, ["a"])
    assert pinned.startswith("check --model") and "it lists 'a' at /v1/models" in pinned
    assert setup_hint(404, '{"error":{"code":"model_not_found"}}', url, None).startswith("check --model")
    path = setup_hint(404, '{"detail":"Not Found"}', url, None)
    assert "check --endpoint" in path and "/v1/v1/chat/completions" in path  # where the requests went
    assert "its own log" in setup_hint(500, "Internal Server Error", url, None)
    assert "no answer" in setup_hint(None, "", url, None)
