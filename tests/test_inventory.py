"""The audit on fixture trees of both layouts: verdicts, evidence, variants, catalog status, reconciliation."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trtmc_videoqa.inventory import NotACheckout, run_inventory
from trtmc_videoqa.inventory.markdown import render_inventory_markdown
from trtmc_videoqa.inventory.reconcile import reconcile
from trtmc_videoqa.results import VERDICTS, Inventory, json_schemas

FIXTURES = Path(__file__).parent / "fixtures"
NEW = FIXTURES / "trtmc_families"
OLD = FIXTURES / "trtmc_e2e"
REPO = Path(__file__).resolve().parents[1]


def _rows(inventory: Inventory) -> dict[str, object]:
    return {entry.profile: entry for entry in inventory.entries}


@pytest.fixture(scope="module")
def new_inventory() -> Inventory:
    return run_inventory(NEW)


@pytest.fixture(scope="module")
def old_inventory() -> Inventory:
    return run_inventory(OLD)


def _line(root: Path, file: str, line: int) -> str:
    return (root / file).read_text().splitlines()[line - 1]


def test_layouts_are_detected(new_inventory: Inventory, old_inventory: Inventory) -> None:
    assert new_inventory.layout == "families"
    assert old_inventory.layout == "e2e-models"


def test_one_row_per_manifest_nothing_dropped(new_inventory: Inventory, old_inventory: Inventory) -> None:
    for inventory, root, pattern in (
        (new_inventory, NEW, "families/*/tests/manifests/*.json"),
        (old_inventory, OLD, "tests/e2e/models/*/manifests/*.json"),
    ):
        manifests = sorted(p.relative_to(root).as_posix() for p in root.glob(pattern))
        assert sorted(entry.manifest for entry in inventory.entries) == manifests


def test_every_verdict_is_covered_by_the_fixtures(new_inventory: Inventory, old_inventory: Inventory) -> None:
    seen = {e.verdict for e in new_inventory.entries} | {e.verdict for e in old_inventory.entries}
    assert seen == set(VERDICTS)


@pytest.mark.parametrize(
    ("profile", "verdict", "in_group"),
    [
        ("vidqa-2b", "temporal-video-qa", True),
        ("clefish", "partial", True),
        ("vlm-3b", "image-only", True),
        ("flatvlm-1b", "image-only", True),
        ("logvlm-1b", "image-only", True),
        ("wanlike-t2v", "video-generation", True),
        ("wanlike-imagegen-video", "video-generation", True),
        ("wanlike-imagegen", "image-only", False),
        ("tracker-s", "segmentation-tracking", True),
        ("classifier-vit", "not-generative", True),
        ("embedder-base", "not-generative", False),
        ("textlm-1b", "text-or-speech", False),
        ("broken", "invalid", False),
        ("missing-fields", "invalid", False),
    ],
)
def test_newer_layout_verdicts(new_inventory: Inventory, profile: str, verdict: str, in_group: bool) -> None:
    entry = _rows(new_inventory)[profile]
    assert (entry.verdict, entry.in_group) == (verdict, in_group)


@pytest.mark.parametrize(
    ("profile", "verdict"),
    [
        ("oldvideo-7b", "temporal-video-qa"),
        ("oldvl-2b", "image-only"),
        ("oldomni-30b", "image-only"),
        ("olddiff-video-l0", "video-generation"),
        ("olddiff-edit", "image-only"),
        ("oldsam-local", "segmentation-tracking"),
        ("oldlm-125m", "text-or-speech"),
        ("oldlm-bad", "invalid"),
    ],
)
def test_older_layout_verdicts(old_inventory: Inventory, profile: str, verdict: str) -> None:
    assert _rows(old_inventory)[profile].verdict == verdict


def test_temporal_verdict_cites_the_lines_that_show_it(new_inventory: Inventory) -> None:
    entry = _rows(new_inventory)["vidqa-2b"]
    assert entry.gap is None and not entry.ambiguous
    cited = {(e.file, _line(NEW, e.file, e.line)) for e in entry.evidence if e.line}
    files = {file for file, _ in cited}
    assert "families/vidqa/tests/manifests/vidqa-2b.json" in files
    assert any("video_frame_paths" in text for _, text in cited)
    assert any("video_token" in text or "video_pad" in text for _, text in cited)
    assert any("timestamp" in text for file, text in cited if file.startswith("families/vidqa/runtime"))


def test_gap_evidence_names_patterns_and_files_without_hits(new_inventory: Inventory) -> None:
    entry = _rows(new_inventory)["vlm-3b"]
    assert "one image" in entry.gap
    searched = {g.searched_for: g for g in entry.gap_evidence}
    assert any("time axis" in name for name in searched)
    code_gap = next(g for name, g in searched.items() if "video input" in name)
    assert code_gap.files_without_hits == ["families/vlm/runtime/preprocess.cpp"]
    assert "video_token" in code_gap.patterns
    # the positive line for the gap: the single-image path
    assert any(
        e.file == "families/vlm/runtime/preprocess.cpp" and "image_grid_hws" in e.excerpt for e in entry.evidence
    )


def test_frames_without_a_time_axis_are_ambiguous_not_qualified(new_inventory: Inventory) -> None:
    entry = _rows(new_inventory)["flatvlm-1b"]
    assert entry.ambiguous and "time axis" in entry.ambiguity
    assert "flatvlm-1b" not in new_inventory.summary.capable


def test_a_logging_timestamp_beside_video_frames_is_no_time_axis(new_inventory: Inventory) -> None:
    code = NEW / "families" / "logvlm"
    text = "".join(path.read_text() for path in sorted(code.rglob("*")) if path.suffix in (".py", ".h"))
    # the fixture has what the old bare-word markers took for a time axis: video_frames and a logging timestamp
    assert "video_frames" in text and re.search(r"\btimestamp\b", text)
    entry = _rows(new_inventory)["logvlm-1b"]
    assert entry.verdict == "image-only" and entry.in_group
    assert entry.ambiguous and "no time axis" in entry.ambiguity
    assert "logvlm-1b" not in new_inventory.summary.capable
    time_gap = next(g for g in entry.gap_evidence if "time axis" in g.searched_for)
    assert time_gap.files_without_hits == ["families/logvlm/model.py", "families/logvlm/runtime/log.h"]
    assert any(e.file == "families/logvlm/model.py" and "video_frames" in e.excerpt for e in entry.evidence)


@pytest.mark.parametrize(
    ("code", "is_time_axis"),
    [
        ("struct VisionFrame {\n  int grid_height;\n  bool video;\n  double timestamp;\n};", True),
        ("@dataclass\nclass VideoFrame:\n    pixels: bytes\n\n    timestamp_s: float\n", True),
        ("class VideoFrame:\n    pixels: bytes\n\nclass Request:\n    timestamp: float\n", False),
        ("t = frames[i].timestamp", True),
        ("double t = frame->timestamp;", True),
        ("frame_timestamps = sample(clip)", True),
        ("positions = rope(video_grid_thw)", True),
        ("def vision(pixels, grid_thw):", True),
        ("second_per_grid_ts = [0.5]", True),
        ("temporal_position_ids = ids[0]", True),
        ("timestamps_seconds = request['timestamps_seconds']", True),
        ("log.info('at %s', timestamp)", False),
        ("struct LogRecord {\n  double timestamp;\n};", False),
        ("class Request:\n    timestamp: float\n", False),
        ("record.timestamp = now()", False),
        ("temporal_patch_size = 2", False),  # a patch layout (image-only Qwen-VL families have it too)
        ("image_grid_thw = grid(image)", False),
        ("time_axis = -1  # a series", False),
    ],
)
def test_time_axis_markers_need_video_specific_evidence(code: str, is_time_axis: bool) -> None:
    from trtmc_videoqa.inventory.family_source import TIME_AXIS

    assert bool(TIME_AXIS.regex.search(code)) is is_time_axis


# Searched in a child process: `re` holds the interpreter while it searches, so only a process can be ended.
SEARCH_STDIN = (
    "import sys\n"
    "from trtmc_videoqa.inventory.family_source import TIME_AXIS\n"
    "print('no match' if TIME_AXIS.regex.search(sys.stdin.read()) is None else 'match')\n"
)


def test_time_axis_markers_stay_linear_on_long_frame_classes() -> None:
    body = "".join(f"        field_{i} = {i}\n\n" for i in range(2000))
    text = ("class FooFrame:\n" + body + "x = 1\nstruct BarFrame {\n" + "  int x;\n" * 2000 + "};\n") * 5
    # About 350 KB that a backtracking pattern takes hours on and a linear one well under a second; the timeout
    # only ends such a hang (and fails the test), it measures nothing.
    try:
        done = subprocess.run(
            [sys.executable, "-c", SEARCH_STDIN], input=text, capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the time-axis search did not finish in 120 s on 350 KB: it backtracks")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no match"


@pytest.mark.parametrize(
    ("profile", "root"), [("textlm-1b", NEW), ("wanlike-imagegen", NEW), ("oldlm-125m", OLD), ("olddiff-edit", OLD)]
)
def test_absence_claims_name_the_searches_and_the_files_without_hits(
    new_inventory: Inventory, old_inventory: Inventory, profile: str, root: Path
) -> None:
    entry = _rows(new_inventory if root is NEW else old_inventory)[profile]
    assert entry.gap and entry.gap_evidence
    keys = next(g for g in entry.gap_evidence if "input keys in the manifest" in g.searched_for)
    assert keys.files_without_hits == [entry.manifest]
    assert "video_frame_paths" in keys.patterns and "frame_paths" in keys.patterns
    visual_claim = entry.verdict == "text-or-speech" or entry.task == "image_generation"
    assert ("test_image" in keys.patterns) is visual_claim  # an edit row takes an image: only frames are searched

    def named(value: object) -> set[str]:  # the claim holds literally: no searched key names a value
        if isinstance(value, dict):
            return {k for k, v in value.items() if v not in (None, "", [], {})}.union(*map(named, value.values()))
        return set().union(*map(named, value)) if isinstance(value, list) else set()

    assert not named(json.loads((root / entry.manifest).read_text())) & set(keys.patterns)
    contract = next(g for g in entry.gap_evidence if "Task contract consulted" in g.searched_for)
    assert repr(entry.task) in contract.searched_for and "output video" in contract.patterns
    assert "input frames" in contract.patterns and "found" not in contract.searched_for
    if entry.verdict == "image-only":
        counts = next(g for g in entry.gap_evidence if g.searched_for.startswith("frame counts above 1"))
        assert counts.files_without_hits == [entry.manifest] and "video_num_frames > 1" in counts.patterns


def test_video_text_to_text_has_its_contract(new_inventory: Inventory) -> None:
    # issue 27: video_text_to_text is in the Task table (it was inferred from its name before)
    entry = _rows(new_inventory)["vidqa-2b-native"]
    assert entry.verdict == "temporal-video-qa" and not entry.ambiguous
    assert entry.contract.source.startswith("TRTMC Task contract for 'video_text_to_text'")
    assert entry.contract.inputs == ["text", "frames"] and entry.contract.output == "text"
    # the fixture's task adapter defines the Task in a wire format invented for the tests (TRTMC has none yet)
    assert entry.catalog_status == "ready" and entry.operation == "answer_video"
    assert entry.native_request is not None and entry.native_request.video_view == "core/api/include/trtmc/video.h:5"


def test_catalog_status_follows_trtmc_rules(new_inventory: Inventory, old_inventory: Inventory) -> None:
    rows = _rows(new_inventory)
    assert rows["vidqa-2b"].catalog_status == "ready"
    assert rows["vidqa-2b"].operation == "generate"
    assert rows["vidqa-2b-tp2"].catalog_status == "distributed"
    assert rows["textlm-1b-summarize"].catalog_status == "unsupported"
    assert rows["broken"].catalog_status == "invalid" and "malformed JSON" in rows["broken"].error
    assert "missing: bundle, precision, task" in rows["missing-fields"].error
    assert {e.catalog_status for e in old_inventory.entries} == {"n/a"}


def test_variants_are_listed_but_never_counted_as_models(new_inventory: Inventory, old_inventory: Inventory) -> None:
    rows = _rows(new_inventory)
    assert rows["vidqa-2b-tp2"].variant_kinds == ["tp"]
    assert rows["vidqa-2b-fp8"].variant_kinds == ["quantized"]
    assert rows["vlm-3b-l0"].variant_kinds == ["l0"]
    old = _rows(old_inventory)
    assert old["oldvl-2b-tp2"].variant_kinds == ["tp"]
    assert old["oldlm-tiny-random"].variant_kinds == ["random"]
    assert old["oldsam-local"].variant_kinds == ["local-only"]
    assert "l0" in old["olddiff-video-l0"].variant_kinds
    # a full checkpoint whose testcase runs in the L0 CI tier is still a model
    assert old["oldvl-2b"].variant_kinds == []
    # capable: the base profiles only, variants of the same checkpoint excluded
    assert new_inventory.summary.capable == ["vidqa-2b", "vidqa-2b-native"]
    # models: distinct checkpoint + revision over non-variant, readable rows
    base = {
        (e.checkpoint, e.revision)
        for e in new_inventory.entries
        if not e.variant_kinds and e.verdict != "invalid" and e.checkpoint
    }
    assert new_inventory.summary.models == len(base) == 11


def test_media_controls_and_testcase_facts(new_inventory: Inventory) -> None:
    entry = _rows(new_inventory)["vidqa-2b"]
    controls = {(c.name, c.scope): c.value for c in entry.media_controls}
    assert controls[("video_num_frames", "manifest")] == 8
    assert controls[("fps", "testcase:vidqa-2b-clip")] == 2
    assert controls[("max_pixels", "testcase:vidqa-2b-clip")] == 50176
    control = next(c for c in entry.media_controls if c.name == "video_num_frames")
    assert '"video_num_frames": 8' in _line(NEW, control.evidence.file, control.evidence.line)
    case = entry.testcases[0]
    assert case.name == "vidqa-2b-clip" and case.premerge is True and case.media_inputs == ["frames"]
    assert _rows(new_inventory)["vlm-3b-l0"].testcases[0].l0 is True


def test_serving_facts_from_the_server_schema(new_inventory: Inventory, old_inventory: Inventory) -> None:
    assert new_inventory.serving.chat_content_types == ["text"]
    assert new_inventory.serving.accepts_video is False
    assert old_inventory.serving.source is None
    assert any("trtmc_server/schemas.py is absent" in item for item in old_inventory.lacking)


def test_incomplete_tree_says_what_it_lacked(tmp_path: Path) -> None:
    tree = tmp_path / "trtmc"
    shutil.copytree(NEW, tree)
    shutil.rmtree(tree / "apps")
    shutil.rmtree(tree / "families" / "vidqa" / "runtime")
    (tree / "families" / "vidqa" / "model.py").unlink()
    inventory = run_inventory(tree)
    rows = _rows(inventory)
    assert {e.catalog_status for e in inventory.entries if e.verdict != "invalid"} == {"unknown"}
    assert any("task_adapters.py is absent" in item for item in inventory.lacking)
    assert any("model code of family 'vidqa'" in item for item in inventory.lacking)
    # without the family's code no time axis can be shown, so nothing is claimed
    assert rows["vidqa-2b"].verdict == "image-only" and rows["vidqa-2b"].ambiguous
    assert inventory.summary.capable == []


def test_older_layout_listed_but_absent_manifest_is_lacking(old_inventory: Inventory) -> None:
    assert any("oldvl-2b-gone.json: listed in MODEL.toml" in item for item in old_inventory.lacking)
    entry = _rows(old_inventory)["oldvl-2b"]
    assert any(e.file.endswith("oldvl/MODEL.toml") and "test_image" in e.excerpt for e in entry.evidence)


def test_commit_from_git_and_the_pin(tmp_path: Path) -> None:
    tree = tmp_path / "trtmc"
    shutil.copytree(OLD, tree)
    assert run_inventory(tree).commit == "unknown"
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    inventory = run_inventory(tree)
    assert inventory.commit == head and inventory.matches_pin is False
    assert run_inventory(tree, pinned_commit=head).matches_pin is True


def test_symlink_out_of_the_checkout_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(
        json.dumps(
            {
                "name": "evil",
                "bundle": "b",
                "family": "vlm",
                "task": "text_generation",
                "precision": "fp16",
                "testcases": [{"name": "evil"}],
            }
        )
    )
    tree = tmp_path / "trtmc"
    shutil.copytree(NEW, tree)
    (tree / "families" / "vlm" / "tests" / "manifests" / "evil.json").symlink_to(outside)
    (tree / "families" / "vlm" / "runtime" / "leak.cpp").symlink_to(outside)
    inventory = run_inventory(tree)
    assert "evil" not in _rows(inventory)
    skipped = {item.path: item.reason for item in inventory.skipped}
    assert "families/vlm/tests/manifests/evil.json" in skipped
    assert "outside the checkout" in skipped["families/vlm/tests/manifests/evil.json"]
    assert "families/vlm/runtime/leak.cpp" in skipped


def test_not_a_checkout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotACheckout, match="not a TRTMC checkout"):
        run_inventory(tmp_path)
    with pytest.raises(NotACheckout, match="does not exist"):
        run_inventory(tmp_path / "missing")


def test_reconciliation_by_fields_never_line_numbers(tmp_path: Path, new_inventory: Inventory) -> None:
    tree = tmp_path / "trtmc"
    shutil.copytree(NEW, tree)
    manifests = tree / "families"
    (manifests / "wanlike" / "tests" / "manifests" / "wanlike-t2v.json").unlink()
    vlm = manifests / "vlm" / "tests" / "manifests" / "vlm-3b.json"
    data = json.loads(vlm.read_text())
    data["precision"] = "bf16"
    vlm.write_text("\n\n" + json.dumps(data, indent=4))  # lines move; only the precision really changed
    clef = manifests / "clefish" / "tests" / "manifests" / "clefish.json"
    clef.write_text("\n" + clef.read_text())  # lines move, nothing else
    shutil.copy(
        manifests / "textlm" / "tests" / "manifests" / "textlm-1b.json",
        manifests / "textlm" / "tests" / "manifests" / "textlm-2b.json",
    )
    data = json.loads((manifests / "textlm" / "tests" / "manifests" / "textlm-2b.json").read_text())
    data["name"] = "textlm-2b"
    (manifests / "textlm" / "tests" / "manifests" / "textlm-2b.json").write_text(json.dumps(data))
    result = reconcile(new_inventory, run_inventory(tree), "old.json")
    assert result.added == ["textlm-2b"]
    assert result.removed == ["wanlike-t2v"]
    assert [(c.profile, c.field, c.old, c.new) for c in result.changed] == [("vlm-3b", "precision", "fp16", "bf16")]


def test_markdown_lists_models_variants_and_gaps(new_inventory: Inventory) -> None:
    text = render_inventory_markdown(new_inventory)
    models = text.split("## In the group: models")[1].split("## In the group: variants")[0]
    variants = text.split("## In the group: variants")[1].split("## Outside the group")[0]
    assert "| vidqa-2b |" in models and "| vidqa-2b-tp2 |" not in models
    assert "| vidqa-2b-tp2 |" in variants and "| vlm-3b-l0 |" in variants
    assert "`families/vlm/tests/manifests/vlm-3b.json:" in models
    assert "Capable of temporal video QA: vidqa-2b, vidqa-2b-native" in text
    assert "## Ambiguous evidence" in text and "flatvlm-1b" in text
    # which row is its checkpoint's normal profile, and which one is for the others
    assert re.search(r"^\| vidqa-2b \|.*\| \*\*normal\*\* \|", models, re.M)
    assert re.search(r"^\| vidqa-2b-native \|.*\| no \(normal: `vidqa-2b`\) \|", models, re.M)
    assert re.search(r"^\| vidqa-2b-tp2 \|.*\| no \(normal: `vidqa-2b`\) \|", variants, re.M)


def test_every_entry_carries_its_normal_profile_choice(new_inventory: Inventory, old_inventory: Inventory) -> None:
    rows = _rows(new_inventory)
    assert rows["vlm-3b"].normal_profile and not rows["vlm-3b-l0"].normal_profile
    assert not rows["broken"].normal_profile and rows["broken"].profile_gap is None
    assert _rows(old_inventory)["olddiff-video-l0"].profile_gap == "no full-model profile in this checkout"
    text = render_inventory_markdown(old_inventory)
    assert "no full-model profile in this checkout: olddiff-video-l0, oldlm-tiny-random" in text
    assert re.search(r"^\| olddiff-video-l0 \|.*\| no full-model profile in this checkout \|", text, re.M)
    # the summary keeps its meaning: models are distinct checkpoints over rows without variants
    assert (new_inventory.summary.models, new_inventory.summary.variant_rows) == (11, 3)
    assert (old_inventory.summary.models, old_inventory.summary.variant_rows) == (5, 4)


def test_committed_json_schemas_are_current() -> None:
    for name, schema in json_schemas().items():
        committed = json.loads((REPO / "schemas" / name).read_text())
        assert committed == schema, f"schemas/{name} is stale: run `trtmc-videoqa schemas`"


def test_inventory_json_round_trips(new_inventory: Inventory) -> None:
    again = Inventory.model_validate_json(new_inventory.model_dump_json())
    assert again == new_inventory


def test_unknown_tasks_are_inferred_from_their_words() -> None:
    from trtmc_videoqa.inventory.tasks import infer_contract

    assert infer_contract("frames_text_to_answer").inputs == ("frames", "text")
    assert infer_contract("frames_text_to_answer").output == "text"
    # a task that segments a video does not generate one
    segmenting = infer_contract("video_object_segmentation")
    assert segmenting.output == "masks" and "frames" in segmenting.inputs
    assert infer_contract("text_to_audio_and_video").output == "video"


def test_a_profile_named_by_two_manifests_stays_two_rows(tmp_path: Path) -> None:
    tree = tmp_path / "trtmc"
    shutil.copytree(NEW, tree)
    source = tree / "families" / "vlm" / "tests" / "manifests" / "vlm-3b.json"
    shutil.copy(source, source.with_name("vlm-3b-copy.json"))
    inventory = run_inventory(tree)
    assert [e.manifest for e in inventory.entries if e.profile == "vlm-3b"] == [
        "families/vlm/tests/manifests/vlm-3b-copy.json",
        "families/vlm/tests/manifests/vlm-3b.json",
    ]
    assert any("'vlm-3b' is named by 2 manifests" in item for item in inventory.lacking)
    result = reconcile(run_inventory(NEW), inventory, "old.json")
    assert result.added == [
        "vlm-3b (families/vlm/tests/manifests/vlm-3b-copy.json)",
        "vlm-3b (families/vlm/tests/manifests/vlm-3b.json)",
    ]
    assert result.removed == ["vlm-3b"]


def test_every_marker_pattern_names_one_of_its_groups_needles() -> None:
    """A file is searched with a group's patterns only when it holds one of the group's needles: each pattern must
    itself spell one, or a file it would match could be skipped."""
    from trtmc_videoqa.inventory.family_source import GROUPS

    for group in GROUPS:
        for pattern in group.patterns:
            assert any(needle in pattern for needle in group.needles), (group.name, pattern)
