"""Text from outside is inert everywhere (issue 26, item 2).

A manifest's name, a model name, a server's answer or fingerprint may hold a newline (a forged line of output of its
own: "Group: qualified"), a bidirectional control (U+202E reorders what a reader sees) or a zero-width character
(two names that look alike). The terminal, report.md, report.html, report.json, junit.xml, inventory.md and the
step summary show none of them raw: no line of output starts inside such text, bidirectional controls are shown
escaped (`\\u202e`) everywhere, zero-width characters in names only (answers keep their joiners). The evidence
(result.json) keeps the raw text.
"""

from __future__ import annotations

import io
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import pytest
from helpers import run_main

from trtmc_videoqa.common.text_escape import (
    ControlFree,
    html_text,
    json_inert,
    md_code,
    md_text,
    one_line,
    shown_name,
    xml_text,
)
from trtmc_videoqa.report.group import group_line
from trtmc_videoqa.results import Provenance, Report, RequestRow, ResultRow

FORGED = "Group: qualified"
# A name that prints a forged verdict line and a forged group line of its own, with a bidi override and a
# zero-width space in it.
NAME = f"vidqa-2b-native: aiperf-qualified — every gate passed\n{FORGED}\nx\u202eevil\u200bname"
# An answer with a forged line, a right-to-left override, an isolate, and a zero-width joiner (legitimate in answers).
ANSWER = f"B\n{FORGED}\n\u202egpj.exe \u2066x\u2069 \U0001f469\u200d\U0001f4bb\u2028after"
BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]
FIXTURE = Path(__file__).parent / "fixtures" / "trtmc_families"


def _forged_lines(text: str) -> list[str]:
    """Lines of the output that start with what the hostile text carried after its newline."""
    return [line for line in text.splitlines() if line.lstrip(" |-#>*`").startswith(FORGED)]


class _Page(HTMLParser):
    """A page as a browser shows it: each text node with its white space collapsed (no element of the report keeps
    line breaks), and the tooltips, which do."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.tooltips: list[str] = []
        self.feed(page)

    def handle_data(self, data: str) -> None:
        self.texts.append(" ".join(data.split()))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tooltips += [value or "" for name, value in attrs if name == "title"]


# --- the escaping functions -------------------------------------------------------------------------------------


def test_every_bidirectional_control_is_shown_escaped_by_every_human_facing_function() -> None:
    for char in BIDI:
        escape = f"\\u{ord(char):04x}"
        for function in (one_line, shown_name, md_text, md_code, html_text, xml_text):
            shown = function(f"a{char}b")
            assert char not in shown, (function.__name__, char)
            assert escape in shown.replace("\\\\", "\\"), (function.__name__, shown)


def test_zero_width_characters_are_escaped_in_names_only() -> None:
    assert shown_name("vidqa\u200b-2b") == "vidqa\\u200b-2b"
    assert shown_name("a\ufeffb\u2060c\u200dd") == "a\\ufeffb\\u2060c\\u200dd"
    # Answers keep their joiners (a family emoji, a Devanagari conjunct).
    assert one_line("\U0001f469\u200d\U0001f4bb") == "\U0001f469\u200d\U0001f4bb"
    assert md_text("क्\u200dष") == "क्\u200dष"


def test_no_line_break_survives_one_line_or_a_name() -> None:
    for breaker in ["\n", "\r", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\r\n"]:
        assert "\n" not in one_line(f"a{breaker}{FORGED}") and "\r" not in one_line(f"a{breaker}b")
        assert len(shown_name(f"a{breaker}b").splitlines()) == 1, repr(breaker)


def test_json_keeps_the_data_and_shows_the_escape() -> None:
    document = json.dumps({"answer": ANSWER, "name": NAME}, ensure_ascii=False)
    inert = json_inert(document)
    assert json.loads(inert) == {"answer": ANSWER, "name": NAME}  # the same data
    assert not any(char in inert for char in [*BIDI, "\u200b", "\u200d", "\u2028"])
    assert "\\u202e" in inert and "\\u200b" in inert


def test_the_terminal_stream_escapes_bidirectional_controls() -> None:
    buffer = io.StringIO()
    ControlFree(buffer).write("left\u202eright\x1b[2J\n")
    assert buffer.getvalue() == "left\\u202eright[2J\n"


# --- the reports ---------------------------------------------------------------------------------------------------


def _hostile_report() -> Report:
    requests = [
        RequestRow(
            session_id="s1",
            phase="profiling",
            question_id="q\nGroup: qualified",
            clip_id="c",
            repeat=0,
            answer=ANSWER,
            expected="B",
            grade="correct",
        )
    ]
    row = ResultRow(
        profile=NAME,
        status="failed",
        failed_stage="output-check",
        status_reason=f"the server answered {ANSWER}",
        requests=requests,
        provenance=Provenance(
            tool_versions={}, workload="synthetic", workload_digest="0" * 64, mode="endpoint", served_by=ANSWER
        ),
        commands={"aiperf": "aiperf profile --model m"},
    )
    return Report(
        title="t",
        generated_by="t",
        sources=["."],
        reference_self_test=False,
        group=group_line([row]),
        rows=[row],
        counts={"failed": 1},
    )


def test_reports_carry_no_forged_line_and_no_raw_bidirectional_control(tmp_path: Path, monkeypatch) -> None:
    from trtmc_videoqa.report import write_report

    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    report = _hostile_report()
    write_report(report, tmp_path)
    for name in ["report.md", "report.html", "report.json", "junit.xml", "summary.md"]:
        text = (tmp_path / name).read_text()
        if name == "report.html":  # what a browser shows (a data- attribute keeps the name as it is, unshown)
            page = _Page(text)
            assert not [t for t in page.texts if t.startswith(FORGED)] and _forged_lines("\n".join(page.tooltips)) == []
            assert "<pre" not in text and "white-space:pre" not in text
            text = "\n".join(page.texts + page.tooltips)
        else:
            assert _forged_lines(text) == [], name
        assert not any(char in text for char in BIDI), name
        assert "\u2028" not in text, name
        assert "\\u202e" in text, name
        assert "\u200b" not in text, f"{name}: a name's zero-width space shown raw"
    markdown = (tmp_path / "report.md").read_text()
    assert "\u200d" in markdown  # the answer's joiner is kept
    assert "x\\\\u202eevil\\\\u200bname" in markdown or "x\\u202eevil\\u200bname" in markdown
    ElementTree.fromstring((tmp_path / "junit.xml").read_bytes())  # still valid XML
    assert json.loads((tmp_path / "report.json").read_text())["rows"][0]["profile"] == NAME  # the same data


def test_the_evidence_keeps_the_raw_text(tmp_path: Path) -> None:
    from trtmc_videoqa.common.atomic_write import write_model_atomic

    row = _hostile_report().rows[0]
    write_model_atomic(tmp_path / "result.json", row)
    raw = (tmp_path / "result.json").read_text()
    assert "\u202e" in raw and "\u200d" in raw  # result.json is evidence: written as it came
    assert ResultRow.model_validate_json(raw).requests[0].answer == ANSWER


# --- the terminal ----------------------------------------------------------------------------------------------------


def _hostile_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "trtmc"
    shutil.copytree(FIXTURE, tree)
    manifests = tree / "families" / "vidqa" / "tests" / "manifests"
    data = json.loads((manifests / "vidqa-2b-native.json").read_text())
    data["name"] = NAME
    (manifests / "vidqa-2b-native.json").write_text(json.dumps(data))
    return tree


def test_inventory_and_a_qualify_plan_print_no_forged_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _hostile_tree(tmp_path)
    inventory = run_main(capsys, "inventory", "--trtmc", str(tree), "--out", str(tmp_path / "inv"))
    assert inventory.returncode == 0, inventory.stderr
    plan = run_main(capsys, "qualify", "--trtmc", str(tree), "--dry-run", "--out", str(tmp_path / "q"))
    assert plan.returncode == 0, plan.stderr
    for done in (inventory, plan):
        output = done.stdout + done.stderr
        assert _forged_lines(output) == [], output
        assert not any(char in output for char in BIDI) and "\u200b" not in output
    assert "\\u202e" in inventory.stdout + plan.stdout
    markdown = (tmp_path / "inv" / "inventory.md").read_text()
    assert _forged_lines(markdown) == [] and "\u202e" not in markdown and "\u200b" not in markdown


def test_a_row_printed_by_qualify_is_one_line(capsys) -> None:
    from trtmc_videoqa.cli.run_output import print_outcome
    from trtmc_videoqa.runs.owner import RunOutcome

    print_outcome(RunOutcome(_hostile_report().rows, Path("out") / "report.html", 0))
    printed = capsys.readouterr().out
    assert _forged_lines(printed) == []
    # The row's name holds two line breaks: it stands on one table line and one reason line, never three lines.
    assert sum("evil" in line for line in printed.splitlines()) == 2
    assert not any(line.startswith(("Group: qualified", "x\\u202e")) for line in printed.splitlines())
    assert "\u202e" not in printed and "\u200b" not in printed and "x\\u202eevil\\u200bname" in printed
