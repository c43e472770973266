"""C and C++ source as tokens, in one pass and linear time: what the audit's header and runtime readers match on.

One master pattern takes the text from left to right, each piece once: comments are skipped (a block comment left
open runs to the end of the file, as in C), a string or character literal is one token (left open, it ends at the
end of its line), an identifier, keyword or number is a `word`, and anything else one character of `punct`. No
pattern looks back or tries the same text twice, so the work grows with the text, never with its square, whatever
the text is. Each token carries its line and whether it opens its physical line or its logical line (a backslash
at the end of a line continues it, as a preprocessor directive does). Brackets nested deeper than the budget make
the file unreadable (`Unreadable`), said by the reader that asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from .bounded_source import Unreadable

MAX_BRACKET_DEPTH = 256  # ( [ { open at once; a real header or source nests a few dozen at most

_TOKEN = re.compile(
    r"""
    (?P<newline>\r?\n)
    | (?P<continued>\\[ \t]*\r?\n)
    | (?P<space>[ \t\f\v\r]+)
    | (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*(?s:.*?)(?:\*/|\Z))
    | (?P<word>\w+)
    | (?P<string>"(?:[^"\\\n]++|\\.)*+")
    | (?P<char>'(?:[^'\\\n]++|\\.)*+')
    | (?P<open>"(?:[^"\\\n]++|\\.)*+|'(?:[^'\\\n]++|\\.)*+)
    | (?P<punct>.)
    """,
    re.VERBOSE,
)
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")


class Token(NamedTuple):
    kind: str  # word, string, char, open (a literal its line ends before its quote) or punct
    text: str
    line: int  # 1-based physical line where it starts
    start: int  # offset in the text
    line_start: bool  # the first token of its physical line
    logical_start: bool  # the first token of its logical line (a backslash-newline does not end one)

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def content(self) -> str:
        """A string or character literal's text between its quotes, escapes as written."""
        return self.text[1:-1]

    def adjacent(self, after: Token) -> bool:
        """Whether `after` starts right where this token ends, nothing between."""
        return after.start == self.end


def tokens(text: str, rel: str, max_depth: int = MAX_BRACKET_DEPTH) -> Iterator[Token]:
    """The tokens of a C or C++ text; Unreadable (not noted: the caller says what it costs) past the depth budget."""
    line, line_start, logical_start, depth = 1, True, True, 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "punct"
        if kind == "newline":
            line, line_start, logical_start = line + 1, True, True
            continue
        if kind == "continued":
            line, line_start = line + 1, True
            continue
        if kind in ("space", "line_comment"):
            continue
        value = match.group()
        if kind == "block_comment":
            breaks = value.count("\n")
            line, line_start = line + breaks, line_start or bool(breaks)
            continue
        if kind == "punct" and value in _OPEN:
            depth += 1
            if depth > max_depth:
                raise Unreadable(rel, "too deep", f"brackets nested more than {max_depth} deep (line {line})")
        elif kind == "punct" and value in _CLOSE:
            depth = max(depth - 1, 0)
        yield Token(kind, value, line, match.start(), line_start, logical_start)
        line_start = logical_start = False


def lines_of(text: str) -> list[str]:
    """The text's physical lines as the tokens count them (split at each newline), for excerpts."""
    return text.split("\n")
