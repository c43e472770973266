"""Limits the package's source keeps: modules of at most 450 lines, functions of at most 60, and no import cycle
between its modules at module level. Measured with `ast` on the files under src/, never by importing them."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "trtmc_videoqa"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60  # from the def line to the last line, inclusive; decorators are not counted


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (a package is its __init__.py)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


REPO = PACKAGE.parents[1]  # paths are shown relative to it: src/trtmc_videoqa/...


def oversized_modules(modules: dict[str, Path], root: Path = REPO) -> list[str]:
    found = []
    for path in modules.values():
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def long_functions(modules: dict[str, Path], root: Path = REPO) -> list[str]:
    found = []
    for path in modules.values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1  # node.lineno is the def line, after any decorator
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {lines} lines")
    return found


def _runs_at_import(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements a module runs when it is imported: its top level, and the blocks of top-level `if`,
    `try` and `with` statements, but not `if TYPE_CHECKING:` (never true when running) nor function bodies."""
    found: list[ast.Import | ast.ImportFrom] = []
    for statement in body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            found.append(statement)
        elif isinstance(statement, ast.If):
            test = statement.test
            if not (isinstance(test, ast.Name | ast.Attribute) and ast.unparse(test).endswith("TYPE_CHECKING")):
                found += _runs_at_import(statement.body)
            found += _runs_at_import(statement.orelse)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, *(h.body for h in statement.handlers), statement.orelse, statement.finalbody):
                found += _runs_at_import(block)
        elif isinstance(statement, ast.With):
            found += _runs_at_import(statement.body)
    return found


def imports_at_module_level(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's own modules that `name` imports when it is itself imported."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for statement in _runs_at_import(ast.parse(path.read_text(), str(path)).body):
        if isinstance(statement, ast.Import):
            targets |= {alias.name for alias in statement.names}
            continue
        if statement.level:
            base = package.split(".")
            base = base[: len(base) - statement.level + 1]
            source = ".".join([*base, statement.module] if statement.module else base)
        else:
            source = statement.module or ""
        targets.add(source)
        targets |= {f"{source}.{alias.name}" for alias in statement.names}  # `from . import submodule`
    return {target for target in targets if target in modules and target != name}


def import_cycles(modules: dict[str, Path]) -> list[list[str]]:
    """Each cycle of module-level imports once, as the modules along it, the first one repeated at the end."""
    graph = {name: sorted(imports_at_module_level(name, path, modules)) for name, path in modules.items()}
    cycles: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            cycle = [*trail[trail.index(name) :], name]
            if frozenset(cycle) not in seen:
                seen.add(frozenset(cycle))
                cycles.append(cycle)
            return
        if name in done:
            return
        for target in graph[name]:
            visit(target, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    return cycles


def test_no_module_is_over_450_lines() -> None:
    found = oversized_modules(MODULES)
    assert not found, f"over {MAX_MODULE_LINES} lines: split them\n" + "\n".join(found)


def test_no_function_is_over_60_lines() -> None:
    found = long_functions(MODULES)
    assert not found, f"over {MAX_FUNCTION_LINES} lines: split them\n" + "\n".join(found)


def test_the_package_has_no_import_cycle_at_module_level() -> None:
    found = [" -> ".join(cycle) for cycle in import_cycles(MODULES)]
    assert not found, "import cycles at module level:\n" + "\n".join(found)


# --- the measures themselves, on small made-up packages --------------------------------------------------------


def _package(root: Path, files: dict[str, str]) -> dict[str, Path]:
    modules = {}
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        parts = Path(relative).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def test_a_long_module_and_a_long_function_are_named_with_their_path_and_length(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    modules = _package(
        tmp_path / "src",
        {
            "pkg/__init__.py": "",
            "pkg/long.py": "\n" * 451,
            "pkg/fits.py": f"@decorator\ndef fits():\n{body}\n",  # 60 lines: the decorator is not counted
            "pkg/over.py": "class C:\n    async def over(self):\n"
            + textwrap.indent(body, "    ")
            + "\n        x = 1\n",
        },
    )
    assert oversized_modules(modules, tmp_path) == ["src/pkg/long.py: 451 lines"]
    assert long_functions(modules, tmp_path) == ["src/pkg/over.py:2 over: 61 lines"]


def test_a_cycle_is_found_and_a_lazy_or_type_checking_import_is_not_one(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import f\n",
            "pkg/b.py": "from pkg import c\n",
            "pkg/c.py": "from . import a\n",
            "pkg/lazy.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import g\n",
            "pkg/d.py": "def g():\n    from .lazy import x\n",
        },
    )
    assert import_cycles(modules) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
