"""Issue 27: TRTMC's own Task declarations — the semantic Task API's headers, each family's support.py, the runtime
bindings — read as text (never compiled, imported or run), on small trees written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from trtmc_videoqa.inventory.task_registry import interface_name, read_task_declarations
from trtmc_videoqa.inventory.tasks import TASKS, contract_for
from trtmc_videoqa.results import CheckpointEntry, Inventory

# Written for these tests, modelled on the layout of TRTMC's headers (not copied from them).
LANGUAGE_H = """\
#ifndef TRTMC_LANGUAGE_H
#define TRTMC_LANGUAGE_H
#include "trtmc/video.h"
#define TRTMC_TASK_TEXT_GENERATION "text_generation"
typedef struct {
    const trtmc_video_view_v1* video;
} trtmc_video_part_v1;
#define TRTMC_TASK_VIDEO_TEXT_TO_TEXT "video_text_to_text"
#define TRTMC_TASK_IMAGE_VIDEO_TEXT_TO_TEXT \\
    "image_video_text_to_text"
#define TRTMC_TASK_VIDEO_TEXT_CONVERSATION "video_text_conversation"
#define TRTMC_TASK_MOTION_TEXT_TO_SUMMARY "motion_text_to_summary"
#endif
"""
STREAM_H = """\
#define TRTMC_STREAMING_TASK_ID(name) "streaming_" #name
#define TRTMC_TASK_STREAMING_VIDEO_TEXT_TO_TEXT TRTMC_STREAMING_TASK_ID(video_text_to_text)
#define TRTMC_TASK_STREAMING_ODD TRTMC_PASTE(a, b)
"""
INTERNAL_LANGUAGE_H = """\
namespace trtmc::internal {
struct VideoTextToTextRequest {
    std::vector<Message> messages;
    std::vector<Tool> tools;
};
class IVideoTextToText {
  public:
    static constexpr std::string_view kTask = TRTMC_TASK_VIDEO_TEXT_TO_TEXT;
    virtual Result run(const VideoTextToTextRequest&) = 0;
};
class IVideoToVideo {
  public:
    static constexpr std::string_view kTask = "video_to_video";
};
}
"""


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def api_tree(root: Path) -> Path:
    write(root, "core/api/include/trtmc/language.h", LANGUAGE_H)
    write(root, "core/api/include/trtmc/stream.h", STREAM_H)
    write(root, "core/runtime/include/trtmc/internal/language.h", INTERNAL_LANGUAGE_H)
    return root


def test_every_declared_task_id_with_its_file_and_line(tmp_path: Path) -> None:
    declared = read_task_declarations(api_tree(tmp_path))
    assert declared.found and not declared.problems
    api = {d.task: d.where for d in declared.tasks if d.side == "api"}
    assert api == {
        "text_generation": "core/api/include/trtmc/language.h:4",
        "video_text_to_text": "core/api/include/trtmc/language.h:8",
        "image_video_text_to_text": "core/api/include/trtmc/language.h:9",  # continued on the next line
        "video_text_conversation": "core/api/include/trtmc/language.h:11",
        "motion_text_to_summary": "core/api/include/trtmc/language.h:12",
        "streaming_video_text_to_text": "core/api/include/trtmc/stream.h:2",  # built by a macro
    }
    runtime = {(d.task, d.interface, d.where) for d in declared.tasks if d.side == "runtime"}
    assert runtime == {
        ("video_text_to_text", "IVideoTextToText", "core/runtime/include/trtmc/internal/language.h:8"),
        ("video_to_video", "IVideoToVideo", "core/runtime/include/trtmc/internal/language.h:13"),
    }
    assert declared.interface_tasks()["IVideoTextToText"] == "video_text_to_text"
    assert interface_name("video_text_to_text") == "IVideoTextToText"


def test_video_tasks_have_contracts_and_unknown_ones_are_inferred_and_said(tmp_path: Path) -> None:
    declared = read_task_declarations(api_tree(tmp_path))
    first = declared.first("video_text_to_text")
    assert first is not None and first.side == "api" and first.known and first.is_video_to_text
    assert first.contract.inputs == ("text", "frames") and "one time in seconds per frame" in first.contract.note
    assert [d.task for d in declared.video_to_text()] == [
        "image_video_text_to_text",
        "streaming_video_text_to_text",
        "video_text_conversation",
        "video_text_to_text",
    ]
    unknown = {d.task: d for d in declared.tasks if not d.known}
    assert set(unknown) == {"motion_text_to_summary", "video_to_video"}
    assert unknown["video_to_video"].contract.output == "video" and not unknown["video_to_video"].is_video_to_text
    assert unknown["motion_text_to_summary"].contract.note == "inferred from the Task name"
    for task in ("video_text_to_text", "streaming_video_text_conversation", "batch_text_images_video_conversations"):
        contract, source = contract_for(task, older_layout=False)
        assert contract is TASKS[task] and "frames" in contract.inputs and contract.output == "text"
        assert not source.startswith("inferred")


def test_a_checkout_without_the_headers_declares_nothing(tmp_path: Path) -> None:
    declared = read_task_declarations(tmp_path)
    assert not declared.found and declared.tasks == [] and declared.problems == []


def test_an_unreadable_header_is_named(tmp_path: Path) -> None:
    api_tree(tmp_path)
    (tmp_path / "core/api/include/trtmc/bad.h").write_bytes(b'\xff\xfe#define TRTMC_TASK_X "x"')
    declared = read_task_declarations(tmp_path)
    assert declared.problems == [
        "core/api/include/trtmc/bad.h: unreadable (UnicodeDecodeError); its Task ids are unknown"
    ]
    assert declared.first("video_text_to_text") is not None


# --- item 2: each family's support.py (ast) and its runtime's bindings ------------------------------------------

GEMMAISH_SUPPORT = """\
from tensorrt_model_connect.model_support import FamilySupport, family_support

TEXT_TASKS = ("text_generation", "text_continuation")
SUPPORT = family_support(model_types=("gemmaish2", "gemmaish3"), tasks=("text_generation",),
                         default_task="text_generation")


def describe(config):
    tasks = list(TEXT_TASKS)
    if config.get("vision_config"):
        tasks.append("images_text_to_text")
    if config.get("audio_config"):
        tasks.append("audio_text_to_text")
    if config.get("vision_config") and config.get("audio_config"):
        tasks += ["image_audio_text_to_text"]
    return FamilySupport(tuple(tasks), "text_generation", "bf16")
"""
CLEFISH_SUPPORT = """\
def support(model_type, files):
    if model_type == "clefish" and "decision_head.safetensors" in files:
        return FamilySupport(("structured_decision",), "structured_decision", "fp16")
    return None

MATCH = family_support(architectures=["ClefishForDecision"], pipeline_classes=("ClefishPipeline",),
                       required_files=("decision_head.safetensors",), tasks=("structured_decision",))
"""
DYNAMIC_SUPPORT = """\
def describe(config):
    tasks = ["text_generation"]
    if config.vision:
        tasks.extend(config.extra_tasks)
    return FamilySupport(load_tasks(config), "text_generation", "bf16")
"""
RUNTIME_CPP = """\
#include "trtmc/internal/language.h"
namespace family {
class Pipeline final : public trtmc::internal::IStructuredDecision, private Noncopyable {
};
void task_bindings(Registry& registry) {
    registry.bind<internal::IVideoTextToText>(make_video_pipeline);
}
}
"""


def test_family_support_calls_and_conditional_describe(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.family_declarations import read_family_declaration

    write(tmp_path, "families/gemmaish/support.py", GEMMAISH_SUPPORT)
    found = read_family_declaration(tmp_path, "gemmaish")
    assert found.file == "families/gemmaish/support.py" and found.problem is None and not found.unreadable
    assert found.matches == {"model_types": ["gemmaish2", "gemmaish3"]}
    assert found.tasks == [
        "audio_text_to_text",
        "image_audio_text_to_text",
        "images_text_to_text",
        "text_continuation",
        "text_generation",
    ]
    vision = found.declares("images_text_to_text")[0]
    assert vision.line == 11 and vision.config_parts == ("vision",)
    assert vision.condition is not None and vision.condition.startswith("when the config has a vision part")
    both = found.declares("image_audio_text_to_text")[0]
    assert both.config_parts == ("vision", "audio") and "a vision part and an audio part" in (both.condition or "")
    assert [(d.line, d.condition) for d in found.declares("text_continuation")] == [(9, None)]
    assert any(d.default and d.line == 4 for d in found.declares("text_generation"))


def test_family_support_under_a_condition_and_checkpoint_matches(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.family_declarations import read_family_declaration

    write(tmp_path, "families/clefish/support.py", CLEFISH_SUPPORT)
    found = read_family_declaration(tmp_path, "clefish")
    assert found.matches == {
        "architectures": ["ClefishForDecision"],
        "pipeline_classes": ["ClefishPipeline"],
        "required_files": ["decision_head.safetensors"],
    }
    conditional = found.declares("structured_decision")[0]
    assert conditional.line == 3 and conditional.config_parts == ()
    assert conditional.condition == "when `model_type == 'clefish' and 'decision_head.safetensors' in files`"


def test_what_cannot_be_read_statically_is_said_never_guessed(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.family_declarations import read_family_declaration

    write(tmp_path, "families/dyn/support.py", DYNAMIC_SUPPORT)
    found = read_family_declaration(tmp_path, "dyn")
    assert found.tasks == ["text_generation"]
    assert found.unreadable == [
        "families/dyn/support.py:4: a Task added to 'tasks' cannot be read statically",
        "families/dyn/support.py:5: the tasks of FamilySupport(...) cannot be read statically",
    ]
    write(tmp_path, "families/broken/support.py", "def describe(:\n")
    broken = read_family_declaration(tmp_path, "broken")
    assert broken.problem is not None and "SyntaxError" in broken.problem and broken.declared == []


def test_a_family_without_support_py_has_no_declaration(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.family_declarations import read_family_declaration

    (tmp_path / "families" / "older").mkdir(parents=True)
    found = read_family_declaration(tmp_path, "older")
    assert found.file is None and found.declared == [] and found.problem is None


def test_runtime_classes_and_task_bindings_are_evidence_lines(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.runtime_bindings import bound_tasks, read_runtime_bindings
    from trtmc_videoqa.inventory.task_registry import interface_map

    write(tmp_path, "families/vlmish/runtime/plugin.cpp", RUNTIME_CPP)
    write(tmp_path, "families/vlmish/tests/fake.cpp", "class Fake : public IVideoTextToText {};\n")
    bindings, problems = read_runtime_bindings(tmp_path, "vlmish")
    assert not problems
    assert [(b.interface, b.how, b.holder, b.line) for b in bindings] == [  # tests/ is not the runtime
        ("IStructuredDecision", "implements", "Pipeline", 3),  # Noncopyable is no Task interface
        ("IVideoTextToText", "binds", "task_bindings()", 6),
    ]
    tasks = bound_tasks(bindings, interface_map(read_task_declarations(api_tree(tmp_path))))
    assert sorted(tasks) == ["structured_decision", "video_text_to_text"]
    evidence = tasks["video_text_to_text"][0].evidence("video_text_to_text")
    assert evidence.file == "families/vlmish/runtime/plugin.cpp" and evidence.line == 6
    assert "binds IVideoTextToText (video_text_to_text)" in evidence.shows


# --- item 3: the verdict uses the three sources together (a copy of the newer-layout fixture, changed here) ---------

FIXTURE = Path(__file__).parent / "fixtures" / "trtmc_families"
VIDQA_SUPPORT = """\
from tensorrt_model_connect.model_support import family_support

SUPPORT = family_support(model_types=("vidqa",), tasks=("video_text_to_text", "vision_language_generation"),
                         default_task="vision_language_generation")
"""
VIDQA_RUNTIME = """\
namespace vidqa {
void task_bindings(Registry& registry) {
    registry.bind<internal::IVideoTextToText>(make_clip_pipeline);
}
}
"""


def capable_tree(root: Path, support: str | None = VIDQA_SUPPORT) -> Path:
    import shutil

    shutil.copytree(FIXTURE, root)
    api_tree(root)
    if support is not None:
        write(root, "families/vidqa/support.py", support)
    write(root, "families/vidqa/runtime/bindings.cpp", VIDQA_RUNTIME)
    return root


def _row(root: Path, profile: str) -> tuple[Inventory, CheckpointEntry]:
    from trtmc_videoqa.inventory.audit import run_inventory

    inventory = run_inventory(root)
    return inventory, next(entry for entry in inventory.entries if entry.profile == profile)


def test_declared_bound_named_and_timed_is_temporal_video_qa(tmp_path: Path) -> None:
    inventory, row = _row(capable_tree(tmp_path / "trtmc"), "vidqa-2b-native")
    assert row.verdict == "temporal-video-qa" and row.gap is None
    assert row.declaration is not None and row.declaration.startswith(
        "families/vidqa/support.py:3 declares 'video_text_to_text'"
    )
    assert "the family's runtime implements or binds IVideoTextToText" in row.declaration
    assert ("families/vidqa/support.py", 3) in [(ev.file, ev.line) for ev in row.evidence]
    assert ("families/vidqa/runtime/bindings.cpp", 3) in [(ev.file, ev.line) for ev in row.evidence]
    assert "video_text_to_text" in row.family_tasks
    assert inventory.schema_version == "trtmc-videoqa.inventory/v2"
    declared = {(t.task, t.side): t for t in inventory.declared_tasks}
    assert declared[("video_text_to_text", "api")].line == 8 and declared[("video_text_to_text", "api")].video_to_text
    vidqa = next(f for f in inventory.family_declarations if f.family == "vidqa")
    assert vidqa.file == "families/vidqa/support.py" and vidqa.bound == ["video_text_to_text"]
    older = next(f for f in inventory.family_declarations if f.family == "vlm")
    assert older.file is None and older.tasks == []


def test_taking_away_the_declaration_names_it(tmp_path: Path) -> None:
    plain = 'SUPPORT = family_support(model_types=("vidqa",), tasks=("vision_language_generation",))\n'
    _, row = _row(capable_tree(tmp_path / "trtmc", plain), "vidqa-2b-native")
    assert row.verdict == "partial"
    assert row.gap is not None and "TRTMC's own declaration is missing" in row.gap
    assert "families/vidqa/support.py does not declare 'video_text_to_text'" in row.gap


def test_taking_away_the_manifests_task_names_it(tmp_path: Path) -> None:
    import json

    root = capable_tree(tmp_path / "trtmc")
    manifest = root / "families/vidqa/tests/manifests/vidqa-2b-native.json"
    data = json.loads(manifest.read_text())
    data["task"] = "images_text_to_text"
    data["testcases"] = [{"name": "one-image", "prompt": "What is it?", "inputs": {"image_path": "x.png"}}]
    manifest.write_text(json.dumps(data, indent=2))
    _, row = _row(root, "vidqa-2b-native")
    assert row.verdict == "image-only"
    assert row.gap is not None and "the manifest names 'images_text_to_text', not the video_text_to_text" in row.gap


def test_taking_away_the_time_axis_names_it(tmp_path: Path) -> None:
    root = capable_tree(tmp_path / "trtmc")
    write(root, "families/vidqa/model.py", "def forward(pixel_values):\n    return pixel_values\n")
    (root / "families/vidqa/runtime/frames.cpp").unlink()
    _, row = _row(root, "vidqa-2b-native")
    assert row.verdict == "image-only"
    assert row.gap is not None and "no time axis" in row.gap and "declare" not in row.gap


def test_a_config_conditioned_declaration_counts_only_on_a_local_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conditional = (
        "def describe(config):\n"
        "    tasks = ['vision_language_generation']\n"
        "    if config.get('vision_config'):\n"
        "        tasks.append('video_text_to_text')\n"
        "    return FamilySupport(tuple(tasks), 'vision_language_generation', 'bf16')\n"
    )
    root = capable_tree(tmp_path / "trtmc", conditional)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    _, row = _row(root, "vidqa-2b-native")
    assert row.verdict == "partial" and row.gap is not None
    assert "declares it only when the config has a vision part" in row.gap
    assert "unchecked: the checkpoint's config is not in the local hub cache" in row.gap
    snapshot = tmp_path / "hub/models--example--VidQA-2B/snapshots" / ("1" * 40)
    write(snapshot, "config.json", '{"model_type": "vidqa", "vision_config": {"depth": 2}}')
    _, row = _row(root, "vidqa-2b-native")
    assert row.verdict == "temporal-video-qa" and row.gap is None


def test_a_family_without_support_py_is_judged_as_before_and_says_so(tmp_path: Path) -> None:
    _, row = _row(capable_tree(tmp_path / "trtmc", None), "vidqa-2b-native")
    assert row.verdict == "temporal-video-qa"
    assert row.declaration is not None and row.declaration.startswith(
        "no support.py in families/vidqa: no declaration found"
    )


def test_the_group_line_names_the_furthest_state(tmp_path: Path) -> None:
    import shutil

    from trtmc_videoqa.inventory.audit import run_inventory

    root = capable_tree(tmp_path / "trtmc", None)
    (root / "families/vidqa/runtime/bindings.cpp").unlink()
    shutil.rmtree(root / "families/vidqa/tests")
    inventory = run_inventory(root)
    assert inventory.group_line is not None and inventory.group_line.startswith("Group: blocked: ")
    assert inventory.group_line.endswith(
        "in-group rows; TRTMC declares video_text_to_text (core/api/include/trtmc/language.h:8) "
        "but no family declares or binds it"
    )
    write(root, "families/vidqa/support.py", VIDQA_SUPPORT)
    line = run_inventory(root).group_line or ""
    assert "family vidqa (video_text_to_text) declares or binds it, but no manifest names it" in line
    shutil.rmtree(root / "core")
    line = run_inventory(root).group_line or ""
    assert line.endswith("the checkout has no Task API headers (core/api/include/trtmc)")


def test_the_older_layout_keeps_its_verdicts() -> None:
    from trtmc_videoqa.inventory.audit import run_inventory

    inventory = run_inventory(Path(__file__).parent / "fixtures" / "trtmc_e2e")
    assert inventory.declared_tasks == [] and inventory.family_declarations == [] and inventory.group_line is None
    assert all(entry.declaration is None and entry.family_tasks == [] for entry in inventory.entries)


# --- items 6 and 7: the watch, and an inventory of the older schema still compared --------------------------------


def test_refresh_reports_a_new_video_task_first_and_exits_0(tmp_path: Path) -> None:
    import shutil

    from trtmc_videoqa.inventory.audit import run_inventory
    from trtmc_videoqa.inventory.group_changes import group_reconciliation
    from trtmc_videoqa.inventory.refresh import exit_code

    pinned_tree, main_tree = tmp_path / "pinned", tmp_path / "main"
    shutil.copytree(FIXTURE, pinned_tree)
    shutil.rmtree(pinned_tree / "core")  # the pinned commit has no Task API headers; main adds them, nothing else
    shutil.copytree(FIXTURE, main_tree)
    pinned, main = run_inventory(pinned_tree), run_inventory(main_tree)
    found = group_reconciliation(pinned, main, main_ref="main", pinned_commit_source="test")
    assert found.line.startswith("NEW VIDEO TASK in the API: audio_video_text_to_text (core/api/include/trtmc/")
    assert "video_text_to_text (core/api/include/trtmc/language.h:18)" in found.line
    assert "streaming_video_text_to_text (core/api/include/trtmc/stream.h:5)" in found.line
    assert found.line.split("; ")[1].startswith("No in-group change")
    assert "video_text_to_video_edit" not in found.new_video_tasks  # a video-making Task answers no question
    assert found.new_capable == [] and found.new_video_families == []
    assert exit_code(found, fail_on_new_capable=True) == 0


def test_refresh_names_a_family_newly_declaring_and_the_new_capable_checkpoint(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.audit import run_inventory
    from trtmc_videoqa.inventory.group_changes import group_reconciliation
    from trtmc_videoqa.inventory.refresh import EXIT_NEW_CAPABLE, exit_code

    plain = 'SUPPORT = family_support(model_types=("vidqa",), tasks=("vision_language_generation",))\n'
    pinned_tree = capable_tree(tmp_path / "pinned", plain)
    (pinned_tree / "families/vidqa/runtime/bindings.cpp").unlink()
    pinned, main = run_inventory(pinned_tree), run_inventory(capable_tree(tmp_path / "main"))
    found = group_reconciliation(pinned, main, main_ref="main", pinned_commit_source="test")
    assert found.line.startswith(
        "newly declared or bound by family vidqa: video_text_to_text; NEW CAPABLE: vidqa-2b-native; 1 in-group change"
    )
    assert found.new_video_tasks == [] and found.new_video_families == ["vidqa: video_text_to_text"]
    assert exit_code(found, fail_on_new_capable=True) == EXIT_NEW_CAPABLE
    assert exit_code(found, fail_on_new_capable=False) == 0


def test_an_inventory_of_schema_v1_is_still_compared(tmp_path: Path) -> None:
    import json

    from trtmc_videoqa.inventory.audit import run_inventory
    from trtmc_videoqa.inventory.group_changes import group_reconciliation
    from trtmc_videoqa.inventory.reconcile import reconcile

    new = run_inventory(capable_tree(tmp_path / "trtmc"))
    data = json.loads(new.model_dump_json())
    data["schema_version"] = "trtmc-videoqa.inventory/v1"
    for name in ("declared_tasks", "family_declarations", "group_line"):
        del data[name]
    for entry in data["entries"]:
        del entry["declaration"], entry["family_tasks"]
    old = Inventory.model_validate_json(json.dumps(data))
    assert old.schema_version.endswith("/v1") and old.declared_tasks == []
    assert reconcile(old, new, "inventory.json").changed == []
    found = group_reconciliation(old, new, main_ref="main", pinned_commit_source="test")
    assert found.new_capable == [] and "video_text_to_text" in found.new_video_tasks  # v1 recorded no declarations
    assert found.line.startswith("NEW VIDEO TASK in the API (the pinned inventory is schema v1: it records no Task")


# --- item 5: the shared fixture tree declares the video Tasks, and its verdicts are unchanged ----------------------


def test_the_fixture_tree_lists_its_task_ids_and_family_declarations(tmp_path: Path) -> None:
    import shutil

    from trtmc_videoqa.inventory.audit import run_inventory

    inventory = run_inventory(FIXTURE)
    api = {t.task: f"{t.file}:{t.line}" for t in inventory.declared_tasks if t.side == "api"}
    assert api["video_text_to_text"] == "core/api/include/trtmc/language.h:18"
    assert api["image_video_text_to_text"] == "core/api/include/trtmc/language.h:24"  # continued
    assert api["streaming_video_text_to_text"] == "core/api/include/trtmc/stream.h:5"  # built by a macro
    unknown = [t.task for t in inventory.declared_tasks if not t.known]
    assert unknown == ["video_text_to_video_edit"]
    families = {f.family: f for f in inventory.family_declarations}
    assert families["textlm"].tasks == ["text_continuation", "text_generation"]
    assert families["flatvlm"].conditions[0].startswith("images_text_to_text: when the config has a vision part")
    assert families["clefish"].bound == ["structured_decision"] and families["vlm"].bound == ["images_text_to_text"]
    assert families["vidqa"].file is None
    assert inventory.summary.capable == ["vidqa-2b", "vidqa-2b-native"]  # vidqa has no support.py: as before
    tree = tmp_path / "trtmc"
    shutil.copytree(FIXTURE, tree)
    shutil.rmtree(tree / "families" / "vidqa")
    line = run_inventory(tree).group_line or ""
    assert line.startswith("Group: blocked: ") and line.endswith(
        "TRTMC declares video_text_to_text (core/api/include/trtmc/language.h:18) but no family declares or binds it"
    )


def test_inventory_md_shows_the_declarations_and_the_group_line(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.audit import run_inventory
    from trtmc_videoqa.inventory.markdown import render_inventory_markdown

    text = render_inventory_markdown(run_inventory(capable_tree(tmp_path / "trtmc")))
    assert "- Group: 13 in-group rows; temporal-video-qa (not yet qualified): vidqa-2b, vidqa-2b-native" in text
    assert "## TRTMC's own Task declarations" in text
    assert (
        "| `video_text_to_text` | `core/api/include/trtmc/language.h:8` | text frames -> text (video to text) |" in text
    )
    assert "| `vidqa` | `families/vidqa/support.py` |" in text and "| `vlm` | none: no declaration found |" in text


def test_the_reports_blocked_line_names_the_inventorys_furthest_state(tmp_path: Path) -> None:
    from trtmc_videoqa.report.group import group_line
    from trtmc_videoqa.results import ResultRow

    row = ResultRow(profile="vlm-3b", status="unsupported", status_reason="answers about one image per request")
    inventory_line = (
        "Group: blocked: 1 in-group row; TRTMC declares video_text_to_text "
        "(core/api/include/trtmc/language.h:18) but no family declares or binds it"
    )
    line = group_line([row], inventory_line).line
    assert line.startswith("Group: blocked: 1 in-group row, 0 with an existing native temporal video QA capability")
    assert line.endswith(
        "; TRTMC declares video_text_to_text (core/api/include/trtmc/language.h:18) but no family declares or binds it"
    )
    assert group_line([row]).line == group_line([row], "Group: 2 in-group rows; temporal-video-qa ...").line


def test_build_report_reads_the_runs_inventory_group_line(tmp_path: Path) -> None:
    import shutil

    from trtmc_videoqa.inventory.audit import run_inventory
    from trtmc_videoqa.report.build import build_report
    from trtmc_videoqa.results import ResultRow

    tree = tmp_path / "trtmc"
    shutil.copytree(FIXTURE, tree)
    shutil.rmtree(tree / "families" / "vidqa")
    out = tmp_path / "run"
    row = ResultRow(profile="vlm-3b", status="unsupported", status_reason="answers about one image per request")
    write(out, "checkpoints/vlm-3b/result.json", row.model_dump_json())
    write(out, "inventory.json", run_inventory(tree).model_dump_json())
    line = build_report([out]).group.line
    assert line.endswith(
        "TRTMC declares video_text_to_text (core/api/include/trtmc/language.h:18) but no family declares or binds it"
    )
    (out / "inventory.json").write_text("{not json")
    assert "TRTMC declares" not in build_report([out]).group.line  # an unreadable inventory adds nothing


def test_the_inventory_command_prints_the_group_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    from helpers import run_main

    tree = tmp_path / "trtmc"
    shutil.copytree(FIXTURE, tree)
    shutil.rmtree(tree / "families" / "vidqa")
    done = run_main(capsys, "inventory", "--trtmc", str(tree), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "but no family declares or binds it\n" in done.stdout and "Group: blocked: " in done.stdout


# --- constructs of the real headers and support.py files the hand-written trees above lacked ----------------------
# Each snippet is written here, shaped like the construct it stands for; no identifier is TRTMC's.

STAMPED_H = """\
namespace trtmc::internal {
#define TRTMC_CLIP_TASK(Name, Id, Method, Input)                 \\
    class I##Name {                                              \\
      public:                                                    \\
        static constexpr std::string_view kTask = Id;            \\
        virtual Tracks Method(ClipView, const Input&) = 0;       \\
    };
TRTMC_CLIP_TASK(ClipPointsToTracks, "clip_points_to_tracks", track_points, Points)
TRTMC_CLIP_TASK(ClipCaptionToTracks,
                "clip_caption_to_tracks", track_caption, Caption)
#undef TRTMC_CLIP_TASK
#define TRTMC_EDITOR(Name, Method) class I##Name { virtual void Method() = 0; };
TRTMC_EDITOR(PointsEditor, edit_points)
}
"""


def test_interfaces_a_header_macro_stamps_out_are_declared_at_their_id(tmp_path: Path) -> None:
    write(tmp_path, "core/runtime/include/trtmc/internal/clips.h", STAMPED_H)
    declared = read_task_declarations(tmp_path)
    assert [(d.task, d.interface, d.where) for d in declared.tasks] == [
        ("clip_points_to_tracks", "IClipPointsToTracks", "core/runtime/include/trtmc/internal/clips.h:8"),
        ("clip_caption_to_tracks", "IClipCaptionToTracks", "core/runtime/include/trtmc/internal/clips.h:10"),
    ]  # the macro's own `kTask = Id;` declares nothing; a macro without kTask stamps out no Task interface
    first = declared.first("clip_points_to_tracks")
    assert first is not None and first.contract.inputs == ("frames",) and first.contract.output == "tracks"
    assert declared.interface_tasks() == {
        "IClipPointsToTracks": "clip_points_to_tracks",
        "IClipCaptionToTracks": "clip_caption_to_tracks",
    }


GUARDED_SUPPORT = """\
from tensorrt_model_connect.model_support import family_support

OLDER = family_support(model_types=("older3",), tasks=("text_generation",), default_task="text_generation")


def describe(meta):
    if meta.config.get("model_type") not in {"newer4", "newer4_unified"}:
        return OLDER(meta)
    if meta.model_type == "newer4_video":
        raise ValueError("not this one")
    tasks = ["text_generation", "text_continuation"]
    has_vision = bool(meta.config.get("vision_config"))
    if has_vision:
        tasks.append("images_text_to_text")
    chosen = "images_text_to_text" if has_vision else "text_continuation"
    return family_support(model_types=("newer4",), tasks=tuple(tasks), default_task=chosen)(meta)
"""


def test_an_if_that_returns_early_conditions_the_rest_and_a_chosen_default_is_read(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.family_declarations import read_family_declaration

    write(tmp_path, "families/guarded/support.py", GUARDED_SUPPORT)
    found = read_family_declaration(tmp_path, "guarded")
    assert found.problem is None and not found.unreadable
    newer = "when `meta.config.get('model_type') in {'newer4', 'newer4_unified'}`"
    not_video = "when `meta.model_type != 'newer4_video'`"  # a model type named "video" asks for no video part
    vision = "when the config has a vision part (`has_vision`)"
    assert [(d.task, d.line, d.default, d.condition, d.config_parts) for d in found.declared] == [
        ("text_generation", 3, True, None, ()),
        ("text_generation", 11, False, f"{newer} and {not_video}", ()),
        ("text_continuation", 11, False, f"{newer} and {not_video}", ()),
        ("images_text_to_text", 14, False, f"{newer} and {not_video} and {vision}", ("vision",)),
        ("images_text_to_text", 16, True, f"{newer} and {not_video} and {vision}", ("vision",)),
        ("text_continuation", 16, True, f"{newer} and {not_video} and unless `has_vision`", ()),
    ]
    write(tmp_path, "families/odd/support.py", "def describe(m):\n    return FamilySupport(('a',), pick(m))\n")
    odd = read_family_declaration(tmp_path, "odd")
    assert odd.tasks == ["a"]
    assert odd.unreadable == [
        "families/odd/support.py:2: the default_task of FamilySupport(...) cannot be read statically"
    ]


def test_a_base_named_on_a_later_line_of_the_class_head_is_cited_there(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.runtime_bindings import bound_tasks, read_runtime_bindings
    from trtmc_videoqa.inventory.task_registry import interface_map

    head = (
        "class ClipPipeline final : public internal::IModel,\n"
        "                           public internal::IClipPointsToTracks {\n"
        "};\n"
    )
    write(tmp_path, "families/clipper/runtime/pipeline.h", head)
    bindings, _ = read_runtime_bindings(tmp_path, "clipper")
    assert [(b.interface, b.line, b.excerpt) for b in bindings] == [
        ("IModel", 1, "class ClipPipeline final : public internal::IModel,"),
        ("IClipPointsToTracks", 2, "public internal::IClipPointsToTracks {"),
    ]
    write(tmp_path, "core/runtime/include/trtmc/internal/clips.h", STAMPED_H)
    tasks = bound_tasks(bindings, interface_map(read_task_declarations(tmp_path)))
    assert tasks["clip_points_to_tracks"][0].line == 2


def test_video_generation_tasks_whose_names_say_frames_have_their_real_inputs() -> None:
    boundary, source = contract_for("boundary_frames_text_to_video", older_layout=False)
    assert not source.startswith("inferred") and boundary.inputs == ("images", "text") and boundary.output == "video"
    assert "frames" not in contract_for("boundary_frames_text_to_audio_video", older_layout=False)[0].inputs
    references = contract_for("references_text_to_audio_video", older_layout=False)[0]
    assert set(references.inputs) == {"images", "frames", "audio", "text"} and references.output == "video"


# --- a model-type condition is checked on a local config, like a config part -------------------------------------

MODEL_TYPES_SUPPORT = """\
TYPES = ("kinda",)


def describe(config, model_type):
    if model_type == "plain":
        return FamilySupport(("a",), "a", "bf16")
    if config.model_type != "odd":
        return FamilySupport(("b",), "b", "bf16")
    if config["model_type"] in {"x", "y"}:
        return FamilySupport(("c",), "c", "bf16")
    if not (config.get("model_type") in ["z"]):
        return FamilySupport(("d",), "d", "bf16")



def other(config, model_type):
    if model_type in TYPES:
        tasks = ("e",)
    if config.arch == "x":
        tasks = ("f",)
    if model_type in "abc":
        tasks = ("g",)
"""


def test_a_model_type_test_keeps_the_names_it_allows_or_forbids(tmp_path: Path) -> None:
    from trtmc_videoqa.inventory.family_declarations import ModelTypeTest, read_family_declaration

    write(tmp_path, "families/typed/support.py", MODEL_TYPES_SUPPORT)
    found = read_family_declaration(tmp_path, "typed")
    tests = {d.task: (d.model_types, d.unchecked, d.checkable) for d in found.declared}
    assert tests["a"] == ((ModelTypeTest(True, ("plain",)),), (), True)
    assert tests["b"][0] == (ModelTypeTest(False, ("plain",)), ModelTypeTest(False, ("odd",)))
    assert tests["c"][0][-1] == ModelTypeTest(True, ("x", "y")) and tests["c"][2]
    assert tests["d"][0][-1] == ModelTypeTest(False, ("z",)) and tests["d"][2]  # `not (... in [...])`
    for task in ("e", "f", "g"):  # a name bound to names, another name, a string: no model-type test
        assert tests[task][0] == () and len(tests[task][1]) == 1 and not tests[task][2]
    assert found.declares("d")[0].condition == (
        "when `model_type != 'plain'` and when `config.model_type == 'odd'` and "
        "when `config['model_type'] not in {'x', 'y'}` and when `not config.get('model_type') in ['z']`"
    )


# Written for these tests: vidqa declares video_text_to_text only for its video model types, returning early for others.
TYPED_VIDQA_SUPPORT = """\
from tensorrt_model_connect.model_support import FamilySupport


def describe(config):
    if config.get("model_type") not in {"vidqa", "vidqa_clip"}:
        return FamilySupport(("vision_language_generation",), "vision_language_generation", "bf16")
    tasks = ["vision_language_generation"]
    tasks.append("video_text_to_text")
    return FamilySupport(tuple(tasks), "vision_language_generation", "bf16")
"""
VIDQA_SNAPSHOT = "hub/models--example--VidQA-2B/snapshots/" + "1" * 40


TYPED_WHEN = "families/vidqa/support.py:8 declares it only when `config.get('model_type') in {'vidqa', 'vidqa_clip'}`"


@pytest.mark.parametrize(
    ("config", "verdict", "gap"),
    [
        (None, "partial", f"{TYPED_WHEN}; unchecked: the checkpoint's config is not in the local hub cache"),
        ('{"model_type": "vidqa_clip"}', "temporal-video-qa", None),
        (
            '{"model_type": "vidqa_lite", "vision_config": {}}',
            "partial",
            f"{TYPED_WHEN}, and the local config's model_type is 'vidqa_lite', not one of {{'vidqa', 'vidqa_clip'}}",
        ),
    ],
)
def test_a_model_type_conditioned_declaration_is_checked_on_the_local_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str | None, verdict: str, gap: str | None
) -> None:
    """Unchecked without a local config, counted on one of that model type, the mismatch named on another."""
    root = capable_tree(tmp_path / "trtmc", TYPED_VIDQA_SUPPORT)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    if config is not None:
        write(tmp_path, f"{VIDQA_SNAPSHOT}/config.json", config)
    _, row = _row(root, "vidqa-2b-native")
    assert row.verdict == verdict
    if gap is None:
        assert row.gap is None
    else:
        assert row.gap is not None and gap in row.gap and "cannot check statically" not in row.gap


def test_a_condition_of_another_shape_among_checkable_ones_keeps_the_declaration_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model type and a vision part the local config satisfies, beside a test of its frame count: not counted."""
    mixed = TYPED_VIDQA_SUPPORT.replace(
        '    tasks.append("video_text_to_text")',
        '    if config.get("frames_per_clip", 0) > 4:\n'
        '        if config.get("vision_config"):\n'
        '            tasks.append("video_text_to_text")',
    )
    root = capable_tree(tmp_path / "trtmc", mixed)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    config = '{"model_type": "vidqa", "frames_per_clip": 8, "vision_config": {"depth": 2}}'
    write(tmp_path, f"{VIDQA_SNAPSHOT}/config.json", config)
    _, row = _row(root, "vidqa-2b-native")
    assert row.verdict == "partial" and row.gap is not None
    assert "when `config.get('frames_per_clip', 0) > 4`" in row.gap
    assert "which the audit cannot check statically" in row.gap
