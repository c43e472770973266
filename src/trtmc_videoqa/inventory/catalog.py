"""TRTMC's own catalog rules (newer layout), re-derived from the checkout's source rather than imported.

The Task registry is read with `ast` from `task_adapters.py`, so no TRTMC code runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import SupportsIndex, SupportsInt

from ..results import CatalogStatus, Evidence
from .bounded_source import Unreadable, read_python
from .manifest import Manifest

TASK_ADAPTERS = "apps/benchmark/trtmc_benchmark/task_adapters.py"
MAX_ADAPTER_BYTES = 4 * 1024 * 1024  # TRTMC's is tens of kB
ADAPTER_COST = "catalog status, operations and native requests are unknown"
_REGISTRY_NAME = "_DEFAULTS"


@dataclass(frozen=True)
class TaskRegistry:
    """Task -> operation, with the line of each Task in the registry."""

    source: str
    operations: dict[str, str]
    lines: dict[str, int]

    def evidence(self, task: str, excerpt_lines: tuple[str, ...]) -> Evidence | None:
        line = self.lines.get(task)
        if line is None:
            return None
        return Evidence(
            file=self.source,
            line=line,
            excerpt=excerpt_lines[line - 1].strip()[:160],
            shows=f"the benchmark registry maps {task!r} to operation {self.operations[task]!r}",
        )


def read_task_registry(root: Path) -> tuple[TaskRegistry | None, tuple[str, ...], str | None]:
    """The registry, the file's lines, and why it could not be read (None when it was)."""
    path = root / TASK_ADAPTERS
    if not path.is_file():
        return None, (), f"{TASK_ADAPTERS} is absent: catalog status is unknown for every row"
    try:
        text, tree = read_python(root, TASK_ADAPTERS, MAX_ADAPTER_BYTES, ADAPTER_COST)
    except Unreadable as refused:
        return None, (), f"{TASK_ADAPTERS} could not be read ({refused.why}): catalog status is unknown"
    for node in ast.walk(tree):
        table = _registry_table(node)
        if table is not None:
            operations, lines = _task_operations(table)
            return TaskRegistry(TASK_ADAPTERS, operations, lines), tuple(text.splitlines()), None
    return None, (), f"{TASK_ADAPTERS} has no {_REGISTRY_NAME} Task table: catalog status is unknown"


def _registry_table(node: ast.AST) -> ast.Dict | None:
    """The dict literal this node assigns to the registry's name (`_DEFAULTS = {...}`, annotated or not), if it does."""
    target: ast.expr
    value: ast.expr | None
    if isinstance(node, ast.AnnAssign):
        target, value = node.target, node.value
    elif isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value = node.targets[0], node.value
    else:
        return None
    if isinstance(target, ast.Name) and target.id == _REGISTRY_NAME and isinstance(value, ast.Dict):
        return value
    return None


def _task_operations(table: ast.Dict) -> tuple[dict[str, str], dict[str, int]]:
    """Each Task (a string key) -> the operation its tuple names first ("?" when that is not a string), and its line."""
    operations: dict[str, str] = {}
    lines: dict[str, int] = {}
    for key, value in zip(table.keys, table.values, strict=True):  # a `**spread` entry has the key None
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            first = value.elts[0] if isinstance(value, ast.Tuple) and value.elts else None
            operation = first.value if isinstance(first, ast.Constant) else None
            operations[key.value] = operation if isinstance(operation, str) else "?"
            lines[key.value] = key.lineno
    return operations, lines


def selected_task(manifest: Manifest) -> str:
    """The Task the catalog uses: the first testcase's `selected_task`, else the manifest's."""
    value = manifest.testcases[0].get("selected_task", manifest.task)
    return value if isinstance(value, str) and value else manifest.task


def parallel_sizes(manifest: Manifest) -> tuple[int, int]:
    """Tensor- and context-parallel sizes, from either layout's way of saying them."""
    data = manifest.data
    tp = _int(data.get("tensor_parallel_size"), 1)
    cp = _int(data.get("context_parallel_size"), 1)
    parallel = data.get("build_args", {}).get("parallel") if isinstance(data.get("build_args"), dict) else None
    if isinstance(parallel, dict):
        mode = str(parallel.get("mode", ""))
        tp = max(tp, _int(parallel.get("tp_size"), 1), _int(parallel.get("size"), 1) if "tensor" in mode else 1)
        cp = max(cp, _int(parallel.get("cp_size"), 1), _int(parallel.get("size"), 1) if "context" in mode else 1)
    return tp, cp


def _int(value: object, default: int) -> int:
    """int(value), else default: for a JSON value that is not a number or a numeric string."""
    if not isinstance(value, str | bytes | bytearray | SupportsInt | SupportsIndex):
        return default  # None, a list, a dict: what int() refuses with TypeError
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def catalog_status(
    manifest: Manifest, registry: TaskRegistry | None, registry_problem: str | None
) -> tuple[CatalogStatus, str]:
    """TRTMC's catalog status and its reason, as catalog.py would say it."""
    if manifest.layout != "families":
        return "n/a", "the older layout has no benchmark catalog"
    if registry is None:
        return "unknown", registry_problem or f"{TASK_ADAPTERS} unavailable"
    task = selected_task(manifest)
    if task not in registry.operations:
        return "unsupported", f"task {task!r} has no benchmark implementation"
    tp, cp = parallel_sizes(manifest)
    if tp > 1 or cp > 1:
        return "distributed", f"requires tensor_parallel_size={tp}, context_parallel_size={cp}"
    return "ready", ""
