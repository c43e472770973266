"""Nothing read or written outside the run, nothing of the user's rewritten (issue 33, items 3, 4, 6 and 7).

3. The publish step copies each workload into `workload/<name>/files/` through the safe writer: a link planted in
   place of a copy (or of the folder it goes into) is refused by name, and what it points at keeps its bytes. The
   silent-audio copy `compare` makes is written the same way.
4. `report DIR` reads only regular files inside DIR, resolved and checked, each under a cap: a frame strip that is
   a link, one that a workload name leads to outside DIR, or one over the cap is never embedded in report.html; a
   result file that is a link is named unreadable, never read.
6. `qualify` and `compare` refuse an `--out` holding the user's own files and no output of an earlier run, before
   anything is written; a re-run rewrites only the files the tool wrote, never a file the user put beside them.
7. A workload copy is kept only when its sha256 is the workload's: one re-sealed with an answer letter changed (the
   same size) is copied again, so the copy holds the answer key the row's digest names.

Each run here is against an endpoint where nothing listens: it fails at capability in a second and still publishes.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import QUICK, one_message, row, run_main

from trtmc_videoqa.common.atomic_write import UnsafeTarget
from trtmc_videoqa.common.output_lock import LOCK_NAME
from trtmc_videoqa.results import GroupLine, Report, ResultRow
from trtmc_videoqa.runs.foreign_output import ForeignOutput, refuse_foreign_output
from trtmc_videoqa.workloads import BUILTIN_WORKLOADS, builtin_workload
from trtmc_videoqa.workloads.seal import seal_workload_file
from trtmc_videoqa.workloads.silent_audio_copy import silent_audio_workload

DEAD = ("--endpoint", "http://127.0.0.1:9", "--model", "m")
SECRET = b"\x89PNG\r\n\x1a\n not a strip: the contents of a file nobody asked to publish"


def _run(capsys, out: Path, *args: str):
    return run_main(capsys, "qualify", "--out", str(out), *QUICK, *DEAD, *args)


def _first_run(capsys, out: Path, *args: str) -> None:
    done = _run(capsys, out, *args)
    assert done.returncode == 3, done.stderr  # the failed row's code
    assert row(out, "m").status == "failed"


# --- 3. the workload copy never goes through a link ---------------------------------------------------------------


def test_a_link_planted_in_place_of_the_workload_copy_is_refused_and_its_target_kept(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    _first_run(capsys, out)
    copy = out / "workload" / "synthetic" / "files" / "workload.json"
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    copy.unlink()
    copy.symlink_to(victim)
    done = _run(capsys, out)
    assert done.returncode == 2, done.stderr  # before: 0, and victim.txt held the workload
    assert "workload.json is a symbolic link" in one_message(done)
    assert victim.read_text() == "not yours\n" and copy.is_symlink()


def test_a_linked_folder_on_the_way_to_the_workload_copy_is_refused(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    _first_run(capsys, out)
    files = out / "workload" / "synthetic" / "files"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "workload.json").write_text("not yours\n")
    shutil.rmtree(files)
    files.symlink_to(elsewhere, target_is_directory=True)
    done = _run(capsys, out)
    assert done.returncode == 2, done.stderr
    assert "leads outside" in one_message(done)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["workload.json"]  # before: the clips were copied there
    assert (elsewhere / "workload.json").read_text() == "not yours\n"


@pytest.mark.parametrize("planted", ["ATTRIBUTION.md", "bigbuckbunny-320x180-silent-audio.mp4"])
def test_the_silent_audio_copy_never_writes_through_a_link(tmp_path: Path, planted: str) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("not yours\n")
    (folder / planted).symlink_to(victim)
    with pytest.raises(UnsafeTarget, match="symbolic link"):
        silent_audio_workload(builtin_workload("bigbuckbunny"), folder)
    assert victim.read_text() == "not yours\n"


# --- 4. report reads only regular files inside DIR, each under a cap -----------------------------------------------


def _strip_section(out: Path) -> str:
    html = (out / "report.html").read_text()
    return html.split('src="data:image/png;base64,', 1)[1].split('"', 1)[0] if "base64," in html else ""


def test_a_frame_strip_linked_to_another_file_is_never_embedded(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    _first_run(capsys, out)
    assert base64.b64decode(_strip_section(out)).startswith(b"\x89PNG")  # the strip the run made
    secret = tmp_path / "secret.png"
    secret.write_bytes(SECRET)
    strip = out / "workload" / "synthetic" / "frames.png"
    strip.unlink()
    strip.symlink_to(secret)
    done = run_main(capsys, "report", str(out))
    assert done.returncode == 0, done.stderr
    assert base64.b64encode(SECRET).decode() not in (out / "report.html").read_text()  # before: embedded
    assert _strip_section(out) == ""


def _edit_row(out: Path, change) -> None:
    path = out / "checkpoints" / "m" / "result.json"
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw, indent=2))


def test_a_workload_name_leading_outside_the_folder_reads_no_strip_there(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    _first_run(capsys, out)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "frames.png").write_bytes(SECRET)
    _edit_row(out, lambda raw: raw["provenance"].update(workload="../../outside"))
    assert (out / "workload" / "../../outside" / "frames.png").read_bytes() == SECRET
    done = run_main(capsys, "report", str(out))
    assert done.returncode == 0, done.stderr
    assert base64.b64encode(SECRET).decode() not in (out / "report.html").read_text()  # before: embedded


def test_a_strip_over_the_cap_is_not_read(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    _first_run(capsys, out)
    strip = out / "workload" / "synthetic" / "frames.png"
    with strip.open("r+b") as handle:
        handle.truncate(17 << 20)  # sparse: 17 MiB, over the 16 MiB a report embeds
    done = run_main(capsys, "report", str(out))
    assert done.returncode == 0, done.stderr
    assert _strip_section(out) == ""
    assert (out / "report.html").stat().st_size < 1 << 20  # before: the whole file, as base64


def test_a_result_file_linked_from_outside_is_named_never_read(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    _first_run(capsys, out)
    outside = tmp_path / "outside-row.json"
    raw = json.loads((out / "checkpoints" / "m" / "result.json").read_text())
    outside.write_text(json.dumps({**raw, "profile": "read-from-outside"}))
    (out / "checkpoints" / "other").mkdir()
    (out / "checkpoints" / "other" / "result.json").symlink_to(outside)
    done = run_main(capsys, "report", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert [r["profile"] for r in report["rows"]] == ["m"]  # before: the outside row was reported
    assert "leads outside" in report["unreadable"][0]["error"]


# --- 6. a folder of the user's own files ------------------------------------------------------------------------


def _users_folder(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    folder = tmp_path / "mine"
    (folder / "photos").mkdir(parents=True)
    files = {
        "notes.md": f"see {tmp_path}/photos and {Path.home()}/thesis\n".encode(),
        "photos/list.txt": f"{tmp_path}/photos/a.jpg\n".encode(),
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder, files


def _unchanged(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        assert (folder / name).read_bytes() == data, name


def test_qualify_refuses_a_folder_of_the_users_own_files(tmp_path: Path, capsys) -> None:
    folder, files = _users_folder(tmp_path)
    done = _run(capsys, folder)
    assert done.returncode == 2, done.stderr  # before: 0, both files rewritten to placeholders
    message = one_message(done)
    assert str(folder) in message and "notes.md" in message and "empty or new folder" in message
    _unchanged(folder, files)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.md", "photos"]  # no lock, nothing written


def test_compare_refuses_a_folder_of_the_users_own_files(tmp_path: Path, capsys) -> None:
    folder, files = _users_folder(tmp_path)
    fake = tmp_path / "transformers"
    fake.write_text("#!/bin/sh\nexit 1\n")  # never run: the folder is refused first
    args = ("--checkpoint", "org/m", "--transformers", str(fake), "--media-adaptation", "none", *QUICK)
    done = run_main(capsys, "compare", *args, "--out", str(folder))
    assert done.returncode == 2, done.stderr
    assert "empty or new folder" in one_message(done)
    _unchanged(folder, files)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.md", "photos"]


def test_a_rerun_rewrites_only_the_files_the_tool_wrote(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    _first_run(capsys, out)
    notes = out / "notes.md"
    notes.write_text(f"my own notes: {out}/checkpoints\n")
    done = _run(capsys, out)
    assert notes.read_text() == f"my own notes: {out}/checkpoints\n"  # before: rewritten to "checkpoints"
    # what the user left in the public tree is named by the public check, never changed
    assert done.returncode == 3 and "notes.md:1" in done.stderr, done.stderr  # a public-check hit: exit 3
    assert str(out) not in (out / "report.md").read_text()  # the tool's own files are still made portable


def _tools_report(out: Path) -> None:
    report = Report(
        title="t",
        generated_by="trtmc-videoqa",
        sources=[],
        reference_self_test=False,
        rows=[],
        counts={},
        group=GroupLine(status="failed", line="Group: failed"),
    )
    (out / "report.json").write_text(report.model_dump_json())


def _tools_row(out: Path) -> None:
    (out / "checkpoints" / "p").mkdir(parents=True)
    row = ResultRow(profile="p", status="failed", status_reason="plan: x")
    (out / "checkpoints/p/result.json").write_text(row.model_dump_json())


def _tools_stamp(out: Path) -> None:
    (out / "workload" / "w").mkdir(parents=True)
    stamp = {"identity": {"workload": "w"}, "files": {"sampling.json": "0" * 64}}
    (out / "workload/w/prepared.digest.json").write_text(json.dumps(stamp))


MARKERS = {
    "the lock": lambda out: (out / LOCK_NAME).write_text("4242\n"),
    "report.json": _tools_report,
    "a row": _tools_row,
    "a workload": _tools_stamp,
}
# The same names holding what is not the tool's: a user's folder that happens to have them is still the user's.
NOT_MARKERS = {
    "the lock": lambda out: (out / LOCK_NAME).write_text("my notes\n"),
    "report.json": lambda out: (out / "report.json").write_text('{"my": "report"}'),
    "a row": lambda out: (out / "checkpoints" / "p").mkdir(parents=True) or (out / "checkpoints/p/result.json").touch(),
    "a workload": lambda out: (
        (out / "workload" / "w").mkdir(parents=True)
        or (out / "workload/w/prepared.digest.json").write_text("[" * 100_000 + "]" * 100_000)
    ),
}


@pytest.mark.parametrize("marker", sorted(MARKERS))
def test_an_earlier_runs_folder_is_the_tools_whatever_else_it_holds(tmp_path: Path, marker: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine\n")
    with pytest.raises(ForeignOutput, match="notes.md"):
        refuse_foreign_output(out)
    MARKERS[marker](out)
    refuse_foreign_output(out)


@pytest.mark.parametrize("marker", sorted(NOT_MARKERS))
def test_a_marker_that_is_not_the_tools_own_makes_no_earlier_run(tmp_path: Path, marker: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine\n")
    NOT_MARKERS[marker](out)
    with pytest.raises(ForeignOutput, match="notes.md"):  # before: any file of that name was a marker
        refuse_foreign_output(out)


def test_a_users_folder_with_a_report_of_its_own_is_left_byte_for_byte(tmp_path: Path, capsys) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    files = {"report.json": '{"my": "report"}\n', "report.md": "# my report\n", "junit.xml": "<mine/>\n"}
    for name, text in files.items():
        (out / name).write_text(text)
    (out / "notes.md").write_text("mine\n")
    done = run_main(capsys, "qualify", "--out", str(out))
    assert done.returncode == 2 and "is a folder of other files" in done.stderr, done.stderr
    assert {path.name: path.read_text() for path in out.iterdir() if path.name != "notes.md"} == files


def test_a_new_empty_or_tool_named_folder_is_taken(tmp_path: Path) -> None:
    refuse_foreign_output(tmp_path / "new")
    refuse_foreign_output(tmp_path)
    (tmp_path / "inventory.json").write_text("{}")  # `inventory --out` first, then qualify into the same folder
    (tmp_path / "bundles").mkdir()
    refuse_foreign_output(tmp_path)


# --- 7. a stale workload copy is found by its digest ------------------------------------------------------------


def test_a_workload_resealed_with_one_answer_changed_is_copied_again(tmp_path: Path, capsys) -> None:
    source = tmp_path / "workload"
    shutil.copytree(BUILTIN_WORKLOADS["synthetic"].parent, source)
    file = source / "workload.json"
    out = tmp_path / "out"
    _first_run(capsys, out, "--workload", str(file))
    before = file.read_bytes()
    raw = json.loads(before)
    assert raw["questions"][0]["answers"]["forward"] == "A"
    raw["questions"][0]["answers"]["forward"] = "C"
    file.write_text(json.dumps(raw, indent=2) + "\n")
    seal_workload_file(file)
    after = file.read_bytes()
    assert len(after) == len(before) and after != before  # the same size, another answer key
    done = _run(capsys, out, "--workload", str(file))
    assert done.returncode == 3, done.stderr  # the row fails again (nothing listens); the copy is what is checked
    copy = out / "workload" / "synthetic" / "files" / "workload.json"
    assert copy.read_bytes() == after  # before: the old answer key under the new digest
    assert row(out, "m").provenance.workload_digest == json.loads(after)["digest"]
    assert not copy.is_symlink() and os.stat(copy).st_nlink == 1


def test_an_earlier_row_is_reused_only_as_a_regular_file_of_its_folder(tmp_path: Path) -> None:
    from trtmc_videoqa.plan.cache_keys import reusable

    row_dir = tmp_path / "checkpoints" / "p"
    row_dir.mkdir(parents=True)
    earned = ResultRow(profile="p", status="endpoint-qualified", status_reason="earned", cache_key="k")
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(earned.model_dump_json())
    (row_dir / "result.json").symlink_to(elsewhere)
    assert reusable(row_dir, "k", force=False) is None  # before: read through the link and reused
    (row_dir / "result.json").unlink()
    (row_dir / "result.json").write_text(earned.model_dump_json())
    found = reusable(row_dir, "k", force=False)
    assert found is not None and found.reused
    (row_dir / "result.json").write_text("[" * 100_000 + "]" * 100_000)
    assert reusable(row_dir, "k", force=False) is None
