"""Text from outside (a model's answer, a server's fingerprint, a manifest or file name) made safe for each format
the tool writes, one function per format: Markdown prose, Markdown code, HTML, XML and the terminal.

Such text may hold `|` or a newline (breaking a Markdown table row), `<script>` (raw HTML in Markdown), or control
characters: ESC makes junit.xml invalid XML and, printed, drives the terminal. Imports nothing of ours.
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


def without_controls(text: str) -> str:
    """Control characters removed; tab and newline kept."""
    return _CONTROLS.sub("", text)


def one_line(text: object) -> str:
    """Control characters removed and every run of white space (newlines too) one space."""
    return " ".join(without_controls(str(text)).split())


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
    """HTML text or an attribute value: control characters removed, then escaped (quotes too)."""
    return html.escape(without_controls(str(text)), quote=True)


def xml_text(text: str) -> str:
    """Only what XML 1.0 allows (ElementTree escapes the markup characters itself, but writes any character)."""
    return _NOT_XML.sub("", text)


class ControlFree:
    """A terminal stream that writes no control character but tab and newline: nothing printed drives the terminal."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(without_controls(text))

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)
