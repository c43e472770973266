"""What a reader of a public line gets once it is decoded: the check reads these forms as well as the raw line, so
an escape that splits a path from what precedes it (a JSON `\\n` right before it) or writes its slashes otherwise
(`\\/`, `\\u002f`, `%2F`) hides nothing."""

from __future__ import annotations

import json
import re
from contextlib import suppress
from urllib.parse import unquote

# A JSON string literal: its escapes decoded, a path hides behind none of `\n`, `\t`, `\/` or `\u002f`. Read only in
# a JSON file, whose strings are whole on each line (a serializer wrote them): each is matched once, in linear time.
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def decoded_forms(text: str, *, json_text: bool) -> list[str]:
    """What a reader of this line gets once it is decoded, where that differs from the line as written: each JSON
    string literal in it parsed (a line of a .json or .jsonl file holds its values escaped), and the line and those
    strings URL-decoded (`%2F` is a slash). `json_text`: the line is a JSON file's (.json, .jsonl)."""
    forms: list[str] = []
    if json_text and "\\" in text:
        for literal in _JSON_STRING.finditer(text):
            if "\\" not in literal.group():
                continue
            with suppress(ValueError):
                forms.append(json.loads(literal.group()))
    if _PERCENT_ESCAPE.search(text):
        forms += [unquote(form) for form in (text, *forms) if _PERCENT_ESCAPE.search(form)]
    return forms
