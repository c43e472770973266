"""The shape of the request a task adapter's branch returns, read with ``ast``: a JSON tree of what it builds.

Constants stay as written; each value the branch takes from the testcase becomes a slot,
``{"$slot": {"case": ["inputs", "video", "frames"], "each": "file", "role": "frames"}}``: the testcase keys it
reads, whether it is one file (``"file"``), a list of files (``each: "file"``) or a list of values
(``each: "value"``), the constant default of a ``case.get(key, default)``, and the role the tool fills it with. An
expression read no further is ``{"$slot": {"unread": "<its source>"}}``, never guessed.

Roles come from names the checkout defines, never from the tool: the question is the slot reading one of the prompt
fields (as for every Task), the frames and times are the slots named as the C API's video view members
(video_view.py), and the generation settings are the request fields the identity check fills for every Task. A list
of files that is not the view's frames, and has no times beside it, is a ``frame-list``: a route that asks the caller
to choose frames.
"""

from __future__ import annotations

import ast
from typing import Any

from .video_view import VideoView

SLOT = "$slot"
FRAME_ROLES = frozenset({"frames", "frame-list"})
MAX_LOCAL_DEPTH = 8
_CASTS = frozenset({"float", "int", "str", "list", "tuple", "sorted"})


class TemplateReader:
    """Reads one branch: the request function's parameters and the local names assigned before the return."""

    def __init__(self, functions: dict[str, ast.FunctionDef], case: str, root: str | None) -> None:
        self.functions = functions
        self.case = case
        self.root = root
        self.local: dict[str, ast.expr] = {}

    def template(self, prelude: list[ast.stmt], body: list[ast.stmt]) -> Any | None:
        """The tree the branch returns (a dict literal, or a local dict filled by ``name["k"] = v``); else None."""
        for node in prelude:
            self._assign(node)
        built: dict[str, dict[str, Any]] = {}
        for node in body:
            if isinstance(node, ast.Return) and node.value is not None:
                if isinstance(node.value, ast.Name) and node.value.id in built:
                    return built[node.value.id]
                return self.value(node.value) if isinstance(node.value, ast.Dict) else None
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                continue
            target, value = node.targets[0], node.value
            if isinstance(target, ast.Name) and isinstance(value, ast.Dict):
                built[target.id] = self.value(value)
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id in built:
                key = target.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    built[target.value.id][key.value] = self.value(value)
            else:
                self._assign(node)
        return None

    def _assign(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.local[node.targets[0].id] = node.value

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, str | int | float)):
            return node.value
        if isinstance(node, ast.Dict):
            keys = [key.value if isinstance(key, ast.Constant) else None for key in node.keys]
            if all(isinstance(key, str) for key in keys):
                return {str(key): self.value(value) for key, value in zip(keys, node.values, strict=True)}
        if isinstance(node, ast.List | ast.Tuple):
            return [self.value(element) for element in node.elts]
        slot = self.slot(node, 0)
        return {SLOT: slot if slot is not None else {"unread": ast.unparse(node)[:120]}}

    def slot(self, node: ast.expr, depth: int) -> dict[str, Any] | None:
        """What testcase value an expression is: its keys, and whether it is a file or a list; None if not one."""
        if depth > MAX_LOCAL_DEPTH:
            return None
        if isinstance(node, ast.Name):
            if node.id == self.case:
                return {"case": []}
            bound = self.local.get(node.id)
            return None if bound is None else self.slot(bound, depth + 1)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            return self._keyed(node.value, node.slice.value, None, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            return next(filter(None, (self.slot(part, depth + 1) for part in node.values)), None)
        if isinstance(node, ast.ListComp | ast.GeneratorExp) and len(node.generators) == 1:
            return self._each(node, depth)
        return None

    def _keyed(self, base: ast.expr, key: object, default: object, depth: int) -> dict[str, Any] | None:
        found = self.slot(base, depth + 1) if isinstance(key, str) else None
        if found is None or "each" in found or "file" in found:
            return None
        slot: dict[str, Any] = {"case": [*found["case"], key]}
        return slot | ({"default": default} if default is not None else {})

    def _call(self, node: ast.Call, depth: int) -> dict[str, Any] | None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and node.args:
            key = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
            default = node.args[1] if len(node.args) > 1 else None
            constant = default.value if isinstance(default, ast.Constant) else None
            return self._keyed(func.value, key, constant, depth)
        if isinstance(func, ast.Name) and func.id in _CASTS and len(node.args) == 1:
            return self.slot(node.args[0], depth + 1)
        if isinstance(func, ast.Name) and func.id in self.functions and self._takes_root(node):
            # A module function given the checkout root: it resolves a testcase path, so its value is a file.
            inner = next(filter(None, (self.slot(arg, depth + 1) for arg in node.args)), None)
            return None if inner is None or "each" in inner else inner | {"file": True}
        return None

    def _takes_root(self, node: ast.Call) -> bool:
        passed = [*node.args, *(keyword.value for keyword in node.keywords)]
        return self.root is not None and any(isinstance(arg, ast.Name) and arg.id == self.root for arg in passed)

    def _each(self, node: ast.ListComp | ast.GeneratorExp, depth: int) -> dict[str, Any] | None:
        loop = node.generators[0]
        if not isinstance(loop.target, ast.Name) or loop.ifs:
            return None
        source = self.slot(loop.iter, depth + 1)
        if source is None or "each" in source or "file" in source:
            return None
        saved = self.local.get(loop.target.id)
        self.local[loop.target.id] = ast.Name(id=self.case)  # the element stands for the testcase for a moment
        element = self.slot(node.elt, depth + 1)
        if saved is None:
            del self.local[loop.target.id]
        else:
            self.local[loop.target.id] = saved
        if element is None or element["case"]:
            return None
        return {"case": source["case"], "each": "file" if element.get("file") else "value"}


def with_roles(tree: Any, prompt_fields: tuple[str, ...], settings: tuple[str, ...], view: VideoView | None) -> Any:
    """The tree with each slot's role: question, frames, times, frame-list, or a generation setting's name. A list of
    frame files beside the view's times is the view under another name (perf_serving's frame lists with their
    times take the clip in complete order), so it carries the whole clip's frames too."""
    tree = _with_roles(tree, prompt_fields, settings, view)
    found = slots(tree)
    if any(slot.get("role") == "times" for slot in found):
        for slot in found:
            if slot.get("role") == "frame-list":
                slot["role"] = "frames"
    return tree


def _with_roles(tree: Any, prompt_fields: tuple[str, ...], settings: tuple[str, ...], view: VideoView | None) -> Any:
    if isinstance(tree, dict) and SLOT in tree:
        slot = dict(tree[SLOT])
        role = _role(slot, prompt_fields, settings, view)
        return {SLOT: slot | ({"role": role} if role else {})}
    if isinstance(tree, dict):
        return {key: _with_roles(value, prompt_fields, settings, view) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_with_roles(value, prompt_fields, settings, view) for value in tree]
    return tree


def _role(
    slot: dict[str, Any], prompt_fields: tuple[str, ...], settings: tuple[str, ...], view: VideoView | None
) -> str | None:
    key = slot["case"][-1] if slot.get("case") else None
    if key is None:
        return None
    if view is not None and key == view.frames and slot.get("each") == "file":
        return "frames"
    if view is not None and key == view.times and slot.get("each") != "file":
        return "times"
    if slot.get("each") == "file":
        return "frame-list"
    if key in prompt_fields and "each" not in slot and not slot.get("file"):
        return "question"
    return key if key in settings and "each" not in slot else None


def slots(tree: Any) -> list[dict[str, Any]]:
    """Every slot of a tree, in order."""
    if isinstance(tree, dict) and SLOT in tree:
        return [tree[SLOT]]
    if isinstance(tree, dict):
        return [slot for value in tree.values() for slot in slots(value)]
    if isinstance(tree, list):
        return [slot for value in tree for slot in slots(value)]
    return []
