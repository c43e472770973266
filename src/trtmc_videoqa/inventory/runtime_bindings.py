"""The Task interfaces a family's runtime implements or binds, read as text from its C++ sources (never built).

`class Pipeline : public IStructuredDecision` implements an interface; `bind<internal::IVideoTextToText>(...)`
in a `task_bindings()` function binds one. Each is an evidence line: it shows a runtime speaks the Task, and its
absence is named in the row, but it never decides a verdict alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..results import Evidence
from .bounded_source import Unreadable, note_unreadable, read_text
from .c_tokens import Token, lines_of, tokens
from .tree import walk_files

SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hpp")
MAX_SOURCE_BYTES = 2 * 1024 * 1024
MAX_SOURCES = 2000

MAX_BASE_TOKENS = 1024  # of one class head's base list; a longer one is no class head the audit reads
MAX_BASES = 64  # interfaces one class head is cited implementing
_COST = "its Task bindings are unknown"
_INTERFACE = re.compile(r"I[A-Z]\w*")


@dataclass(frozen=True)
class Binding:
    interface: str  # IVideoTextToText
    how: str  # "implements" or "binds"
    holder: str  # the class implementing it, or "task_bindings()"
    file: str
    line: int
    excerpt: str

    def evidence(self, task: str) -> Evidence:
        shows = (
            f"the family's runtime class {self.holder} implements {self.interface} ({task})"
            if self.how == "implements"
            else f"the family's runtime binds {self.interface} ({task}) in task_bindings()"
        )
        return Evidence(file=self.file, line=self.line, excerpt=self.excerpt[:160], shows=shows)


def read_runtime_bindings(root: Path, family: str) -> tuple[list[Binding], list[str]]:
    """Every interface the family's C++ sources implement or bind, and what could not be read."""
    base = root / "families" / family
    if not base.is_dir() or base.is_symlink():
        return [], []
    found: list[Binding] = []
    problems: list[str] = []
    listed = walk_files(base, lambda folder: folder != "tests")
    for deep in listed.too_deep:
        note_unreadable(Unreadable(deep.relative_to(root).as_posix(), "too deep", listed.why), _COST)
    paths = sorted(p for p in listed.files if p.suffix in SOURCE_SUFFIXES)
    for path in paths[:MAX_SOURCES]:
        rel = path.relative_to(root).as_posix()
        if path.is_symlink() or not path.is_file():
            continue
        try:
            text = read_text(root, rel, MAX_SOURCE_BYTES, _COST)
            found.extend(_bindings(rel, text) if _INTERFACE.search(text) else [])  # no I<Upper>: nothing to bind
        except Unreadable as refused:
            note_unreadable(refused, _COST)
            problems.append(f"{rel}: unreadable ({refused.name}); {_COST}")
    if len(paths) > MAX_SOURCES:
        problems.append(f"families/{family}: more than {MAX_SOURCES} C++ sources; only the first were read")
    return found, problems


def _bindings(rel: str, text: str) -> list[Binding]:
    """Class heads `class|struct NAME [final] : BASES {` and `bind<...IName>`, read over tokens (c_tokens.py)."""
    lines = lines_of(text)
    found = [
        Binding(token.text, how, holder, rel, token.line, lines[token.line - 1].strip())
        for how, holder, token in _interfaces(tokens(text, rel))
    ]
    return [b for b in found if b.how == "implements"] + [b for b in found if b.how == "binds"]


def _interfaces(stream: Iterator[Token]) -> Iterator[tuple[str, str, Token]]:
    """(how, holder, the interface's token) for each base of a class head named I<Upper>... (the last name of a
    qualified one: `trtmc::internal::IVideoTextToText`) and each `bind<...>` of one, in order; one token at a time."""
    head, bind = _ClassHead(), _Bind()
    for token in stream:
        bound = bind.feed(token)
        if bound is not None:
            yield "binds", "task_bindings()", bound
        yield from (("implements", head.name, base) for base in head.feed(token))


class _ClassHead:
    """`class|struct NAME [final] : BASES {`: the interfaces among the bases once the `{` comes; a `;` first, or a
    base list past its budget, is no class head."""

    def __init__(self) -> None:
        self.state: str | None = None  # name, colon (after final), colon-or-final, bases
        self.name = ""
        self.bases: list[Token] = []
        self.seen = 0

    def feed(self, token: Token) -> list[Token]:
        state, text = self.state, token.text
        if state == "bases":
            return self._base(token)
        if state == "name" and token.kind == "word":
            self.state, self.name = "colon-or-final", text
        elif state in ("colon-or-final", "colon") and text == ":":
            self.state, self.bases, self.seen = "bases", [], 0
        elif state == "colon-or-final" and text == "final":
            self.state = "colon"
        else:
            self.state = "name" if token.kind == "word" and text in ("class", "struct") else None
        return []

    def _base(self, token: Token) -> list[Token]:
        self.seen += 1
        if token.text == "{":
            self.state = None
            return self.bases
        if token.text == ";" or self.seen > MAX_BASE_TOKENS:
            self.state = None
        elif token.text == ":" and self.bases and self.bases[-1].end == token.start:
            self.bases.pop()  # IName::... qualifies the name after it
        elif token.kind == "word" and _INTERFACE.fullmatch(token.text) and len(self.bases) < MAX_BASES:
            self.bases.append(token)
        return []


class _Bind:
    """`bind<IName>` or `bind<ns::IName>`: the interface's token once the `>` comes."""

    def __init__(self) -> None:
        self.state: str | None = None  # open (after bind), word, after-word, colon
        self.last: Token | None = None

    def feed(self, token: Token) -> Token | None:
        state, text = self.state, token.text
        if state == "open" and text == "<" or state == "colon" and text == ":":
            self.state = "word"
        elif state == "word" and token.kind == "word":
            self.state, self.last = "after-word", token
        elif state == "after-word" and text == ":":
            self.state = "colon"
        elif state == "after-word" and text == ">" and self.last is not None:
            self.state = None
            return self.last if _INTERFACE.fullmatch(self.last.text) else None
        else:
            self.state = "open" if token.kind == "word" and text == "bind" else None
        return None


def bound_tasks(bindings: list[Binding], interfaces: dict[str, str]) -> dict[str, list[Binding]]:
    """The Tasks these bindings speak, by Task id, through the interface-to-Task map (task_registry.py)."""
    out: dict[str, list[Binding]] = {}
    for binding in bindings:
        task = interfaces.get(binding.interface)
        if task:
            out.setdefault(task, []).append(binding)
    return out
