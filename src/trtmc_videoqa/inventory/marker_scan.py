"""The family source's marker patterns, matched in time linear in the text (family_source.py says what they mean).

Most markers are words and fixed strings, which one regular expression matches in a single pass. Three reach past
a word: a timestamp behind an index (`frames[i].timestamp`), a timestamp field in a C++ frame struct's braces, and
one in a Python frame class's indented block. Written as patterns, each would try every start against the rest of
the text (`class A : ` or `frame[` repeated, a block of many frame classes), which grows with the square of the text
or worse. Here each is a scanner: its starts are found by a pattern that stops at a word, and the rest is looked up
in positions each found once per text (the next `]`, `{`, `}`, `timestamp`; the end of each indented block). The
patterns' own words are kept (family_source.py shows them as what was searched), and `Markers` merges the hits as
the alternation of them all would: leftmost first, the earlier pattern at one start, none overlapping.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Callable, Iterator

# The three patterns matched by scanners, as family_source.py lists them.
FRAME_INDEX_TIMESTAMP = r"\b(?:frame|video|clip)s?(?:\[[^\]\n]*\])?(?:\.|->)timestamp\w*"
STRUCT_FRAME_TIMESTAMP = r"\b(?:struct|class)\s+\w*Frame\w*[^{};\n]*\{[^}]*?\btimestamp\w*"
PYTHON_FRAME_TIMESTAMP = r"\bclass\s+\w*Frame\w*[^:\n]*:(?:\n(?:[ \t][^\n]*)?)*?\n[ \t]+timestamp\w*\s*:"

_FRAME_WORD = re.compile(r"\b(?:frame|video|clip)s?")
_ARROW_TIMESTAMP = re.compile(r"(?:\.|->)timestamp\w*")
_TYPE_KEYWORD = re.compile(r"\b(?:struct|class)")
_CLASS_KEYWORD = re.compile(r"\bclass")
_SPACE_WORD = re.compile(r"\s+(\w+)")
_TIMESTAMP_WORD = re.compile(r"\btimestamp\w*")
_FIELD_LINE = re.compile(r"[ \t]+timestamp\w*\s*:")


class Hit:
    """A marker found: the part of `re.Match` the audit reads (start, end, the text)."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self._text, self._start, self._end = text, start, end

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end

    def group(self, index: int = 0) -> str:
        if index:
            raise IndexError("a marker hit has no groups")
        return self._text[self._start : self._end]


class _Next:
    """The first match of a pattern at or after a position, for positions asked in increasing order: each part of
    the text is searched once, whatever the number of questions."""

    def __init__(self, text: str, pattern: re.Pattern[str]) -> None:
        self.text, self.pattern = text, pattern
        self.asked = -1
        self.found: re.Match[str] | None = None

    def at_or_after(self, position: int) -> re.Match[str] | None:
        if 0 <= self.asked <= position:  # the last search, from `asked`, found `found`: no match lies between
            if self.found is None:
                return None
            if position <= self.found.start():
                return self.found
        self.asked, self.found = position, self.pattern.search(self.text, position)
        return self.found


def _frame_index(text: str) -> Iterator[tuple[int, int]]:
    """`frame.timestamp`, `frames[i]->timestamp_s`: an index closes on its own line."""
    closing = _Next(text, re.compile(r"[\]\n]"))
    for word in _FRAME_WORD.finditer(text):
        at = word.end()
        if text.startswith("[", at):
            stop = closing.at_or_after(at + 1)
            if stop is None or stop.group() != "]":
                continue
            at = stop.end()
        tail = _ARROW_TIMESTAMP.match(text, at)
        if tail is not None:
            yield word.start(), tail.end()


def _struct_frame(text: str) -> Iterator[tuple[int, int]]:
    """`struct VisionFrame {` (its brace on the line of its name) with a `timestamp...` before the first `}`."""
    delimiter = _Next(text, re.compile(r"[{};\n]"))
    closing = _Next(text, re.compile(r"\}"))
    stamp = _Next(text, _TIMESTAMP_WORD)
    for keyword in _TYPE_KEYWORD.finditer(text):
        name = _SPACE_WORD.match(text, keyword.end())
        if name is None or "Frame" not in name.group(1):
            continue
        brace = delimiter.at_or_after(name.end())
        if brace is None or brace.group() != "{":
            continue
        field, end = stamp.at_or_after(brace.end()), closing.at_or_after(brace.end())
        if field is not None and (end is None or field.start() < end.start()):
            yield keyword.start(), field.end()


def _python_frame(text: str) -> Iterator[tuple[int, int]]:
    """`class VideoFrame(...):` and, in its block (blank or indented lines), a line `    timestamp...:`."""
    colon = _Next(text, re.compile(r"[:\n]"))
    blocks: dict[int, int | None] = {}  # a line's start -> the end of the field found walking on from it
    for keyword in _CLASS_KEYWORD.finditer(text):
        name = _SPACE_WORD.match(text, keyword.end())
        if name is None or "Frame" not in name.group(1):
            continue
        stop = colon.at_or_after(name.end())
        if stop is None or stop.group() != ":" or not text.startswith("\n", stop.end()):
            continue
        end = _field_below(text, stop.end() + 1, blocks)
        if end is not None:
            yield keyword.start(), end


def _field_below(text: str, line: int, blocks: dict[int, int | None]) -> int | None:
    """From a line's start, the end of the first `timestamp...:` field line before the block ends (a line neither
    blank nor indented); every line walked remembers the answer, so a line is walked once per text."""
    walked: list[int] = []
    found: int | None = None
    while line not in blocks:
        walked.append(line)
        field = _FIELD_LINE.match(text, line)
        if field is not None:
            found = field.end()
            break
        newline = text.find("\n", line)
        if line >= len(text) or text[line] not in " \t\n" or newline < 0:
            break
        line = newline + 1
    else:
        found = blocks[line]
    for start in walked:
        blocks[start] = found
    return found


SCANNERS: dict[str, Callable[[str], Iterator[tuple[int, int]]]] = {
    FRAME_INDEX_TIMESTAMP: _frame_index,
    STRUCT_FRAME_TIMESTAMP: _struct_frame,
    PYTHON_FRAME_TIMESTAMP: _python_frame,
}


class Markers:
    """A group's patterns as one matcher: the plain ones as one alternation (each a word or fixed string, linear),
    the others by their scanners; `finditer` and `search` as a compiled pattern has them."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.patterns = patterns
        plain = "|".join(f"(?P<p{index}>{p})" for index, p in enumerate(patterns) if p not in SCANNERS)
        self._plain = re.compile(plain) if plain else None

    def finditer(self, text: str) -> Iterator[Hit]:
        streams = [self._plain_hits(text)] + [
            ((start, index, end) for start, end in SCANNERS[p](text))
            for index, p in enumerate(self.patterns)
            if p in SCANNERS
        ]
        last_end = -1
        for start, _, end in heapq.merge(*streams):
            if start >= last_end:
                last_end = end
                yield Hit(text, start, end)

    def search(self, text: str) -> Hit | None:
        return next(self.finditer(text), None)

    def _plain_hits(self, text: str) -> Iterator[tuple[int, int, int]]:
        if self._plain is not None:
            for match in self._plain.finditer(text):  # the group that matched names the pattern: p<index>
                yield match.start(), int((match.lastgroup or "p0")[1:]), match.end()


@functools.cache
def markers(patterns: tuple[str, ...]) -> Markers:
    return Markers(patterns)
