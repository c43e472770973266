"""What each family declares it supports: `families/<family>/support.py`, read with `ast` (never imported or run).

Read: the `model_types`, `tasks` and `default_task` of every `family_support(...)` and `FamilySupport(...)` call
(keyword or, for `FamilySupport(tasks, default_task, precision)`, positional); the `architectures`,
`pipeline_classes` and `required_files` it matches checkpoints on; and Task names a function adds to a task list
under an `if` (a `describe(config)` adding `images_text_to_text` when the config has a vision part), each with its
line and its condition in words. An `if` that leaves the function (`if model_type not in {...}: return ...`) holds
the rest of its block under the opposite condition; a `default_task` chosen by a conditional expression is read as
each of its choices under its branch. A test of a model type against literal names (`model_type in {...}`,
`config.get("model_type") != "x"`) also keeps the names it allows or forbids, so that a local config can check it.
A call or task list whose Tasks are not literal is reported as unreadable
statically, never guessed. A family without support.py has no declaration, and says so.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .bounded_source import Unreadable, note_unreadable, read_python

SUPPORT_CALLS = ("family_support", "FamilySupport")
MATCH_NAMES = ("model_types", "architectures", "pipeline_classes", "required_files")
MAX_SUPPORT_BYTES = 1024 * 1024
# Config parts a condition may ask for, by a word of its source; checked against a local config.json's keys.
CONFIG_PARTS = {"vision": "a vision part", "audio": "an audio part", "video": "a video part"}


@dataclass(frozen=True)
class ModelTypeTest:
    """A condition on the config's model type: it must be one of `names` (allowed) or none of them (forbidden)."""

    allowed: bool
    names: tuple[str, ...]

    def holds(self, model_type: str) -> bool:
        return (model_type in self.names) == self.allowed


class Condition(NamedTuple):
    """An `if` test in words, the config parts it needs, and the model types it allows or forbids (None: no such
    test). A condition with neither is one the audit cannot check."""

    words: str
    parts: tuple[str, ...] = ()
    model_type: ModelTypeTest | None = None


@dataclass(frozen=True)
class Declared:
    """One Task a family's support.py declares, where, and under what condition (None: unconditionally)."""

    task: str
    line: int
    condition: str | None = None  # in words
    config_parts: tuple[str, ...] = ()  # the config parts the condition needs ("vision", "audio")
    default: bool = False
    model_types: tuple[ModelTypeTest, ...] = ()  # one per model-type condition around it; all must hold
    unchecked: tuple[str, ...] = ()  # the words of its conditions that are neither of those (not checkable)

    @property
    def checkable(self) -> bool:
        """Whether a local config.json can decide every condition (config parts and model types only)."""
        return self.condition is not None and not self.unchecked


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
    cost = "the family's declaration is unknown"
    if path.is_symlink() or not path.is_file():
        note_unreadable(Unreadable(rel, "not a plain file", "a link or not a regular file"), cost)
        out.problem = f"{rel}: not a plain file of at most {MAX_SUPPORT_BYTES} bytes; not read"
        return out
    try:
        _, tree = read_python(root, rel, MAX_SUPPORT_BYTES, cost)  # within a size and a nesting budget
    except Unreadable as refused:
        out.problem = f"{rel}: could not be read ({refused.why}); {cost}"
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


def condition_words(test: ast.expr) -> Condition:
    """An `if` test in words, and the config parts it needs (none for a comparison with literal names, such as a
    model type: `model_type == "x_video"` asks for no video part) or the model types it allows or forbids."""
    source = ast.unparse(test)
    lowered = source.lower()
    parts = () if _compares_to_literals(test) else tuple(word for word in CONFIG_PARTS if word in lowered)
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if parts and not negated:
        return Condition(f"when the config has {' and '.join(CONFIG_PARTS[p] for p in parts)} (`{source}`)", parts)
    return Condition(f"when `{source}`", (), model_type_test(test))


_INVERSE = {ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot}


def negated_words(test: ast.expr) -> Condition:
    """The words of the opposite of an `if` test: `not x` and one inverted comparison read plainly, else "unless"."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return condition_words(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _INVERSE:
        return condition_words(ast.Compare(test.left, [_INVERSE[type(test.ops[0])]()], test.comparators))
    return Condition(f"unless `{ast.unparse(test)}`")


def _compares_to_literals(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and all(_strings(c, {}) is not None for c in test.comparators)


def model_type_test(test: ast.expr) -> ModelTypeTest | None:
    """`<x> in {literals}`, `<x> not in (...)`, `<x> == "lit"` or `<x> != "lit"` (or `not` one of them), where `<x>`
    is a name, attribute, subscript or `.get(...)` whose name ends in `model_type`; None for any other test."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = model_type_test(test.operand)
        return ModelTypeTest(not inner.allowed, inner.names) if inner else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and _names_model_type(test.left)):
        return None
    op, other = test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(other, ast.Constant) and isinstance(other.value, str):
        return ModelTypeTest(isinstance(op, ast.Eq), (other.value,))
    names = _strings(other, {}) if isinstance(other, (ast.Tuple, ast.List, ast.Set)) else None
    if isinstance(op, (ast.In, ast.NotIn)) and names is not None:
        return ModelTypeTest(isinstance(op, ast.In), tuple(dict.fromkeys(names)))
    return None


def _names_model_type(node: ast.expr) -> bool:
    """Whether `node` reads something named ...model_type: `model_type`, `config.model_type`,
    `config["model_type"]` or `config.get("model_type")`."""
    name = ""
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        name = str(node.slice.value)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        key = node.args[0] if node.args else None
        name = str(key.value) if isinstance(key, ast.Constant) else ""
    return name.lower().endswith("model_type")


def _leaves(body: list[ast.stmt]) -> bool:
    """Whether a block always leaves the function (its last statement returns or raises)."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


Choices = list[tuple[str, list[Condition]]]  # each possible value with the branch choosing it


def _choices(node: ast.expr | None, names: dict[str, tuple[str, ...]]) -> Choices | None:
    """A single Task name, or a conditional expression of them: each name with the conditions that choose it."""
    if isinstance(node, ast.IfExp):
        yes, no = _choices(node.body, names), _choices(node.orelse, names)
        if yes is None or no is None:
            return None
        when, unless = condition_words(node.test), negated_words(node.test)
        return [(t, [when, *c]) for t, c in yes] + [(t, [unless, *c]) for t, c in no]
    values = _strings(node, names)
    return [(values[0], [])] if values is not None and len(values) == 1 else None


class _Reader(ast.NodeVisitor):
    """Walks support.py keeping the stack of `if` conditions around each call and task-list change."""

    def __init__(self, out: FamilyDeclaration, consts: dict[str, tuple[str, ...]]) -> None:
        self.out = out
        self.consts = consts
        self.conditions: list[Condition] = []
        self.lists: dict[str, tuple[str, ...]] = {}  # task lists a function builds, by variable name
        self.choices: dict[str, Choices] = {}  # names a function binds to one Task name or a choice of them
        self.depth = 0  # functions entered: a module-level tuple of Task names declares nothing by itself

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        saved = self.lists, self.choices
        self.lists, self.choices = {}, {}
        self.depth += 1
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._block(node.body)
        self.depth -= 1
        self.lists, self.choices = saved

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self.conditions.append(condition_words(node.test))
        self._block(node.body)
        self.conditions[-1] = negated_words(node.test)
        self._block(node.orelse)
        self.conditions.pop()

    def _block(self, body: list[ast.stmt]) -> None:
        """Statements in order; after an `if` that always leaves (return or raise) and has no else, the rest of the
        block holds only when its test is false."""
        guards = 0
        for child in body:
            self.visit(child)
            if isinstance(child, ast.If) and not child.orelse and _leaves(child.body):
                self.conditions.append(negated_words(child.test))
                guards += 1
        del self.conditions[len(self.conditions) - guards :]

    def visit_Assign(self, node: ast.Assign) -> None:
        target = node.targets[0] if len(node.targets) == 1 else None
        if self.depth and isinstance(target, ast.Name) and "task" in target.id.lower():
            value = _strings(node.value, self.consts)
            if value is not None:
                self.lists[target.id] = ()
                self._add(value, node.lineno)
        if self.depth and isinstance(target, ast.Name) and (choices := _choices(node.value, self.consts)):
            self.choices[target.id] = choices
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
                known = self.out.matches.setdefault(key, [])
                seen = set(known)  # a set: a tuple of 100,000 names is read in linear time
                known.extend(value for value in dict.fromkeys(values) if value not in seen)
        tasks_node = args.get("tasks")
        if isinstance(tasks_node, ast.Call) and isinstance(tasks_node.func, ast.Name) and len(tasks_node.args) == 1:
            tasks_node = tasks_node.args[0] if tasks_node.func.id in ("tuple", "list") else tasks_node
        if isinstance(tasks_node, ast.Name) and tasks_node.id in self.lists:
            tasks: tuple[str, ...] | None = ()  # its Tasks were recorded where the list was built
        else:
            tasks = _strings(tasks_node, self.consts)
        if tasks is None:
            self.out.unreadable.append(
                f"{self.out.file}:{node.lineno}: the tasks of {name}(...) cannot be read statically"
            )
        defaults = self._defaults(args.get("default_task"), node, name)
        plain = {task for task, conditions in defaults if not conditions}
        self._add(tuple(t for t in tasks or () if t not in plain), node.lineno)
        for task, conditions in defaults:
            self._add((task,), node.lineno, default=True, extra=conditions)

    def _defaults(self, value: ast.expr | None, node: ast.Call, name: str) -> Choices:
        """The call's default Task: a literal, a local name bound to one, or a conditional choice of them."""
        if value is None:
            return []
        choices = self.choices.get(value.id) if isinstance(value, ast.Name) else None
        choices = choices or _choices(value, self.consts)
        if choices is None:
            self.out.unreadable.append(
                f"{self.out.file}:{node.lineno}: the default_task of {name}(...) cannot be read statically"
            )
        return choices or []

    def _add_or_unreadable(self, values: tuple[str, ...] | None, node: ast.AST, list_name: str) -> None:
        line = getattr(node, "lineno", 0)
        if values is None:
            self.out.unreadable.append(
                f"{self.out.file}:{line}: a Task added to {list_name!r} cannot be read statically"
            )
        else:
            self._add(values, line)

    def _add(self, tasks: tuple[str, ...], line: int, default: bool = False, extra: Sequence[Condition] = ()) -> None:
        conditions = [*self.conditions, *extra]
        condition = " and ".join(c.words for c in conditions) or None
        parts = tuple(dict.fromkeys(p for c in conditions for p in c.parts))
        model_types = tuple(c.model_type for c in conditions if c.model_type is not None)
        unchecked = tuple(c.words for c in conditions if not c.parts and c.model_type is None)
        for task in tasks:
            self.out.declared.append(Declared(task, line, condition, parts, default, model_types, unchecked))
