"""The checkout's own names for a clip in a Task request: the members of the C API's video view struct.

The semantic Task API defines one clip as ``trtmc_video_view_v1``: its frames, in order, and one time in seconds
per frame. A video-to-text Task's HTTP request has no wire format of its own in TRTMC yet, so where a task adapter
builds one, the tool finds its frame list and its times by these names, read from the headers (as text, never
compiled), and hard-codes none of them. The frames member is the view's first pointer member; the times member is
the one of a double (or ``f64``) type; a ``*_count`` member is neither.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .bounded_source import Unreadable, note_unreadable, read_text
from .c_tokens import Token, tokens
from .task_registry import API_HEADERS, MAX_HEADER_BYTES

VIEW_STRUCT = "trtmc_video_view_v1"
MAX_VIEW_TOKENS = 4096  # of the struct's body: a view of frames and times is a few dozen
_TIME_TYPES = frozenset({"double", "f64"})
_COST = "the video view's member names are unknown"


@dataclass(frozen=True)
class VideoView:
    frames: str
    times: str | None
    file: str  # relative to the checkout
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def read_video_view(checkout: Path) -> VideoView | None:
    """The view's frames and times member names, where a header of the C API defines the struct; else None."""
    folder = checkout / API_HEADERS
    try:
        headers = sorted(path for path in folder.glob("*.h") if path.is_file())
    except OSError:
        return None
    for path in headers:
        rel = f"{API_HEADERS}/{path.name}"
        try:
            found = _view_struct(tokens(read_text(checkout, rel, MAX_HEADER_BYTES, _COST, exact=False), rel))
        except Unreadable as refused:
            note_unreadable(refused, _COST)
            continue
        view = _members(found[1]) if found is not None else None
        if found is not None and view is not None:
            return VideoView(view[0], view[1], rel, found[0].line)
    return None


def _view_struct(stream: Iterator[Token]) -> tuple[Token, list[Token]] | None:
    """The first `typedef struct [tag] { ... } trtmc_video_view_v1;` of a header, else its first `struct
    trtmc_video_view_v1 { ... };` (a body with no brace in it): the token it starts at and the body's tokens."""
    typedef = _Shape(("typedef", "struct"), True, (VIEW_STRUCT, ";"))
    plain = _Shape(("struct", VIEW_STRUCT), False, (";",))
    struct: tuple[Token, list[Token]] | None = None
    for token in stream:
        found = typedef.feed(token)
        if found is not None:
            return found
        if struct is None:
            struct = plain.feed(token)
    return struct


class _Shape:
    """`<prefix> [tag] { <body> } <suffix>`, read one token at a time (a body holds no brace, and at most
    MAX_VIEW_TOKENS tokens); a token that breaks the shape may start it again."""

    def __init__(self, prefix: tuple[str, ...], tag: bool, suffix: tuple[str, ...]) -> None:
        self.prefix, self.tag, self.suffix = prefix, tag, suffix
        self.start: Token | None = None
        self.matched = 0  # words of the prefix seen, then one more for a tag
        self.body: list[Token] | None = None
        self.after: int | None = None  # words of the suffix seen after the closing brace

    def feed(self, token: Token) -> tuple[Token, list[Token]] | None:
        text = token.text
        if self.body is None and self.matched < len(self.prefix):
            if self.matched and text == self.prefix[self.matched]:
                self.matched += 1
                return None
        elif self.body is None:
            if text == "{":
                self.body = []
                return None
            if self.tag and self.matched == len(self.prefix) and token.kind == "word":
                self.matched += 1
                return None
        elif self.after is None:
            if text == "}":
                self.after = 0
                return None
            if text != "{" and len(self.body) < MAX_VIEW_TOKENS:
                self.body.append(token)
                return None
        elif text == self.suffix[self.after]:
            self.after += 1
            if self.after < len(self.suffix):
                return None
            start, body = self.start, self.body
            self._restart(None)
            return (start, body) if start is not None else None
        self._restart(token)
        return None

    def _restart(self, token: Token | None) -> None:
        starts = token is not None and token.text == self.prefix[0]
        self.start, self.matched, self.body, self.after = (token if starts else None), int(starts), None, None


def _members(body: list[Token]) -> tuple[str, str | None] | None:
    """Each declaration of the body (`<type words and *> <name>;`): the frames are the first pointer member, the
    times the first of a double or f64 type; a `*_count` member is neither."""
    frames: str | None = None
    times: str | None = None
    declaration: list[Token] = []
    for token in body:
        if token.text != ";":
            declaration.append(token)
            continue
        kind, name = declaration[:-1], (declaration[-1] if declaration else None)
        declaration = []
        plain = all(t.kind == "word" or t.text == "*" for t in kind)
        if name is None or name.kind != "word" or not plain or name.text.endswith("_count"):
            continue
        if times is None and any(t.text in _TIME_TYPES or "_f64_" in t.text for t in kind):
            times = name.text
        elif frames is None and any(t.text == "*" for t in kind):
            frames = name.text
    return None if frames is None else (frames, times)
