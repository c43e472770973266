"""`trtmc-videoqa compare` without a server: its plan, its refusals, the workload copy and how reports treat its rows.

The real run (transformers serve on a tiny model, real AIPerf) is in test_real_server.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import av
import pytest
from helpers import no_traceback, one_message, run_main

from trtmc_videoqa.report.group import group_line
from trtmc_videoqa.results import COMPARISON_LABEL, ComparisonFacts, Provenance, ResultRow
from trtmc_videoqa.runs.compare import ComparisonRun
from trtmc_videoqa.serving.transformers_serve import (
    TransformersServeProblem,
    parse_version,
    serve_argv,
    serve_target,
)
from trtmc_videoqa.workloads import WorkloadError, builtin_workload, load_workload_file
from trtmc_videoqa.workloads.seal import seal_workload_file
from trtmc_videoqa.workloads.silent_audio_copy import frame_count, silent_audio_workload

FIXTURES = Path(__file__).parent / "fixtures"


def _bad_input(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    no_traceback(done)
    message = one_message(done)
    for needle in needles:
        assert needle in message, message


def test_the_dry_run_names_the_checkpoint_of_a_trtmc_profile_and_the_comparison_label(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("compare", "--trtmc", str(FIXTURES / "trtmc_families"), "--profile", "vidqa-2b", "--dry-run")
    done = run_main(capsys, *argv)
    assert done.returncode == 0, done.stderr
    assert "example/VidQA-2B@" in done.stdout and "row vidqa-2b.transformers-serve" in done.stdout
    assert "video transport http" in done.stdout and COMPARISON_LABEL in done.stdout


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        ((), ("--checkpoint",)),
        (("--checkpoint", "not a hub id"), ("neither a local folder nor a hub id",)),
        (("--checkpoint", "org/name@rev"), ("--revision",)),
        (("--trtmc", str(FIXTURES / "trtmc_families")), ("--profile",)),
        (("--trtmc", str(FIXTURES / "trtmc_families"), "--profile", "nope"), ("nope", "inventory")),
        (("--checkpoint", "org/name", "--profile", "../x"), ("--profile",)),
        (("--checkpoint", "org/name", "--transformers", "/nonexistent/transformers"), ("--transformers",)),
    ],
)
def test_bad_input_is_one_message(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    _bad_input(run_main(capsys, "compare", *argv, "--dry-run"), *needles)


def test_a_local_checkpoint_is_served_from_its_parent_under_its_bare_name(tmp_path: Path) -> None:
    folder = tmp_path / "my model"
    folder.mkdir()
    target = serve_target(str(folder))
    assert (target.model, target.cwd, target.checkpoint, target.revision) == ("my model", tmp_path, "my model", None)
    argv = serve_argv(Path("transformers"), target, host="127.0.0.1", port=8123, device="cpu")
    assert argv[-1] == "my model" and str(tmp_path) not in " ".join(argv)
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and argv[argv.index("--device") + 1] == "cpu"
    with pytest.raises(TransformersServeProblem, match="local folder"):
        serve_target(str(folder), "abc123")
    hub = serve_target("Qwen/Qwen2.5-VL-3B-Instruct", "abc123")
    assert (hub.model, hub.cwd) == ("Qwen/Qwen2.5-VL-3B-Instruct@abc123", None)


def test_the_server_version_is_read_from_its_own_output() -> None:
    assert parse_version("5.24.0\n") == "5.24.0"
    assert parse_version("some notice\ntransformers 5.25.1\n") == "5.25.1"
    assert parse_version("") is None and parse_version("no version here\n") is None


def _run(tmp_path: Path, compared: str | None = "vidqa-2b") -> ComparisonRun:
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text("{}")
    return ComparisonRun(
        target=serve_target(str(folder)),
        executable=Path("transformers"),
        device="cpu",
        dtype="auto",
        adaptation="silent-audio",
        compared_profile=compared,
        startup_timeout_s=60,
    )


def test_the_row_stands_beside_its_trtmc_profile_and_its_key_follows_the_local_files(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.profile == "vidqa-2b.transformers-serve"
    assert _run(tmp_path, None).profile == "model.transformers-serve"
    facts = run.facts("5.24.0", "none: as it is")
    before = run.identity(facts)
    (tmp_path / "model" / "config.json").write_text('{"changed": true}')
    assert run.identity(facts) != before  # a rebuilt local model is measured again


def test_the_silent_audio_copy_keeps_the_video_and_asks_for_the_workloads_frames(tmp_path: Path) -> None:
    original = builtin_workload("bigbuckbunny")
    copy = silent_audio_workload(original, tmp_path / "copy")
    assert copy.name == "bigbuckbunny-silent-audio" and copy.digest != original.digest
    assert load_workload_file(copy.file).digest == copy.digest  # sealed: loads with every check
    frames = frame_count(original)
    assert copy.spec.generation.extra_body == {"chat_template_kwargs": {"num_frames": frames}}
    for clip in original.spec.clips:
        with av.open(str(original.clip_path(clip.id))) as a, av.open(str(copy.clip_path(clip.id))) as b:
            assert not a.streams.audio and len(b.streams.audio) == 1
            video_a = [bytes(p) for p in a.demux(a.streams.video[0]) if p.size]
            video_b = [bytes(p) for p in b.demux(b.streams.video[0]) if p.size]
            assert video_a == video_b  # the frames a model sees are the same, packet for packet
        assert copy.clip(clip.id).video.audio is True


def test_a_workload_without_a_uniform_first_policy_cannot_be_copied(tmp_path: Path) -> None:
    shutil.copytree(builtin_workload("synthetic").root, tmp_path / "w")
    file = tmp_path / "w" / "workload.json"
    raw = json.loads(file.read_text())
    raw["sampling_policies"] = ["fps:2", "uniform:8"]
    file.write_text(json.dumps(raw))
    seal_workload_file(file)
    with pytest.raises(WorkloadError, match="uniform:N"):
        frame_count(load_workload_file(file))


def _row(profile: str, status: str, *, comparison: bool = False, mode: str = "trtmc") -> ResultRow:
    provenance = Provenance(tool_versions={}, workload="w", workload_digest="d", mode=mode)  # type: ignore[arg-type]
    facts = ComparisonFacts(server="transformers serve", checkpoint="org/m", device="cuda", media_adaptation="none")
    return ResultRow(
        profile=profile,
        status=status,  # type: ignore[arg-type]
        status_reason="r",
        verdict="temporal-video-qa" if mode == "trtmc" else None,
        normal_profile=True if mode == "trtmc" else None,
        provenance=provenance,
        comparison=facts if comparison else None,
    )


def test_comparison_rows_never_count_in_the_group() -> None:
    qualified = _row("p", "aiperf-qualified")
    comparison = _row("p.transformers-serve", "endpoint-qualified", comparison=True, mode="endpoint")
    beside = group_line([qualified, comparison])
    assert beside.status == "qualified" and f"1 {COMPARISON_LABEL} row(s)" in beside.line
    blocked = group_line([_row("p", "blocked"), comparison])
    assert blocked.status == "blocked"  # a qualified upstream row never lifts the group
    alone = group_line([comparison])
    assert alone.status == "comparison" and "no TRTMC model was qualified" in alone.line
