"""What each family declares it supports: `families/<family>/support.py`, read with `ast` (never imported or run).

Read: the `model_types`, `tasks` and `default_task` of every `family_support(...)` and `FamilySupport(...)` call
(keyword or, for `FamilySupport(tasks, default_task, precision)`, positional); the `architectures`,
`pipeline_classes` and `required_files` it matches checkpoints on; and Task names a function adds to a task list
under an `if` (a `describe(config)` adding `images_text_to_text` when the config has a vision part), each with its
line and its condition in words. A call or task list whose Tasks are not literal is reported as unreadable
statically, never guessed. A family without support.py has no declaration, and says so.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

SUPPORT_CALLS = ("family_support", "FamilySupport")
MATCH_NAMES = ("model_types", "architectures", "pipeline_classes", "required_files")
MAX_SUPPORT_BYTES = 1024 * 1024
# Config parts a condition may ask for, by a word of its source; checked against a local config.json's keys.
CONFIG_PARTS = {"vision": "a vision part", "audio": "an audio part", "video": "a video part"}


@dataclass(frozen=True)
class Declared:
    """One Task a family's support.py declares, where, and under what condition (None: unconditionally)."""

    task: str
    line: int
    condition: str | None = None  # in words
    config_parts: tuple[str, ...] = ()  # the config parts the condition needs ("vision", "audio")
    default: bool = False


@dataclass
class FamilyDeclaration:
    family: str
    file: str | None  # families/<family>/support.py, None when the family has none
    declared: list[Declared] = field(default_factory=list)
    matches: dict[str, list[str]] = field(default_factory=dict)  # model_types, architectures, ... -> values
    unreadable: list[str] = field(default_factory=list)  # what could not be read statically, with its line
    problem: str | None = None

    def declares(self, task: str) -> list[Declared]:
        return [d for d in self.declared if d.task == task]

    @property
    def tasks(self) -> list[str]:
        return sorted({d.task for d in self.declared})


def read_family_declaration(root: Path, family: str) -> FamilyDeclaration:
    rel = f"families/{family}/support.py"
    path = root / rel
    if not path.exists() and not path.is_symlink():
        return FamilyDeclaration(family, None)
    out = FamilyDeclaration(family, rel)
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_SUPPORT_BYTES:
            out.problem = f"{rel}: not a plain file of at most {MAX_SUPPORT_BYTES} bytes; not read"
            return out
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as error:
        out.problem = f"{rel}: could not be parsed ({type(error).__name__}); the family's declaration is unknown"
        return out
    _Reader(out, _module_constants(tree)).visit(tree)
    return out


def _module_constants(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Module-level names bound to a string or a tuple/list of strings."""
    consts: dict[str, tuple[str, ...]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _strings(node.value, {})
            if value is not None:
                consts[node.targets[0].id] = value
    return consts


def _strings(node: ast.expr | None, names: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    """A literal string or tuple/list/set of strings (or a name bound to one); None when not literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        parts = [_strings(item, names) for item in node.elts]
        return None if any(p is None for p in parts) else tuple(s for p in parts for s in p or ())
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("tuple", "list"):
        return _strings(node.args[0], names) if len(node.args) == 1 else None
    return None


def condition_words(test: ast.expr) -> tuple[str, tuple[str, ...]]:
    """An `if` test in words, and the config parts it needs."""
    source = ast.unparse(test)
    lowered = source.lower()
    parts = tuple(word for word in CONFIG_PARTS if word in lowered)
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if parts and not negated:
        return f"when the config has {' and '.join(CONFIG_PARTS[p] for p in parts)} (`{source}`)", parts
    return f"when `{source}`", ()


class _Reader(ast.NodeVisitor):
    """Walks support.py keeping the stack of `if` conditions around each call and task-list change."""

    def __init__(self, out: FamilyDeclaration, consts: dict[str, tuple[str, ...]]) -> None:
        self.out = out
        self.consts = consts
        self.conditions: list[tuple[str, tuple[str, ...]]] = []
        self.lists: dict[str, tuple[str, ...]] = {}  # task lists a function builds, by variable name
        self.depth = 0  # functions entered: a module-level tuple of Task names declares nothing by itself

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        saved, self.lists = self.lists, {}
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        self.lists = saved

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self.conditions.append(condition_words(node.test))
        for child in node.body:
            self.visit(child)
        self.conditions[-1] = (f"unless {self.conditions[-1][0].removeprefix('when ')}", ())
        for child in node.orelse:
            self.visit(child)
        self.conditions.pop()

    def visit_Assign(self, node: ast.Assign) -> None:
        target = node.targets[0] if len(node.targets) == 1 else None
        if self.depth and isinstance(target, ast.Name) and "task" in target.id.lower():
            value = _strings(node.value, self.consts)
            if value is not None:
                self.lists[target.id] = ()
                self._add(value, node.lineno)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name) and node.target.id in self.lists:
            self._add_or_unreadable(_strings(node.value, self.consts), node, node.target.id)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in SUPPORT_CALLS:
            self._support_call(node, name)
        elif name in ("append", "extend", "add") and isinstance(func, ast.Attribute):
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id in self.lists and len(node.args) == 1:
                self._add_or_unreadable(_strings(node.args[0], self.consts), node, owner.id)
        self.generic_visit(node)

    def _support_call(self, node: ast.Call, name: str) -> None:
        args = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        if name == "FamilySupport":
            args.update(
                {
                    key: value
                    for key, value in zip(("tasks", "default_task"), node.args, strict=False)
                    if key not in args
                }
            )
        for key in MATCH_NAMES:
            values = _strings(args.get(key), self.consts)
            if values:
                self.out.matches.setdefault(key, []).extend(v for v in values if v not in self.out.matches[key])
        tasks_node = args.get("tasks")
        if isinstance(tasks_node, ast.Call) and isinstance(tasks_node.func, ast.Name) and len(tasks_node.args) == 1:
            tasks_node = tasks_node.args[0] if tasks_node.func.id in ("tuple", "list") else tasks_node
        default = _strings(args.get("default_task"), self.consts)
        if isinstance(tasks_node, ast.Name) and tasks_node.id in self.lists:
            tasks: tuple[str, ...] | None = ()  # its Tasks were recorded where the list was built
        else:
            tasks = _strings(tasks_node, self.consts)
        if tasks is None:
            self.out.unreadable.append(
                f"{self.out.file}:{node.lineno}: the tasks of {name}(...) cannot be read statically"
            )
        chosen = default[0] if default else None
        self._add(tuple(t for t in tasks or () if t != chosen), node.lineno)
        if chosen:
            self._add((chosen,), node.lineno, default=True)

    def _add_or_unreadable(self, values: tuple[str, ...] | None, node: ast.AST, list_name: str) -> None:
        line = getattr(node, "lineno", 0)
        if values is None:
            self.out.unreadable.append(
                f"{self.out.file}:{line}: a Task added to {list_name!r} cannot be read statically"
            )
        else:
            self._add(values, line)

    def _add(self, tasks: tuple[str, ...], line: int, default: bool = False) -> None:
        condition = " and ".join(words for words, _ in self.conditions) or None
        parts = tuple(dict.fromkeys(p for _, needed in self.conditions for p in needed))
        for task in tasks:
            self.out.declared.append(Declared(task, line, condition, parts, default))
