"""The Task interfaces a family's runtime implements or binds, read as text from its C++ sources (never built).

`class Pipeline : public IStructuredDecision` implements an interface; `bind<internal::IVideoTextToText>(...)`
in a `task_bindings()` function binds one. Each is an evidence line: it shows a runtime speaks the Task, and its
absence is named in the row, but it never decides a verdict alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..results import Evidence

SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hpp")
MAX_SOURCE_BYTES = 2 * 1024 * 1024
MAX_SOURCES = 2000

_CLASS = re.compile(r"\b(?:class|struct)\s+(\w+)\s*(?:final\s*)?:\s*([^{;]+)\{")
_BASE = re.compile(r"(?:\w+::)*(I[A-Z]\w*)\b")
_BIND = re.compile(r"\bbind\s*<\s*(?:\w+::)*(I[A-Z]\w*)\s*>")


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
    paths = sorted(
        p for p in base.rglob("*") if p.suffix in SOURCE_SUFFIXES and "tests" not in p.relative_to(base).parts
    )
    for path in paths[:MAX_SOURCES]:
        rel = path.relative_to(root).as_posix()
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_SOURCE_BYTES:
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            problems.append(f"{rel}: unreadable ({type(error).__name__}); its Task bindings are unknown")
            continue
        found.extend(_bindings(rel, text))
    if len(paths) > MAX_SOURCES:
        problems.append(f"families/{family}: more than {MAX_SOURCES} C++ sources; only the first were read")
    return found, problems


def _bindings(rel: str, text: str) -> list[Binding]:
    lines = text.splitlines()
    found: list[Binding] = []
    for match in _CLASS.finditer(text):
        for base in _BASE.finditer(match.group(2)):  # at the line naming it: a base list may span several lines
            line = text.count("\n", 0, match.start(2) + base.start()) + 1
            found.append(Binding(base.group(1), "implements", match.group(1), rel, line, lines[line - 1].strip()))
    for match in _BIND.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        found.append(Binding(match.group(1), "binds", "task_bindings()", rel, line, lines[line - 1].strip()))
    return found


def bound_tasks(bindings: list[Binding], interfaces: dict[str, str]) -> dict[str, list[Binding]]:
    """The Tasks these bindings speak, by Task id, through the interface-to-Task map (task_registry.py)."""
    out: dict[str, list[Binding]] = {}
    for binding in bindings:
        task = interfaces.get(binding.interface)
        if task:
            out.setdefault(task, []).append(binding)
    return out
