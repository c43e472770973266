"""Issue 27: TRTMC's own Task declarations — the semantic Task API's headers, each family's support.py, the runtime
bindings — read as text (never compiled, imported or run), on small trees written here."""

from __future__ import annotations

from pathlib import Path

from trtmc_videoqa.inventory.task_registry import interface_name, read_task_declarations
from trtmc_videoqa.inventory.tasks import TASKS, contract_for

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
