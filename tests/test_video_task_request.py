"""Issue 27, item 4: a video-to-text Task's native request in its own shape. The request tree is read from the
checkout's task adapter (names from the checkout, none from the tool); the identity check fills it with the
question and every frame of the clip, decoded once with PyAV, in presentation order with its time; through the
TRTMC doubles a capable row reaches identity with such requests."""

from __future__ import annotations

import base64
import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from doubles.toolchain import install_doubles
from helpers import HTTP, QUICK, qualify, run_main
from PIL import Image
from test_task_declarations import FIXTURE, capable_tree

from trtmc_videoqa.aiperf.dataset import Prompt
from trtmc_videoqa.inventory.request_template import SLOT, slots
from trtmc_videoqa.inventory.task_requests import native_requests
from trtmc_videoqa.media.errors import ClipError
from trtmc_videoqa.media.frames import FrameBudget, decode_frames, decode_timed_frames, rgb_sha256
from trtmc_videoqa.reference import ReferenceServer
from trtmc_videoqa.results import CheckpointEntry, NativeCapability, NativeRequest, ResultRow
from trtmc_videoqa.results.layout import FRAME_TIMES_FILE, NATIVE_FRAMES
from trtmc_videoqa.stages.identity.compare import clip_request_problem, sent_fields
from trtmc_videoqa.stages.identity.frame_choice import frame_choice
from trtmc_videoqa.stages.identity.video_request import FrameFiles, sampling_source, video_task_body
from trtmc_videoqa.workloads import builtin_workload

ADAPTER = "apps/benchmark/trtmc_benchmark/task_adapters.py"
VIDEO_H = "core/api/include/trtmc/video.h"

BUDGET = FrameBudget(max_frames=3000, max_pixels=500_000_000)  # the run settings' defaults


def _roles(request: NativeRequest) -> dict[str, list[str]]:
    """role -> the testcase keys its slot reads."""
    return {slot.get("role", "-"): slot["case"] for slot in slots(request.template) if "case" in slot}


def _prompt(clip_id: str = "forward") -> Prompt:
    workload = builtin_workload("synthetic")
    return Prompt(
        question_id="q1",
        clip_id=clip_id,
        clip_path=str(workload.clip_path(clip_id)),
        text="Which way does the red square move?",
    )


# --- reading the request tree ------------------------------------------------------------------------------------


def test_the_adapter_branch_reads_as_a_request_tree_with_roles() -> None:
    requests = native_requests(FIXTURE)
    video = requests["video_text_to_text"]
    assert video.operation == "answer_video" and video.video_view == f"{VIDEO_H}:5"
    assert _roles(video) == {
        "question": ["prompt"],
        "frames": ["inputs", "video", "frames"],
        "times": ["inputs", "video", "timestamps_seconds"],
        "max_new_tokens": ["max_new_tokens"],
        "temperature": ["temperature"],
    }
    message = video.template["messages"]
    assert len(message) == 1 and message[0]["role"] == "user"  # constants stay as the adapter writes them
    assert [part["type"] for part in message[0]["content"]] == ["text", "video"]
    assert clip_request_problem(video) is None
    assert sent_fields(video) == ["max_new_tokens", "messages", "temperature"]
    # a list of frame files without the view's times asks the caller to choose frames (frame_choice.py)
    decide = requests["structured_decision"]
    assert _roles(decide) == {"frame-list": ["inputs", "frame_paths"], "question": ["prompt"]}
    assert clip_request_problem(decide) is None
    # a Task whose request carries no frames keeps its fields, as before, and no tree
    assert requests["vision_language_generation"].template is None


def test_the_frame_and_time_names_are_the_checkouts(tmp_path: Path) -> None:
    root = shutil.copytree(FIXTURE, tmp_path / "trtmc")
    header = root / VIDEO_H
    header.write_text(header.read_text().replace("frames;", "images;").replace("timestamps_seconds;", "times_s;"))
    renamed = native_requests(root)["video_text_to_text"]
    assert "frames" not in _roles(renamed) and "times" not in _roles(renamed)  # no name of the tool's own
    problem = clip_request_problem(renamed) or ""
    assert "takes the testcase's 'inputs.video.timestamps_seconds', which the tool has no value for" in problem
    assert f"({ADAPTER}:" in problem
    adapter = root / ADAPTER
    text = adapter.read_text().replace('"frames"', '"images"').replace('"timestamps_seconds"', '"times_s"')
    adapter.write_text(text)
    both = native_requests(root)["video_text_to_text"]
    assert _roles(both)["frames"] == ["inputs", "video", "images"] and _roles(both)["times"][-1] == "times_s"
    assert clip_request_problem(both) is None
    # only the frames renamed in the header: the adapter's frame files beside the view's times are the view under
    # another name (perf_serving's frame lists with their times take the clip in complete order)
    header.write_text((FIXTURE / VIDEO_H).read_text().replace("frames;", "pictures;"))
    adapter.write_text((FIXTURE / ADAPTER).read_text())
    beside = native_requests(root)["video_text_to_text"]
    assert _roles(beside)["frames"] == ["inputs", "video", "frames"] and "frame-list" not in _roles(beside)


def _request(template: object) -> NativeRequest:
    return NativeRequest(operation="answer_video", fields=["messages"], template=template, video_view=f"{VIDEO_H}:5")


def test_what_cannot_be_filled_blocks_naming_it() -> None:
    question = {SLOT: {"case": ["prompt"], "role": "question"}}
    frames = {SLOT: {"case": ["video", "frames"], "each": "file", "role": "frames"}}
    unread = _request({"q": question, "f": frames, "x": {SLOT: {"unread": "build(case)"}}})
    assert "cannot read statically: build(case)" in (clip_request_problem(unread) or "")
    unknown = _request({"q": question, "f": frames, "seed": {SLOT: {"case": ["seed"]}}})
    assert "takes the testcase's 'seed', which the tool has no value for" in (clip_request_problem(unknown) or "")
    no_question = _request({"f": frames})
    assert "found 0 question and 1 frame slots" in (clip_request_problem(no_question) or "")
    listed = {SLOT: {"case": ["frame_paths"], "each": "file", "role": "frame-list"}}
    two = _request({"q": question, "f": frames, "g": listed})
    assert "found 1 question and 2 frame slots" in (clip_request_problem(two) or "")
    defaulted = _request({"q": question, "f": frames, "seed": {SLOT: {"case": ["seed"], "default": 7}}})
    assert clip_request_problem(defaulted) is None


# --- decoding and filling ----------------------------------------------------------------------------------------


def test_every_frame_decoded_once_written_in_order_with_times(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trtmc_videoqa.media.frames as frames_module

    calls: list[object] = []
    real = frames_module.TimedFrames.__iter__

    def counted(self):  # type: ignore[no-untyped-def]
        calls.append(self.source)
        return real(self)

    monkeypatch.setattr(frames_module.TimedFrames, "__iter__", counted)
    files = FrameFiles(tmp_path / "row" / "private" / "native-frames", tmp_path / "row", BUDGET)
    prompt = _prompt()
    clip = files.of(prompt)
    assert files.of(prompt) is clip and len(calls) == 1  # the second question on the clip decodes nothing
    expected = decode_frames(Path(prompt.clip_path), range(len(clip.pngs)))
    assert len(clip.pngs) == 48 and len(expected) == 48
    for png, pixels in zip(clip.pngs, expected, strict=True):  # lossless: the pixels PyAV decoded, in order
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(png)).convert("RGB")), pixels)
    assert list(clip.times) == sorted(clip.times) and clip.times[0] == 0.0 and clip.times[-1] > clip.times[0]
    listing = json.loads((tmp_path / "row" / NATIVE_FRAMES / "forward" / FRAME_TIMES_FILE).read_text())
    assert listing["timestamps_seconds"] == list(clip.times)
    assert listing["frames"][0] == "frame-000000.png" and len(listing["frames"]) == 48
    assert all((tmp_path / "row/private/native-frames/forward" / name).is_file() for name in listing["frames"])
    sent = files.sent()
    assert [(s.clip_id, s.frame_count, s.frames) for s in sent] == [("forward", 48, "private/native-frames/forward")]
    assert sent[0].frame_indices == list(range(48))


def test_the_body_is_the_adapters_tree_filled(tmp_path: Path) -> None:
    request = native_requests(FIXTURE)["video_text_to_text"]
    prompt = _prompt("reversed")
    clip = FrameFiles(tmp_path / "frames", tmp_path, BUDGET).of(prompt)
    body = video_task_body(request, prompt, clip, max_tokens=16)
    assert set(body) == {"request"} and set(body["request"]) == {"messages", "max_new_tokens", "temperature"}
    assert body["request"]["max_new_tokens"] == 16 and body["request"]["temperature"] == 0
    (message,) = body["request"]["messages"]
    text, video = message["content"]
    assert message["role"] == "user" and text == {"type": "text", "text": prompt.text}
    assert set(video) == {"type", "frames", "timestamps_seconds"} and video["type"] == "video"
    assert video["timestamps_seconds"] == list(clip.times) and len(video["frames"]) == len(clip.pngs)
    assert video["frames"][3] == {"$file": {"suffix": ".png", "b64": base64.b64encode(clip.pngs[3]).decode()}}


# --- a route that asks the caller to choose frames: the family's sampling, else the workload's -------------------


def _entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict | None) -> CheckpointEntry:
    from trtmc_videoqa.inventory.audit import run_inventory

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    entry = next(e for e in run_inventory(FIXTURE).entries if e.profile == "vidqa-2b-native")
    if config is not None:
        snapshot = tmp_path / "hub/models--example--VidQA-2B/snapshots" / entry.revision
        snapshot.mkdir(parents=True)
        (snapshot / "video_preprocessor_config.json").write_text(json.dumps(config))
    return entry


@pytest.mark.parametrize(
    ("config", "indices", "source"),
    [
        ({"num_frames": 4}, [0, 16, 31, 47], "the family's processor configuration (video_preprocessor_config.json of "
         "example/VidQA-2B@111111111111: num_frames=4), as uniform:4,round,where=client"),
        ({"fps": 2, "min_frames": 2}, [0, 16, 31, 47], "the family's processor configuration (video_preprocessor_"
         "config.json of example/VidQA-2B@111111111111: fps=2, min_frames=2), as fps:2,round,min=2,where=client"),
        ({"do_sample_frames": False}, list(range(48)), "(video_preprocessor_config.json of example/VidQA-2B@"),
        (None, [0, 7, 13, 20, 27, 34, 40, 47], "the workload's policy uniform:8,round,where=server: the family "
         "declares none (no video processor configuration of example/VidQA-2B at its pinned revision"),
    ],
)  # fmt: skip
def test_a_route_asking_for_frames_gets_the_familys_sampling_else_the_workloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: dict | None, indices: list[int], source: str
) -> None:
    choice = frame_choice(_entry(tmp_path, monkeypatch, config), builtin_workload("synthetic"))
    assert source in choice.source
    files = FrameFiles(tmp_path / "frames", tmp_path, BUDGET, choice)
    prompt = _prompt()
    clip = files.of(prompt)
    assert list(clip.indices) == indices
    every = decode_timed_frames(Path(prompt.clip_path)).frames
    assert list(clip.times) == [every[index].seconds for index in indices]
    request = native_requests(FIXTURE)["structured_decision"]
    body = video_task_body(request, prompt, clip, max_tokens=8)["request"]
    assert set(body) == {"frame_paths", "prompt"} and len(body["frame_paths"]) == len(indices)
    said = sampling_source(request, files.sent(), choice)
    assert said.startswith(choice.source) and "the route asks the caller to choose frames (forward: " in said


# --- through the TRTMC doubles -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def capable_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`qualify --profile vidqa-2b-native` on the capable tree (its family declares and binds video_text_to_text)
    through the TRTMC doubles; one AIPerf run."""
    where = tmp_path_factory.mktemp("video-task")
    root = capable_tree(where / "trtmc")
    env = install_doubles(where / "bin")
    out = where / "out"
    profile = ("--profile", "vidqa-2b-native")
    done = qualify("--trtmc", str(root), "--out", str(out), *profile, *QUICK, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "checkpoints" / "vidqa-2b-native"


@pytest.mark.e2e
def test_a_capable_row_reaches_identity_with_every_frame_in_order(capable_run: Path) -> None:
    row = ResultRow.model_validate_json((capable_run / "result.json").read_text())
    identity = row.identity
    assert identity is not None and identity.verdict == "held", identity
    assert identity.native_route == "perf_serving POST /v1/tasks/answer_video"
    assert identity.request_fields == ["max_new_tokens", "messages", "temperature"]
    assert identity.sampling is not None and identity.sampling.startswith("the family's: every frame of each clip")
    assert f"the Task's video view ({VIDEO_H}:5)" in identity.sampling
    workload = builtin_workload("synthetic")
    decoded = {c.id: decode_timed_frames(workload.clip_path(c.id)).frames for c in workload.spec.clips}
    assert {c.clip_id: c.frame_count for c in identity.clips} == {k: len(v) for k, v in decoded.items()}
    # what the perf_serving double received, request by request: every frame, in order, with PyAV's times
    received = [json.loads(line) for line in (capable_run / "private/native-scratch/video-task-requests.jsonl").open()]
    by_id = {pair.native.request_id: pair.clip_id for pair in identity.pairs}
    assert sorted(r["request_id"] for r in received) == sorted(by_id)
    for record in received:
        frames = decoded[by_id[record["request_id"]]]
        assert record["frame_sha256"] == [rgb_sha256(frame.rgb) for frame in frames]
        assert record["timestamps_seconds"] == [frame.seconds for frame in frames]
        assert record["timestamps_seconds"] == sorted(record["timestamps_seconds"])
    assert all(pair.native.server_task_ms is not None for pair in identity.pairs)  # its --records, joined by id
    report = (capable_run.parents[1] / "report.md").read_text()
    assert f"Frames sent: {identity.sampling}" in report  # the report says whose sampling, too


def test_the_double_refuses_frames_whose_times_go_back(tmp_path: Path) -> None:
    """The perf_serving double checks order, so a held identity means the frames arrived in order."""
    from starlette.applications import Starlette

    sys.path.insert(0, str(FIXTURE / "apps/perf_serving"))
    try:
        from trtmc_perf_serving.video_task import video_task_route
    finally:
        sys.path.remove(str(FIXTURE / "apps/perf_serving"))
    request = native_requests(FIXTURE)["video_text_to_text"]
    prompt = _prompt()
    clip = FrameFiles(tmp_path / "frames", tmp_path, BUDGET).of(prompt)
    body = video_task_body(request, prompt, clip, max_tokens=8)
    (tmp_path / "records.jsonl").touch()
    app = Starlette(routes=[video_task_route(tmp_path / "records.jsonl", tmp_path)])
    with ReferenceServer(app=app) as server:  # its socket and uvicorn, serving the double's route alone
        route = server.url + "/v1/tasks/answer_video"
        good = HTTP.post(route, json=body, headers={"X-Request-ID": "r1"}, timeout=60)
        assert good.status_code == 200 and good.json()["text"]
        video = body["request"]["messages"][0]["content"][1]
        video["timestamps_seconds"] = list(reversed(video["timestamps_seconds"]))
        back = HTTP.post(route, json=body, timeout=60)
        assert back.status_code == 400 and "nondecreasing" in back.json()["error"]["message"]


# --- where chat refuses the video: the Task's native route is the only one ---------------------------------------


def _chat_refuses_video(where: Path, **knobs: str) -> Path:
    """vidqa-2b-native of the capable tree through the TRTMC doubles, trtmc-server's chat refusing any video part
    (as TRTMC's schema does today), with the doubles' `knobs`; its checkpoints folder. No AIPerf run: the row does
    not get that far."""
    root = capable_tree(where / "trtmc")
    env = install_doubles(where / "bin") | {"TRTMC_SERVER_DOUBLE_TEXT_ONLY": "1"} | knobs
    profile = ("--profile", "vidqa-2b-native")
    done = run_main(None, "qualify", "--trtmc", str(root), "--out", str(where / "out"), *profile, *QUICK, env=env)
    assert "Traceback" not in done.stdout + done.stderr
    return where / "out" / "checkpoints"


@pytest.fixture(scope="module")
def chat_refuses_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _chat_refuses_video(tmp_path_factory.mktemp("chat-refuses"))


def test_a_video_task_chat_refuses_answers_through_the_native_route_only(chat_refuses_video: Path) -> None:
    row = ResultRow.model_validate_json((chat_refuses_video / "vidqa-2b-native/result.json").read_text())
    stages = {stage.name: stage for stage in row.stages}
    assert stages["capability"].status == "passed" and stages["capability"].detail.startswith(
        "answered through the native Task route only (perf_serving POST /v1/tasks/answer_video): "
    )
    assert row.status == "blocked" and stages["aiperf"].status == "blocked"
    assert row.status_reason.startswith("aiperf: AIPerf speaks OpenAI chat, and trtmc-server's chat refused")
    assert row.status_evidence == ["capability.json", "capability-native.json"]
    assert "timing" not in stages and row.identity is None  # nothing measured is claimed
    evidence = NativeCapability.model_validate_json(
        (chat_refuses_video / "vidqa-2b-native/capability-native.json").read_text()
    )
    assert evidence.chat_refusal.startswith("HTTP 400") and evidence.answer.http_status == 200
    assert evidence.answer.request_id.startswith("capability-native-synthetic-")
    assert evidence.answer.answer and repr(evidence.answer.answer) in stages["capability"].detail
    assert evidence.sampling is not None and evidence.sampling.startswith("the family's: every frame")
    log = chat_refuses_video / "vidqa-2b-native/private/native-scratch/video-task-requests.jsonl"
    (received,) = [json.loads(line) for line in log.read_text().splitlines()]  # one request: the first pair
    clip = decode_timed_frames(builtin_workload("synthetic").clip_path(evidence.clips[0].clip_id)).frames
    assert received["frame_sha256"] == [rgb_sha256(frame.rgb) for frame in clip]


def test_without_a_native_video_request_the_chat_refusal_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rejected chat request stays the row's end where the Task has no native video request (a clip-file route, or
    none): nothing else is tried and nothing is stopped."""
    from types import SimpleNamespace

    import trtmc_videoqa.stages.trtmc_capability as stage
    from trtmc_videoqa.climb.protocol import Stop
    from trtmc_videoqa.results import StageResult

    refusal = Stop(at=None, stage=StageResult(name="capability", status="rejected", detail="HTTP 400"))  # type: ignore[arg-type]
    monkeypatch.setattr(stage, "capability", lambda cp, climb: refusal)  # a TEST DOUBLE of the chat check's outcome
    clip_route = native_requests(FIXTURE)["vision_language_generation"]
    closed: list[bool] = []
    resources = SimpleNamespace(close=lambda: closed.append(True))  # trtmc-server stays up: nothing is stopped
    for request in (None, clip_route):
        cp = SimpleNamespace(entry=SimpleNamespace(native_request=request), resources=resources)
        assert stage.trtmc_capability(cp, None) is refusal  # type: ignore[arg-type]
    assert closed == []


def test_a_native_route_that_does_not_answer_leaves_the_row_unsupported(tmp_path: Path) -> None:
    """Chat refused the video and so did the native route: the refusal stands, with the native try beside it."""
    checkpoints = _chat_refuses_video(tmp_path, TRTMC_PERF_SERVING_DOUBLE_NO_VIDEO_ROUTE="1")
    row = ResultRow.model_validate_json((checkpoints / "vidqa-2b-native/result.json").read_text())
    assert row.status == "unsupported" and row.status_evidence == ["capability.json"]
    (capability,) = [stage for stage in row.stages if stage.name == "capability"]
    assert capability.status == "rejected" and capability.evidence == ["capability.json", "capability-native.json"]
    assert "the native Task route was tried too (perf_serving POST /v1/tasks/answer_video): HTTP 400" in (
        capability.detail
    )
    assert [stage.name for stage in row.stages][-1] == "capability"  # nothing after it, nothing measured
    native = checkpoints / "vidqa-2b-native/capability-native.json"
    evidence = NativeCapability.model_validate_json(native.read_text())
    assert evidence.answer.http_status == 400 and evidence.answer.answer is None


def _big_clip(path: Path, *, width: int, height: int, frames: int) -> Path:
    """A clip of plain frames: small on disk, many pixels decoded."""
    from fractions import Fraction

    import av

    with av.open(str(path), "w", format="mp4") as container:
        video = container.add_stream("libx264", rate=25)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        for index in range(frames):
            frame = av.VideoFrame.from_ndarray(np.full((height, width, 3), index % 255, np.uint8), format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, 25)
            container.mux(video.encode(frame))
        container.mux(video.encode())
    return path


@pytest.mark.parametrize(
    ("size", "budget", "option"),
    [
        ((640, 480, 40), FrameBudget(max_frames=3000, max_pixels=640 * 480 * 10), "--max-pixels"),
        ((16, 16, 400), FrameBudget(max_frames=100, max_pixels=500_000_000), "--max-frames"),
    ],
)
def test_a_clip_past_the_frame_budget_is_refused_one_frame_at_a_time(
    tmp_path: Path, size: tuple[int, int, int], budget: FrameBudget, option: str
) -> None:
    """The native route decoded every frame into memory at once (a 40 KB clip of 2000x1500 x 200 frames peaked at
    3.9 GB) and wrote a file per frame without limit: frames are now decoded and written one at a time, and the
    clip is refused, naming the option to raise, before the frame that would pass the budget."""
    width, height, count = size
    clip = _big_clip(tmp_path / "big.mp4", width=width, height=height, frames=count)
    prompt = Prompt(question_id="q", clip_id="big", clip_path=str(clip), text="?")
    files = FrameFiles(tmp_path / "frames", tmp_path, budget)
    with pytest.raises(ClipError, match=f"raise {option}"):
        files.of(prompt)
    written = list((tmp_path / "frames" / "big").glob("*.png"))
    assert len(written) <= min(budget.max_frames, budget.max_pixels // (width * height))


def test_a_native_body_over_the_body_limit_is_not_built(tmp_path: Path) -> None:
    request = native_requests(FIXTURE)["video_text_to_text"]
    prompt = _prompt()
    clip = FrameFiles(tmp_path / "frames", tmp_path, BUDGET).of(prompt)
    assert clip.body_bytes() > 20_000
    with pytest.raises(ValueError, match="over --body-limit 20,000: raise it"):
        video_task_body(request, prompt, clip, max_tokens=8, body_limit=20_000)
    body = video_task_body(request, prompt, clip, max_tokens=8, body_limit=clip.body_bytes() + 4096)
    assert len(json.dumps(body)) <= clip.body_bytes() + 4096  # the estimate bounds the body it lets through
