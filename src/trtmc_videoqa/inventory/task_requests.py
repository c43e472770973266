"""The native request each Task takes, read statically from the checkout's benchmark task adapter.

TRTMC's ``task_adapters.py`` builds the request of a Task in ``_request(task, case, root)``: one ``if`` per Task
(``task == "name"``, ``task in {...}``, ``task in _SOME_SET`` with module-level ``frozenset`` constants), whose
branch builds a dict. The fields a branch can build are read with ``ast`` (the file is never imported): dict
literal keys, ``**helper(...)`` spreads and ``return helper(...)`` into module-level functions (at most three
calls deep), ``request["k"] = ...``, ``request.update(k=...)`` and ``_copy_explicit(request, case, "k", ...)``.
A nested ``if`` on the Task keeps only the side the Task takes; any other condition keeps both (the fields a
branch *can* build). A missing, unparsable or different file gives no requests, never an error.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..results import Evidence, NativeRequest
from .bounded_source import Unreadable, read_python
from .catalog import ADAPTER_COST, MAX_ADAPTER_BYTES, TASK_ADAPTERS, read_task_registry
from .request_template import FRAME_ROLES, TemplateReader, slots, with_roles
from .video_view import VideoView, read_video_view

REQUEST_FUNCTION = "_request"
COPY_HELPERS = frozenset({"_copy_explicit"})  # (request, case, "field", ...): the string arguments are fields
CLIP_FIELDS = ("video_path", "video", "clip_path")
PROMPT_FIELDS = ("prompt", "text", "question")
# The generation settings the identity check fills wherever a Task's request has them: greedy, the run's token limit.
TOKEN_LIMIT_FIELD = "max_new_tokens"
GREEDY_FIELDS: dict[str, int] = {"temperature": 0, "top_k": 1}
MAX_DEPTH = 3
_SHOWS = "the task adapter's _request branch for the Task {task} builds: {fields}"
_SHOWS_TASK = re.compile(r"for the Task (\S+) builds:")


@dataclass(frozen=True)
class _Adapter:
    """The parsed adapter: its functions, its string-set constants, the request function's Task parameter."""

    lines: tuple[str, ...]
    functions: dict[str, ast.FunctionDef]
    constants: dict[str, frozenset[str]]
    request: ast.FunctionDef
    task_param: str


@dataclass
class _Scope:
    """What one function body builds: fields per local variable, and the names a loop gives a variable."""

    task: str | None
    task_param: str | None
    depth: int
    variables: dict[str, set[str]] = field(default_factory=dict)
    loops: dict[str, list[str]] = field(default_factory=dict)
    tables: dict[str, ast.expr] = field(default_factory=dict)  # local tuple/list literals, for loops over them
    returned: set[str] = field(default_factory=set)


def native_requests(checkout: Path) -> dict[str, NativeRequest]:
    """Task name -> its native request, for every Task the adapter's ``_request`` names; {} without one."""
    adapter = _adapter(checkout)
    if adapter is None:
        return {}
    registry, _, _ = read_task_registry(checkout)
    operations = registry.operations if registry is not None else {}
    requests: dict[str, NativeRequest] = {}
    view = read_video_view(checkout)
    for task in sorted(_named_tasks(adapter)):
        request = _native_request(adapter, task, operations.get(task, "?"), view)
        if request is not None:
            requests[task] = request
    return requests


def native_request_for(checkout: Path, task: str, operation: str) -> NativeRequest | None:
    """The native request of one Task (``operation`` from the registry), or None where the adapter builds none."""
    adapter = _adapter(checkout)
    return None if adapter is None else _native_request(adapter, task, operation, read_video_view(checkout))


def task_of(request: NativeRequest) -> str | None:
    """The Task a request read here belongs to (its evidence says), else None."""
    match = _SHOWS_TASK.search(request.evidence.shows) if request.evidence is not None else None
    return match.group(1) if match else None


def _native_request(adapter: _Adapter, task: str, operation: str, view: VideoView | None) -> NativeRequest | None:
    branch = _branch_for(adapter, task)
    if branch is None:
        return None
    scope = _Scope(task=task, task_param=adapter.task_param, depth=0)
    _walk(adapter, branch.body, scope)
    fields = sorted(scope.returned)
    template = _template(adapter, branch, view)
    line = branch.lineno
    evidence = Evidence(
        file=TASK_ADAPTERS,
        line=line,
        excerpt=adapter.lines[line - 1].strip()[:160] if line <= len(adapter.lines) else "",
        shows=_SHOWS.format(task=task, fields=", ".join(fields) or "no fields"),
    )
    return NativeRequest(
        operation=operation,
        fields=fields,
        clip_field=next((name for name in CLIP_FIELDS if name in scope.returned), None),
        prompt_field=next((name for name in PROMPT_FIELDS if name in scope.returned), None),
        evidence=evidence,
        template=template,
        video_view=view.where if template is not None and view is not None else None,
    )


def _template(adapter: _Adapter, branch: ast.If, view: VideoView | None) -> object:
    """The JSON tree the branch returns, each testcase value a slot with the role the tool fills it with; kept only
    where the request carries frames (a clip file or text alone keeps to ``fields``, as before)."""
    params = [argument.arg for argument in adapter.request.args.args]
    if len(params) < 2:
        return None
    reader = TemplateReader(adapter.functions, params[1], params[2] if len(params) > 2 else None)
    prelude = [node for node in adapter.request.body if not isinstance(node, ast.If)]
    tree = reader.template(prelude, branch.body)
    settings = (TOKEN_LIMIT_FIELD, *GREEDY_FIELDS)
    tree = None if tree is None else with_roles(tree, PROMPT_FIELDS, settings, view)
    return tree if any(slot.get("role") in FRAME_ROLES for slot in slots(tree)) else None


# --- reading the file ------------------------------------------------------------------------------------------


def _adapter(checkout: Path) -> _Adapter | None:
    path = checkout / TASK_ADAPTERS
    try:
        info = path.stat()
    except OSError:
        return None
    return _parsed(str(checkout), info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=16)
def _parsed(checkout: str, mtime_ns: int, size: int) -> _Adapter | None:
    """The checkout's adapter (cached on its modification time and size); None if unreadable or lacking _request."""
    del mtime_ns, size  # the cache key only
    try:  # within a size and a nesting budget, a refusal named in the audit's ledger (bounded_source.py)
        text, tree = read_python(Path(checkout), TASK_ADAPTERS, MAX_ADAPTER_BYTES, ADAPTER_COST)
    except Unreadable:
        return None
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    request = functions.get(REQUEST_FUNCTION)
    if request is None or not request.args.args:
        return None
    constants: dict[str, frozenset[str]] = {}
    for node in tree.body:
        target, value = _assignment(node)
        if isinstance(target, ast.Name) and value is not None:
            strings = _string_set(value, constants)
            if strings is not None:
                constants[target.id] = strings
    return _Adapter(tuple(text.splitlines()), functions, constants, request, request.args.args[0].arg)


def _assignment(node: ast.stmt) -> tuple[ast.expr | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return node.targets[0], node.value
    if isinstance(node, ast.AnnAssign):
        return node.target, node.value
    return None, None


def _string_set(node: ast.expr, constants: dict[str, frozenset[str]]) -> frozenset[str] | None:
    """The strings of a set/tuple/list literal, ``frozenset(...)``, a known constant, or ``|``/``&``/``-`` of them."""
    if isinstance(node, ast.Set | ast.Tuple | ast.List):
        values = [elt.value for elt in node.elts if isinstance(elt, ast.Constant) and isinstance(elt.value, str)]
        return frozenset(values) if len(values) == len(node.elts) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"frozenset", "set"}:
        return _string_set(node.args[0], constants) if len(node.args) == 1 and not node.keywords else None
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr | ast.BitAnd | ast.Sub):
        left, right = _string_set(node.left, constants), _string_set(node.right, constants)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.BitOr):
            return left | right
        return left & right if isinstance(node.op, ast.BitAnd) else left - right
    return None


# --- which branch a Task takes ---------------------------------------------------------------------------------


def _top_ifs(adapter: _Adapter) -> list[ast.If]:
    """The request function's top-level ``if`` statements, each ``elif`` after its ``if``."""
    found: list[ast.If] = []
    for node in adapter.request.body:
        while isinstance(node, ast.If):
            found.append(node)
            node = node.orelse[0] if len(node.orelse) == 1 else None  # type: ignore[assignment]
    return found


def _branch_for(adapter: _Adapter, task: str) -> ast.If | None:
    """The first top-level ``if`` whose condition holds for this Task."""
    for node in _top_ifs(adapter):
        if _holds(node.test, task, adapter.task_param, adapter.constants) is True:
            return node
    return None


def _named_tasks(adapter: _Adapter) -> set[str]:
    """Every Task a top-level condition names (``==`` or ``in``)."""
    tasks: set[str] = set()
    for node in _top_ifs(adapter):
        for part in ast.walk(node.test):
            if isinstance(part, ast.Compare) and len(part.ops) == 1 and _is_task(part.left, adapter.task_param):
                if isinstance(part.ops[0], ast.Eq) and isinstance(part.comparators[0], ast.Constant):
                    value = part.comparators[0].value
                    tasks.update([value] if isinstance(value, str) else [])
                elif isinstance(part.ops[0], ast.In):
                    tasks.update(_string_set(part.comparators[0], adapter.constants) or ())
    return tasks


def _is_task(node: ast.expr, task_param: str | None) -> bool:
    return task_param is not None and isinstance(node, ast.Name) and node.id == task_param


def _holds(
    test: ast.expr, task: str | None, task_param: str | None, constants: dict[str, frozenset[str]]
) -> bool | None:
    """Whether a condition holds for the Task: True, False, or None where it does not depend on the Task alone."""
    if task is None:
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _holds(test.operand, task, task_param, constants)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [_holds(value, task, task_param, constants) for value in test.values]
        decisive = isinstance(test.op, ast.Or)  # True decides an `or`, False an `and`
        if decisive in values:
            return decisive
        return None if None in values else not decisive
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if _is_task(right, task_param) and isinstance(op, ast.Eq | ast.NotEq):
        left, right = right, left
    if not _is_task(left, task_param):
        return None
    if isinstance(op, ast.Eq | ast.NotEq) and isinstance(right, ast.Constant):
        return (right.value == task) == isinstance(op, ast.Eq)
    if isinstance(op, ast.In | ast.NotIn):
        strings = _string_set(right, constants)
        return None if strings is None else (task in strings) == isinstance(op, ast.In)
    return None


# --- what a branch builds --------------------------------------------------------------------------------------


def _walk(adapter: _Adapter, body: list[ast.stmt], scope: _Scope) -> None:
    for node in body:
        if isinstance(node, ast.Return) and node.value is not None:
            scope.returned |= _fields(adapter, node.value, scope)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                _assign(adapter, target, node.value, scope)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            _call_statement(adapter, node.value, scope)
        elif isinstance(node, ast.If):
            holds = _holds(node.test, scope.task, scope.task_param, adapter.constants)
            _walk(adapter, node.body if holds is not False else [], scope)
            _walk(adapter, node.orelse if holds is not True else [], scope)
        elif isinstance(node, ast.For):
            _bind_loop(node, scope)
            _walk(adapter, node.body + node.orelse, scope)
        elif isinstance(node, ast.While | ast.With):
            _walk(adapter, node.body + getattr(node, "orelse", []), scope)
        elif isinstance(node, ast.Try):
            _walk(adapter, node.body + node.orelse + node.finalbody, scope)
            for handler in node.handlers:
                _walk(adapter, handler.body, scope)


def _assign(adapter: _Adapter, target: ast.expr, value: ast.expr | None, scope: _Scope) -> None:
    if isinstance(target, ast.Name) and isinstance(value, ast.Tuple | ast.List):
        scope.tables[target.id] = value
    elif isinstance(target, ast.Name) and value is not None:
        scope.variables.setdefault(target.id, set()).update(_fields(adapter, value, scope))
    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
        keys = scope.variables.setdefault(target.value.id, set())
        key = target.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            keys.add(key.value)
        elif isinstance(key, ast.Name):
            keys.update(scope.loops.get(key.id, ()))
        elif isinstance(key, ast.IfExp):
            keys.update(
                part.value
                for part in (key.body, key.orelse)
                if isinstance(part, ast.Constant) and isinstance(part.value, str)
            )


def _call_statement(adapter: _Adapter, call: ast.Call, scope: _Scope) -> None:
    """``request.update(...)`` and ``_copy_explicit(request, case, "k", ...)``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name):
        keys = scope.variables.setdefault(func.value.id, set())
        keys.update(keyword.arg for keyword in call.keywords if keyword.arg is not None)
        for argument in call.args:
            keys |= _fields(adapter, argument, scope)
    elif isinstance(func, ast.Name) and func.id in COPY_HELPERS and call.args and isinstance(call.args[0], ast.Name):
        keys = scope.variables.setdefault(call.args[0].id, set())
        keys.update(
            argument.value
            for argument in call.args[2:]
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str)
        )


def _bind_loop(node: ast.For, scope: _Scope) -> None:
    """The strings a loop gives its variables: ``for name in ("a", "b")``, ``for a, b in ((..), ..)``, or over a
    local tuple assigned before it."""
    items = node.iter
    if isinstance(items, ast.Name):
        items = scope.tables.get(items.id, items)
    if not isinstance(items, ast.Tuple | ast.List | ast.Set):
        return
    targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
    for position, target in enumerate(targets):
        if not isinstance(target, ast.Name):
            continue
        values: list[str] = []
        for item in items.elts:
            part = item if len(targets) == 1 else _element(item, position)
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                values.append(part.value)
        scope.loops[target.id] = values


def _element(item: ast.expr, position: int) -> ast.expr | None:
    if isinstance(item, ast.Tuple | ast.List) and position < len(item.elts):
        return item.elts[position]
    return None


def _fields(adapter: _Adapter, node: ast.expr, scope: _Scope) -> set[str]:
    """The string keys an expression's value can have."""
    if isinstance(node, ast.Dict):
        keys: set[str] = set()
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                keys |= _fields(adapter, value, scope)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.add(key.value)
        return keys
    if isinstance(node, ast.Name):
        return set(scope.variables.get(node.id, ()))
    if isinstance(node, ast.IfExp):
        holds = _holds(node.test, scope.task, scope.task_param, adapter.constants)
        body = _fields(adapter, node.body, scope) if holds is not False else set()
        return body | (_fields(adapter, node.orelse, scope) if holds is not True else set())
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "dict":
            spread = set().union(*(_fields(adapter, argument, scope) for argument in node.args))
            return spread | {keyword.arg for keyword in node.keywords if keyword.arg is not None}
        helper = adapter.functions.get(node.func.id)
        if helper is not None and scope.depth < MAX_DEPTH:
            return _helper_fields(adapter, helper, node, scope)
    return set()


def _helper_fields(adapter: _Adapter, helper: ast.FunctionDef, call: ast.Call, caller: _Scope) -> set[str]:
    """What a module-level helper returns, its Task parameter bound to what the call passes (if it takes one)."""
    names = [argument.arg for argument in helper.args.posonlyargs + helper.args.args]
    param = adapter.task_param if adapter.task_param in names else None
    task: str | None = None
    if param is not None:
        position = names.index(param)
        passed = call.args[position] if position < len(call.args) else None
        passed = next((keyword.value for keyword in call.keywords if keyword.arg == param), passed)
        if isinstance(passed, ast.Constant) and isinstance(passed.value, str):
            task = passed.value
        elif _is_task(passed, caller.task_param) if passed is not None else False:
            task = caller.task
    scope = _Scope(task=task, task_param=param, depth=caller.depth + 1)
    _walk(adapter, helper.body, scope)
    return scope.returned
