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
