"""One file of a checkout read within budget: the one place the audit reads a source file as text or as Python.

A checkout is input the tool did not write. Every reader of the audit that takes one of its files as text comes
here: the file must be a regular file whose real location stays in the checkout (never a FIFO, a device or a link
out), of at most the reader's size budget, and UTF-8 text where the reader needs it exactly; Python is parsed with
`ast` and its tree must be no deeper than a nesting budget, so that no reader walking it can run out of stack
(Python's own parser gives up on deep nesting with RecursionError or MemoryError, caught here too). A file refused
raises `Unreadable` (its path, a short name of what happened, and why in words) and is noted in the audit's ledger:
`run_inventory` opens one (`unreadable_files()`) and names each refused file in the inventory's `skipped` list,
with why and what that costs; the reader goes on without it, and so does the audit.
"""

from __future__ import annotations

import ast
import contextvars
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..results import Skipped
from .tree import not_regular_reason

# Levels of a syntax tree (every node counts, its expression context too). The deepest module of this package, of
# pydantic and of numpy is under 50; at 100 no reader's walk of the tree comes near Python's recursion limit.
MAX_PYTHON_DEPTH = 100
# Levels of a JSON document (a manifest): theirs are under 10; a document past this could not be written back.
MAX_JSON_DEPTH = 64


class Unreadable(Exception):
    """A file of the checkout not read: `name` says what happened in a word or two, `why` in a sentence."""

    def __init__(self, rel: str, name: str, why: str) -> None:
        super().__init__(f"{rel}: {why}")
        self.rel = rel
        self.name = name
        self.why = why


@dataclass
class Ledger:
    """The files the audit could not read, each named once, in the order they were met."""

    skipped: list[Skipped] = field(default_factory=list)
    _paths: set[str] = field(default_factory=set)

    def note(self, refused: Unreadable, cost: str) -> None:
        if refused.rel not in self._paths:
            self._paths.add(refused.rel)
            self.skipped.append(Skipped(path=refused.rel, reason=f"{refused.why}; not read: {cost}"))


_LEDGER: contextvars.ContextVar[Ledger | None] = contextvars.ContextVar("unreadable_files", default=None)


@contextmanager
def unreadable_files() -> Iterator[Ledger]:
    """The ledger of one audit: every file refused while it is open is noted in it."""
    ledger = Ledger()
    token = _LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        _LEDGER.reset(token)


def note_unreadable(refused: Unreadable, cost: str) -> None:
    """Name a refused file in the open audit's ledger (none open: a reader used on its own, nothing to name)."""
    ledger = _LEDGER.get()
    if ledger is not None:
        ledger.note(refused, cost)


def read_text(root: Path, rel: str, max_bytes: int, cost: str, *, exact: bool = True) -> str:
    """The text of `root/rel`, within budget; else Unreadable, noted with its cost. `exact=False` reads bytes that
    are not UTF-8 as replacement characters (a marker search), instead of refusing the file."""
    try:
        return _read_text(root, rel, max_bytes, exact)
    except Unreadable as refused:
        note_unreadable(refused, cost)
        raise


def _read_text(root: Path, rel: str, max_bytes: int, exact: bool) -> str:
    path = root / rel
    real, base = os.path.realpath(path), os.path.realpath(root)
    if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
        raise Unreadable(rel, "outside", "a link leading outside the checkout, or one that cannot be resolved")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        why = f"could not be opened ({error.strerror or error})"
        raise Unreadable(rel, "OSError", why) from None
    with os.fdopen(fd, "rb") as stream:
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Unreadable(rel, "not a regular file", not_regular_reason(path).removesuffix("; not read"))
            data = stream.read(max_bytes + 1)
        except OSError as error:
            raise Unreadable(rel, "OSError", f"could not be read ({error.strerror or error})") from None
    if len(data) > max_bytes:
        size = max(info.st_size, len(data))
        raise Unreadable(rel, "too large", f"{size} bytes, over the {max_bytes}-byte budget for such a file")
    try:
        text = data.decode("utf-8", errors="strict" if exact else "replace")
    except UnicodeDecodeError as error:
        why = f"not UTF-8 text (UnicodeDecodeError at byte {error.start})"
        raise Unreadable(rel, "UnicodeDecodeError", why) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text  # as text mode reads it


def parse_python(text: str, rel: str, cost: str, max_depth: int = MAX_PYTHON_DEPTH) -> ast.Module:
    """Python source as a syntax tree no deeper than `max_depth`; else Unreadable, noted with its cost."""
    try:
        tree = ast.parse(text, filename=rel)
    except SyntaxError as error:
        refused = Unreadable(rel, "SyntaxError", f"not valid Python (SyntaxError at line {error.lineno}: {error.msg})")
    except (RecursionError, MemoryError) as error:  # the parser's own limits on nesting
        name = type(error).__name__
        refused = Unreadable(rel, name, f"nested too deeply for Python's parser ({name})")
    except ValueError as error:  # a NUL byte, on Pythons that say so with ValueError
        refused = Unreadable(rel, "ValueError", f"not Python source ({error})")
    else:
        if not deeper_than(tree, max_depth):
            return tree
        refused = Unreadable(rel, "too deep", f"nested more than {max_depth} levels deep")
    note_unreadable(refused, cost)
    raise refused


def read_python(root: Path, rel: str, max_bytes: int, cost: str) -> tuple[str, ast.Module]:
    """A Python file's text and syntax tree, each within budget; else Unreadable, noted with its cost."""
    text = read_text(root, rel, max_bytes, cost)
    return text, parse_python(text, rel, cost)


def deeper_than(tree: ast.AST, limit: int) -> bool:
    """Whether a syntax tree has a node more than `limit` levels down (walked with a list, never recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def json_deeper_than(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether parsed JSON nests arrays and objects more than `limit` levels (walked with a list)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
