"""The public-artifact gate on real trees: what names the machine is found, what is private or binary is not read."""

from __future__ import annotations

import getpass
import json
import os
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from trtmc_videoqa.common.errors import CheckNotHeld, UserError
from trtmc_videoqa.publish import check as public_check
from trtmc_videoqa.publish import machine_names
from trtmc_videoqa.publish.check import (
    Hit,
    PublicCheckFailed,
    PublicSentinels,
    check_public,
    format_hits,
    run_sentinels,
    scan_public,
)

SECRET = "hf_s3cr3tTokenValue42"


def sentinels(**values: list[str]) -> PublicSentinels:
    """Sentinels of the kinds given (paths, words, secrets, short_words), the others empty."""
    return PublicSentinels(**{"paths": [], "words": [], "secrets": [], **values})


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def places(hits: list[Hit]) -> list[tuple[str, int, str]]:
    return [(hit.file, hit.line, hit.kind) for hit in hits]


def test_a_planted_absolute_path_is_found_at_its_file_and_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, "report.md", "# Report\n\nall rows qualified\n")
    write(out, "checkpoints/qwen/result.json", f'{{\n  "status": "ok",\n  "log": "{out}/checkpoints/qwen/x.log"\n}}\n')

    hits = scan_public(out, sentinels(paths=[str(out)]))

    assert places(hits) == [("checkpoints/qwen/result.json", 3, "path")]
    assert str(out) in hits[0].excerpt


def test_the_user_name_hits_only_as_a_whole_token(tmp_path: Path) -> None:
    lines = ["root_correlation_id: 7", "chroot jail", "rootfs", "root@x", "see /home/root/.cache", '"user": "root"']
    lines += ["--runtime-root build", "root-owned"]  # an option's or a hyphenated word's part: no hit
    write(tmp_path, "log.txt", "\n".join(lines) + "\n")

    hits = scan_public(tmp_path, sentinels(words=["root"]))

    assert places(hits) == [
        ("log.txt", 4, "user-or-host"),
        ("log.txt", 5, "user-or-host"),
        ("log.txt", 6, "user-or-host"),
    ]


def test_a_host_name_hits_as_a_whole_token_and_case_sensitively(tmp_path: Path) -> None:
    write(tmp_path, "a.txt", "ran on gpu-node-07.\nxgpu-node-07\ngpu-node-070\nGPU-NODE-07\nhost=gpu-node-07\n")

    hits = scan_public(tmp_path, sentinels(words=["gpu-node-07"]))

    assert [hit.line for hit in hits] == [1, 5]


def test_a_secret_is_found_and_never_shown(tmp_path: Path) -> None:
    write(tmp_path, "aiperf/inputs.json", f"x\nAuthorization: Bearer {SECRET} tail\n")
    # A path hit on a line that also holds the secret: its excerpt is redacted too.
    write(tmp_path, "b.txt", f"/work/secret-place token={SECRET}\n")

    hits = scan_public(tmp_path, sentinels(paths=["/work/secret-place"], secrets=[SECRET]))

    assert places(hits) == [("aiperf/inputs.json", 2, "secret"), ("b.txt", 1, "path"), ("b.txt", 1, "secret")]
    assert all(SECRET not in hit.excerpt and "<redacted>" in hit.excerpt for hit in hits)
    assert SECRET not in format_hits(hits)


def test_private_folders_at_any_depth_are_not_scanned(tmp_path: Path) -> None:
    for relative in ("private/raw.log", "rows/a/private/aiperf.log", "rows/a/private/deeper/server.log"):
        write(tmp_path, relative, "user root was here\n")
    write(tmp_path, "rows/a/privateer.txt", "root\n")  # only a folder named exactly private/ is private
    write(tmp_path, "rows/private.txt", "root\n")

    hits = scan_public(tmp_path, sentinels(words=["root"]))

    assert sorted(hit.file for hit in hits) == ["rows/a/privateer.txt", "rows/private.txt"]
    assert check_public(tmp_path / "rows" / "a" / "private", sentinels(words=["nobody"])) == 2  # the root is scanned


def test_binary_files_are_skipped_by_suffix_and_by_content(tmp_path: Path) -> None:
    (tmp_path / "workload").mkdir()
    (tmp_path / "workload" / "clip.mp4").write_bytes(b"ftypisom /home/alice/clip\n")
    (tmp_path / "frames.PNG").write_bytes(b"\x89PNG /home/alice\n")
    (tmp_path / "blob.dat").write_bytes(b"header\0\0/home/alice/x\n")
    write(tmp_path, "notes.txt", "clean\n")

    assert scan_public(tmp_path, sentinels(paths=["/home/alice"])) == []
    assert check_public(tmp_path, sentinels(paths=["/home/alice"])) == 1


def test_undecodable_bytes_are_read_with_replacement(tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9 /home/alice/x\n")

    assert places(scan_public(tmp_path, sentinels(paths=["/home/alice"]))) == [("latin1.txt", 1, "path")]


def test_links_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "leak.txt", "/home/alice/leak\n")
    root = tmp_path / "root"
    write(root, "plain.txt", "nothing here\n")
    (root / "link.txt").symlink_to(outside / "leak.txt")
    (root / "linked-dir").symlink_to(outside, target_is_directory=True)

    assert scan_public(root, sentinels(paths=["/home/alice"])) == []
    assert check_public(root, sentinels(paths=["/home/alice"])) == 1  # the link is not counted as scanned


def test_a_fifo_is_skipped_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")  # opening it for reading would block the scan
    write(tmp_path, "a.txt", "ok\n")

    assert check_public(tmp_path, sentinels(paths=["/home/alice"])) == 1


def test_a_short_path_sentinel_matches_only_at_a_path_boundary(tmp_path: Path) -> None:
    lines = [
        "/tmpfoo",
        "/tmp/x",
        '"/tmp"',
        "/var/tmp/x",
        "./tmp/x",
        "dir=/tmp",
        "/tmp.d/x",
        "under /tmp.",
        "file:///tmp/x",
    ]
    write(tmp_path, "doc.md", "\n".join(lines) + "\n")

    hits = scan_public(tmp_path, sentinels(paths=["/tmp/"]))  # a trailing slash is dropped, not required

    assert [hit.line for hit in hits] == [2, 3, 6, 8, 9]


def test_a_path_prefix_of_another_is_fine_and_the_excerpt_centres_on_the_longer(tmp_path: Path) -> None:
    write(tmp_path, "a.txt", "x" * 200 + " /tmp/run-1/out/report.json\n/tmp/elsewhere\n")

    hits = scan_public(tmp_path, sentinels(paths=["/tmp", "/tmp/run-1/out"]))

    assert [hit.line for hit in hits] == [1, 2]
    assert "/tmp/run-1/out/report.json" in hits[0].excerpt and hits[0].excerpt.startswith("…")


def test_a_line_longer_than_a_piece_is_scanned_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(public_check, "PIECE_BYTES", 16)
    # The sentinel straddles the first piece's edge; the line after the long one keeps its own number.
    write(tmp_path, "export.jsonl", "0123456789ab /home/alice/x" + "y" * 50 + "\nsecond /home/alice\n")

    hits = scan_public(tmp_path, sentinels(paths=["/home/alice"]))

    assert [hit.line for hit in hits] == [1, 2]


def test_check_public_refuses_with_the_count_the_places_and_the_fix(tmp_path: Path) -> None:
    write(tmp_path, "junit.xml", "<x>\n/home/alice/a\n</x>\n")
    write(tmp_path, "report.md", "by alice\n")

    with pytest.raises(PublicCheckFailed) as raised:
        check_public(tmp_path, sentinels(paths=["/home/alice"], words=["alice"]))

    message = str(raised.value)
    assert isinstance(raised.value, CheckNotHeld) and not isinstance(raised.value, UserError)  # exit 3, not 2
    assert message.startswith(f"3 hits in the public files of {tmp_path}: junit.xml:2, junit.xml:2, report.md:1;")
    assert "names this machine" in message and "private/" in message
    assert "\n" not in message  # the command line says a UserError in one line
    assert [hit.kind for hit in raised.value.hits] == ["path", "user-or-host", "user-or-host"]


def test_check_public_lists_at_most_fifty_places(tmp_path: Path) -> None:
    write(tmp_path, "big.log", "alice\n" * 60)

    with pytest.raises(PublicCheckFailed) as raised:
        check_public(tmp_path, sentinels(words=["alice"]))

    message = str(raised.value)
    assert message.startswith("60 hits in") and "big.log:50 and 10 more;" in message and "big.log:51" not in message


def test_a_clean_tree_passes_and_counts_its_text_files(tmp_path: Path) -> None:
    write(tmp_path, "report.json", '{"root_correlation_id": "abc"}\n')
    write(tmp_path, "workload/workload.json", '{"clip": "clips/a.mp4"}\n')

    assert check_public(tmp_path, sentinels(paths=[str(tmp_path)], words=["root"], secrets=[SECRET])) == 2


def test_format_hits_gives_one_line_per_hit() -> None:
    hits = [
        Hit(file="a.txt", line=3, kind="path", excerpt="/home/alice/x"),
        Hit(file="b/c.md", line=1, kind="user-or-host", excerpt="by alice"),
    ]

    assert format_hits(hits) == "a.txt:3: path /home/alice/x\nb/c.md:1: user-or-host by alice"


def test_run_sentinels_gathers_this_runs_own_values(tmp_path: Path) -> None:
    real = tmp_path / "real-out"
    real.mkdir()
    out = tmp_path / "via-link"
    out.symlink_to(real, target_is_directory=True)
    checkout = tmp_path / "trtmc"

    found = run_sentinels(out, extra_paths=[checkout, "/", "/usr", "ab"], secrets=[SECRET, ""])

    for expected in (out, real.resolve(), checkout, Path.home(), Path(sys.prefix), Path(tempfile.gettempdir())):
        assert str(expected) in found.paths or len(str(expected)) < 4
    assert "/" not in found.paths and "/usr" not in found.paths and not any(len(p) < 4 for p in found.paths)
    assert all(path.startswith("/") for path in found.paths)
    user, host = getpass.getuser(), socket.gethostname()
    for word in (user, host, host.split(".")[0]):
        assert (word in found.words) == (len(word) >= 3 and word.lower() not in machine_names.GENERIC_HOSTS)
    assert found.secrets == [SECRET]


def test_run_sentinels_survives_an_unknown_user(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def no_user() -> str:
        raise OSError("no user")

    monkeypatch.setattr(getpass, "getuser", no_user)
    monkeypatch.setattr(socket, "gethostname", lambda: "localhost")

    assert run_sentinels(tmp_path).words == []


@pytest.mark.parametrize(
    "written",
    [
        '"aiperf": "# a note\\n{path}/bin/aiperf profile"',  # a JSON \n puts an `n` right before the path
        '"log": "x\\t{path}/x.log"',
        '"log": "{escaped_slashes}/x.log"',  # \/ for every slash
        '"log": "{unicode_slashes}/x.log"',  # \u002f for every slash
        "see {url_encoded}%2Fx.log",  # %2F for every slash
        '"v": "x%20{url_encoded}"',
    ],
)
def test_a_path_hidden_behind_an_escape_is_found_in_its_decoded_form(tmp_path: Path, written: str) -> None:
    """The check reads what a reader of the file gets: JSON strings decoded and URLs unquoted, not only the raw
    text (every published --endpoint row kept the absolute path of aiperf after a JSON `\\n`, and passed)."""
    out = tmp_path / "out"
    path = "/opt/work/secret-place"
    line = written.format(
        path=path,
        escaped_slashes=path.replace("/", "\\/"),
        unicode_slashes=path.replace("/", "\\u002f"),
        url_encoded=path.replace("/", "%2F"),
    )
    write(out, "checkpoints/p/result.json", "{\n" + line + "\n}\n")
    hits = scan_public(out, sentinels(paths=[path]))
    assert places(hits) == [("checkpoints/p/result.json", 2, "path")]


def test_decoding_adds_no_hit_where_none_is(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write(out, "a.json", '{"a": "x\\ny", "b": "\\u00e9t\\u00e9", "c": "100%25 sure", "d": "not json \\q"}\n')
    assert scan_public(out, sentinels(paths=["/opt/work/secret-place"])) == []


def test_a_short_host_name_is_checked_only_where_it_is_machine_derived(tmp_path: Path) -> None:
    """A host named `vm` was never checked (names under three characters hit everywhere as words): it is checked
    after `@` or `/` (user@host, a URL's host, a path component) and as the user before `@`, never as a bare word."""
    out = tmp_path / "out"
    write(out, "report.md", "root@vm\nhttp://vm:8000/v1\n/home/vm/x\nvm@host\nbare vm word, vmware, a/vmx\n")
    hits = scan_public(out, sentinels(short_words=["vm"]))
    assert places(hits) == [("report.md", line, "user-or-host") for line in (1, 2, 3, 4)]


def test_short_names_are_gathered_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine_names, "user_name", lambda: ["ci"])
    monkeypatch.setattr(machine_names, "host_names", lambda: ["vm", "vm"])
    assert machine_names.short_machine_words() == ["ci", "vm"] and machine_names.machine_words() == []


# --- a path as each renderer writes it ---------------------------------------------------------------------------

HOSTILE_OUT = "/data/q&x'y[1]/out"
BIDI_OUT = "/data/a\u202eb/out"


def _renderings(path: str) -> dict[str, str]:
    """The path as the tool's renderers write it: Markdown prose, HTML, JUnit's XML, a shell word, JSON."""
    from trtmc_videoqa.common.shell_quoting import reproducible_command
    from trtmc_videoqa.common.text_escape import html_text, json_inert, md_text, xml_text

    xml = xml_text(path).replace("&", "&amp;").replace("'", "&apos;")
    return {
        "report.md": f"- written to {md_text(path + '/report.html')}\n",
        "report.html": f'<p title="{html_text(path)}">{html_text(path + "/x")}</p>\n',
        "junit.xml": f"<testcase name='{xml}/checkpoints' />\n",
        "checkpoints/p/command.txt": reproducible_command(["aiperf", "--artifact-dir", path + "/checkpoints/p"]) + "\n",
        "report.json": json_inert(json.dumps({"sources": [path]})) + "\n",
    }


@pytest.mark.parametrize("path", [HOSTILE_OUT, BIDI_OUT], ids=["markup", "bidi"])
def test_a_path_is_found_in_every_rendering_a_reader_sees(tmp_path: Path, path: str) -> None:
    rendered = _renderings(path)
    for name, text in rendered.items():
        write(tmp_path, name, text)
        assert path not in text or name == "report.json" or path == BIDI_OUT and name.endswith(".json")
    hits = scan_public(tmp_path, sentinels(paths=[path]))
    assert sorted({hit.file for hit in hits}) == sorted(rendered)  # before: report.json alone, or nothing
