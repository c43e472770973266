"""Text from outside (a model's answer, a server's fingerprint, a manifest or file name) made safe for each format
the tool writes, one function per format: Markdown prose, Markdown code, HTML, XML, JSON and the terminal.

Such text may hold `|` or a newline (breaking a Markdown table row, or starting a forged line of its own on the
terminal), `<script>` (raw HTML in Markdown), control characters (ESC makes junit.xml invalid XML and, printed,
drives the terminal), or bidirectional controls (U+202E turns `gpj.exe` into what reads as `exe.jpg`). Every
human-facing output shows a bidirectional control (U+202A-U+202E, U+2066-U+2069) and a line or paragraph separator
escaped, as `\\u202e`; a name (`shown_name`: a profile, a model, a workload) shows its zero-width and invisible
formatting characters escaped too, so two names that look alike never read as one. Answers keep their joiners,
which many scripts need. The evidence files (result.json, requests.jsonl, AIPerf's exports) keep the raw text.
Imports nothing of ours.
"""

from __future__ import annotations

import html
import re
from typing import TextIO

# C0 controls but tab and newline, DEL, and C1 controls (0x9b is a one-byte CSI on some terminals).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What XML 1.0 allows: tab, newline, carriage return and the ranges below; anything else makes the file invalid.
_NOT_XML = re.compile(r"[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]|[\x7f-\x9f]")
# Characters that open markup in Markdown prose or end a GFM table cell, each written escaped (an underscore inside a
# word starts no emphasis, so names like model_call_ms stay as they read).
_MD_SPECIAL = re.compile(r"([\\`*\[\]|])")
_MD_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Bidirectional embeddings, overrides and isolates, and the line and paragraph separators: shown as escapes.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u2028\u2029]")
# Zero-width and invisible formatting characters (and the Arabic letter mark): shown as escapes in names only.
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u061c\u180e]")
# What a JSON report writes as a \u escape inside its strings (the value parsed back is the same text).
_JSON_ESCAPED = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\u200b-\u200f\u2060-\u2064\ufeff\u061c]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def without_controls(text: str) -> str:
    """Control characters removed, bidirectional controls and line separators shown escaped; tab and newline
    kept."""
    return _BIDI.sub(_escape, _CONTROLS.sub("", text))


def one_line(text: object) -> str:
    """Control characters removed, bidirectional controls escaped, and every run of white space (newlines too) one
    space: nothing in it starts a line of output of its own."""
    return " ".join(without_controls(str(text)).split())


def shown_name(text: object) -> str:
    """A name from outside (a profile, a model, a workload, a manifest's name) as one line, its bidirectional,
    zero-width and invisible formatting characters shown as escapes."""
    return _INVISIBLE.sub(_escape, one_line(text))


def json_inert(text: str) -> str:
    """A JSON document (as `json.dumps` or pydantic writes it) with C1 controls, bidirectional controls, line
    separators and zero-width characters written as `\\u` escapes: the data parsed back is the same, the file read
    by a person shows them. Such characters only occur inside JSON strings, where the escape is valid."""
    return _JSON_ESCAPED.sub(_escape, text)


def md_text(text: object) -> str:
    """Markdown prose or a table cell: one line, nothing in it read as markup, HTML or a cell boundary."""
    plain = _MD_SPECIAL.sub(r"\\\1", one_line(text))
    return "".join(_MD_HTML.get(char, char) for char in plain)


def md_code(text: object, *, in_table: bool = False) -> str:
    """An inline code span that holds any one line: a fence longer than any run of backticks in it (a table cell's
    `|` escaped, which GFM reads inside code spans too)."""
    one = one_line(text)
    if not one:
        return "(empty)"
    if in_table:
        one = one.replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", one)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {one} {fence}" if longest else f"`{one}`"


def md_fence(text: object, indent: str = "") -> list[str]:
    """A fenced code block holding the text as it is (newlines kept, control characters removed), its fence longer
    than any run of backticks inside."""
    body = without_controls(str(text))
    longest = max((len(run) for run in re.findall("`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{indent}{fence}", *(f"{indent}{line}" for line in body.split("\n")), f"{indent}{fence}"]


def html_text(text: object) -> str:
    """HTML text or an attribute value: control characters removed, bidirectional controls shown escaped, then
    escaped (quotes too). A newline left in text is white space where the page shows it (no element of the page
    keeps line breaks), so it starts no line."""
    return html.escape(without_controls(str(text)), quote=True)


def xml_text(text: str) -> str:
    """Only what XML 1.0 allows (ElementTree escapes the markup characters itself, but writes any character), the
    bidirectional controls shown escaped."""
    return _BIDI.sub(_escape, _NOT_XML.sub("", text))


def cut(text: str, width: int) -> str:
    """At most `width` characters, the last an ellipsis where the text was cut."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def cut_middle(text: str, width: int, head: int | None = None) -> str:
    """At most `width` characters, cut in the middle where too long: two names that differ at their end (a
    workload, where a row was served) stay told apart. `head` characters are kept from the start (half by
    default), the rest from the end."""
    if len(text) <= width:
        return text
    kept = (width - 1) // 2 if head is None else head
    return text[:kept] + "…" + text[len(text) - (width - 1 - kept) :]


class ControlFree:
    """A terminal stream that writes no control character but tab and newline, and shows bidirectional controls
    escaped: nothing printed drives the terminal or reorders a line. (Each caller writes text from outside with
    `one_line` or `shown_name`, so none of it starts a line of its own.)"""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(without_controls(text))

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)
