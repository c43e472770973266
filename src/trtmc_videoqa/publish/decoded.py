"""What a reader of a public line gets once it is decoded: the check reads these forms as well as the raw line, so
an escape that splits a path from what precedes it (a JSON `\\n` right before it) or writes its characters
otherwise (`\\/`, `\\u002f`, `%2F`, `&amp;`, `\\[`, shell quotes, a `\\u202e` a report shows for a bidirectional
control) hides nothing.

The forms by the kind of file, as its reader sees it: a JSON file's string literals parsed; an HTML or XML file's
entities unescaped; a Markdown file's backslash escapes and entities undone; a shell line's words unquoted (what
bash passes to the program); in every human-facing file, the `\\uXXXX` a report writes for a control character
turned back into that character, so a path holding one is still the path; and anywhere, URL escapes decoded."""

from __future__ import annotations

import html
import json
import re
import shlex
from contextlib import suppress
from typing import Literal
from urllib.parse import unquote

from ..results.layout import COMMAND_FILE

FileKind = Literal["json", "html", "markdown", "shell", "text"]

# A JSON string literal: its escapes decoded, a path hides behind none of `\n`, `\t`, `\/` or `\u002f`. Read only in
# a JSON file, whose strings are whole on each line (a serializer wrote them): each is matched once, in linear time.
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
# CommonMark: a backslash before ASCII punctuation writes that character.
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
# What the reports write for a control character they show (common/text_escape.py): `\u202e`.
_SHOWN_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_SHELL_QUOTING = ("'", '"', "\\")


def file_kind(name: str) -> FileKind:
    """How a reader reads the file named `name` (a path relative to the scanned folder, or a file name)."""
    lowered = name.lower()
    if lowered.endswith((".json", ".jsonl")):
        return "json"
    if lowered.endswith((".html", ".htm", ".xml", ".svg")):
        return "html"
    if lowered.endswith(".md"):
        return "markdown"
    if lowered.endswith((".sh", COMMAND_FILE)):
        return "shell"
    return "text"


def decoded_forms(text: str, *, kind: FileKind) -> list[str]:
    """What a reader of this line gets once it is decoded, where that differs from the line as written (most lines:
    nothing), each form computed in linear time."""
    forms: list[str] = []
    if kind == "json" and "\\" in text:
        for literal in _JSON_STRING.finditer(text):
            if "\\" not in literal.group():
                continue
            with suppress(ValueError):
                forms.append(json.loads(literal.group()))
    elif kind == "html" and "&" in text:
        forms.append(html.unescape(text))
    elif kind == "markdown" and ("\\" in text or "&" in text):
        forms.append(html.unescape(_MD_ESCAPE.sub(r"\1", text)))
    elif kind == "shell" and any(quote in text for quote in _SHELL_QUOTING):
        with suppress(ValueError):
            forms.append(" ".join(shlex.split(text, comments=False)))
    if kind != "json" and "\\u" in text:  # a report shows a control character as `\u202e`: read it as written
        forms += [_SHOWN_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), form) for form in (text, *forms)]
    if _PERCENT_ESCAPE.search(text):
        forms += [unquote(form) for form in (text, *forms) if _PERCENT_ESCAPE.search(form)]
    return forms
