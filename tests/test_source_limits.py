"""Limits the package's source keeps: modules of at most 450 lines, functions of at most 60, and no import cycle
between its modules at module level. Measured with `ast` on the files under src/, never by importing them."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from source_scan import nodes, parsed

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "trtmc_videoqa"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60  # from the def line to the last line, inclusive; decorators are not counted
MAX_ROOT_MODULES = 5  # the rest live in rooms named for the step they serve
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


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


# Each file parsed and walked once per test process, whichever test module reads it (source_scan.py).
_parsed, _nodes = parsed, nodes


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
        for node in _nodes(path):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1  # node.lineno is the def line, after any decorator
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}: {lines} lines")
    return found


def imports_anywhere(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's own modules that `name` imports anywhere: at module level, inside functions (a lazy import is
    still a dependency) and under `if TYPE_CHECKING:` (a type is one too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for statement in _nodes(path):
        if isinstance(statement, ast.Import):
            targets |= {alias.name for alias in statement.names}
            continue
        if not isinstance(statement, ast.ImportFrom):
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


# What the command line may never import: it parses, builds the typed request, calls the run (runs/) and prints.
CLI_NEVER_IMPORTS = ("ladders", "stages", "serving")


def cli_imports_beyond_the_edge(modules: dict[str, Path]) -> list[str]:
    """Each import by a module of `cli/` of a room only the run's owner may use, as `cli.x -> room.y`."""
    found = []
    for name, path in modules.items():
        if name.split(".")[1:2] != ["cli"]:
            continue
        for target in sorted(imports_anywhere(name, path, modules)):
            if target.split(".")[1:2] and target.split(".")[1] in CLI_NEVER_IMPORTS:
                found.append(f"{name} -> {target}")
    return found


# The modules that may write to the terminal: the command line, and the rooms' own `__main__`-style tools.
MAY_PRINT = (
    "trtmc_videoqa.reference.__main__",
    "trtmc_videoqa.workloads.seal",
    "trtmc_videoqa.workloads.recipe",
    "trtmc_videoqa.controls.train",
)


def printing_modules(modules: dict[str, Path], root: Path = REPO) -> list[str]:
    """Each `print(...)` call in a core room (not cli/, not a tool of MAY_PRINT), as `path:line`."""
    found = []
    for name, path in modules.items():
        if name.split(".")[1:2] == ["cli"] or name in MAY_PRINT:
            continue
        for node in _nodes(path):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


# The package's own modules sit at the top of each module; a function imports one only to keep something heavy off
# a run that never uses it, and says why (`# lazy: ...` on its line, or on the comment line just above its group).
MAX_LAZY_OWN_IMPORTS = 40
# The rooms the architecture page makes lazy on purpose (each loads its heavy names on first use): not counted.
LAZY_ROOMS = ("media", "inventory", "results.inventory")


def lazy_own_imports(modules: dict[str, Path], root: Path = REPO) -> tuple[list[str], list[str]]:
    """Every import of the package's own modules inside a function body (the lazy rooms aside), as `path:line
    target`; and those of them that give no reason."""
    found, unexplained = [], []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        lines = path.read_text().splitlines()
        inside: set[int] = set()
        for node in _nodes(path):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                inside |= {id(child) for child in ast.walk(node) if child is not node}
        for node in _nodes(path):
            if id(node) not in inside or not isinstance(node, ast.ImportFrom | ast.Import):
                continue
            targets = [_import_source(node, package)] if isinstance(node, ast.ImportFrom) else []
            targets += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            own = [t for t in targets if t == PACKAGE.name or t.startswith(PACKAGE.name + ".")]
            if not own or any(_in_lazy_room(t) for t in own):
                continue
            where = f"{path.relative_to(root)}:{node.lineno} {own[0]}"
            found.append(where)
            if not _gives_reason(lines, node.lineno):
                unexplained.append(where)
    return found, unexplained


def _import_source(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _in_lazy_room(target: str) -> bool:
    inner = target.removeprefix(PACKAGE.name + ".")
    return any(inner == room or inner.startswith(room + ".") for room in LAZY_ROOMS)


def _gives_reason(lines: list[str], lineno: int) -> bool:
    """`# lazy:` on the import's line, or above it through the imports and comments of its group."""
    index = lineno - 1
    while index >= 0:
        line = lines[index].strip()
        if "# lazy:" in line:
            return True
        if not (line.startswith(("from ", "import ", "#")) or line.endswith((",", "(")) or line == ")"):
            return False
        index -= 1
    return False


def root_modules(package: Path) -> list[str]:
    return sorted(path.name for path in package.glob("*.py"))


def namespace_parameters(modules: dict[str, Path], root: Path = REPO) -> list[str]:
    """Functions outside `cli/` with a parameter annotated as `argparse.Namespace` (or `Namespace`)."""
    found = []
    for name, path in modules.items():
        if ".cli." in f".{name}." and name.split(".")[1] == "cli":
            continue
        for node in _nodes(path):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for argument in arguments:
                if argument.annotation is not None and ast.unparse(argument.annotation).endswith("Namespace"):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}({argument.arg})")
    return found


def unnamed_modules(package: Path, page: str) -> list[str]:
    """Modules whose path below the package (`stages/aiperf.py`) the page never names; an `__init__.py` that holds
    nothing but its docstring needs no mention."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if path.name == "__init__.py" and _docstring_only(path):
            continue
        if relative not in page:
            found.append(relative)
    return found


def _docstring_only(path: Path) -> bool:
    body = _parsed(path.read_text(), str(path)).body
    return all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in body)


def import_cycles(modules: dict[str, Path]) -> list[list[str]]:
    """Each cycle of imports once, as the modules along it, the first one repeated at the end."""
    graph = {name: sorted(imports_anywhere(name, path, modules)) for name, path in modules.items()}
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


def test_the_package_has_no_import_cycle_of_any_kind() -> None:
    found = [" -> ".join(cycle) for cycle in import_cycles(MODULES)]
    assert not found, "import cycles (module level, in a function or under TYPE_CHECKING):\n" + "\n".join(found)


def test_the_command_line_imports_no_ladder_stage_or_server() -> None:
    """cli/ parses options, builds the request, calls the run and prints: the run's owner (runs/) climbs the
    ladders and starts the servers."""
    assert cli_imports_beyond_the_edge(MODULES) == []


def test_core_rooms_never_print() -> None:
    """Progress goes through the callback the command line gives; only cli/ and the rooms' own tools print."""
    assert printing_modules(MODULES) == []


def test_a_print_in_a_core_room_is_named(tmp_path: Path) -> None:
    package = tmp_path / "trtmc_videoqa"
    (package / "inventory").mkdir(parents=True)
    (package / "inventory" / "refresh.py").write_text("def f():\n    print('x')\n")
    modules = {"trtmc_videoqa.inventory.refresh": package / "inventory" / "refresh.py"}
    assert printing_modules(modules, root=tmp_path) == ["trtmc_videoqa/inventory/refresh.py:2"]


def test_a_command_that_imports_a_stage_is_named(tmp_path: Path) -> None:
    package = tmp_path / "trtmc_videoqa"
    for folder in ("cli", "stages", "runs"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "stages" / "aiperf.py").write_text("")
    (package / "runs" / "owner.py").write_text("")
    (package / "cli" / "qualify.py").write_text("def f():\n    from ..stages.aiperf import x\n")
    (package / "cli" / "compare.py").write_text("from ..runs import owner\n")
    modules = {
        ".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
        for p in package.rglob("*.py")
    }
    assert cli_imports_beyond_the_edge(modules) == ["trtmc_videoqa.cli.qualify -> trtmc_videoqa.stages.aiperf"]


def test_at_most_five_modules_at_the_package_root() -> None:
    found = root_modules(PACKAGE)
    assert len(found) <= MAX_ROOT_MODULES, f"{len(found)} modules at the package root: give them a room\n" + "\n".join(
        found
    )


def test_no_function_outside_the_cli_takes_the_parsed_command_line() -> None:
    found = namespace_parameters(MODULES)
    assert not found, "argparse.Namespace below cli/: pass the typed request instead\n" + "\n".join(found)


def test_the_architecture_page_names_every_module() -> None:
    found = unnamed_modules(PACKAGE, ARCHITECTURE.read_text())
    assert not found, f"modules {ARCHITECTURE.name} does not name: describe them there\n" + "\n".join(found)


def test_the_package_imports_its_own_modules_at_the_top() -> None:
    """At most MAX_LAZY_OWN_IMPORTS imports of the package's own modules in function bodies (the lazy rooms and
    TYPE_CHECKING blocks aside), each with its reason."""
    found, unexplained = lazy_own_imports(MODULES)
    assert len(found) <= MAX_LAZY_OWN_IMPORTS, (
        f"{len(found)} imports of our own modules inside functions: import them at the top\n" + "\n".join(found)
    )
    assert not unexplained, "a lazy import without its reason (# lazy: ...):\n" + "\n".join(unexplained)


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


def test_a_cycle_is_found_through_module_level_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import f\n",
            "pkg/b.py": "from pkg import c\n",
            "pkg/c.py": "from . import a\n",
            "pkg/lazy.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import g\n",
            "pkg/d.py": "def g():\n    from .lazy import x\n",
            "pkg/e.py": "import pkg.f\n",
            "pkg/f.py": "x = 1\n",
        },
    )
    assert import_cycles(modules) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"], ["pkg.d", "pkg.lazy", "pkg.d"]]


def test_a_sixth_root_module_a_namespace_parameter_and_an_unnamed_module_are_refused(tmp_path: Path) -> None:
    files = {f"pkg/m{i}.py": "" for i in range(6)}
    files |= {
        "pkg/__init__.py": '"""only a docstring"""\n',
        "pkg/cli/__init__.py": "",
        "pkg/cli/run.py": "import argparse\ndef main(args: argparse.Namespace) -> None: ...\n",
        "pkg/room/__init__.py": "X = 1\n",
        "pkg/room/deep.py": "from argparse import Namespace\nclass C:\n    def f(self, *, a: Namespace): ...\n",
    }
    modules = _package(tmp_path / "src", files)
    package = tmp_path / "src" / "pkg"
    assert len(root_modules(package)) == 7 > MAX_ROOT_MODULES
    assert namespace_parameters(modules, tmp_path) == ["src/pkg/room/deep.py:3 f(a)"]
    page = "cli/run.py, room/deep.py and " + " ".join(f"m{i}.py" for i in range(6))
    assert unnamed_modules(package, page) == ["room/__init__.py"]  # an empty or docstring-only one needs no mention


def test_a_lazy_import_of_our_own_is_counted_and_its_reason_asked_for(tmp_path: Path) -> None:
    modules = _package(
        tmp_path,
        {
            f"{PACKAGE.name}/__init__.py": "",
            f"{PACKAGE.name}/room/__init__.py": "",
            f"{PACKAGE.name}/room/a.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .b import B\n"  # a type: not counted
                "def f():\n    import json\n    from . import b\n"  # json is not ours; `from . import b` is
                "def g():\n    # lazy: b loads something heavy\n    from .b import h\n"
                "def m():\n    from ..media import clip\n"  # a lazy room: not counted
            ),
            f"{PACKAGE.name}/room/b.py": "",
        },
    )
    found, unexplained = lazy_own_imports(modules, root=tmp_path)
    assert found == [
        f"{PACKAGE.name}/room/a.py:6 {PACKAGE.name}.room",
        f"{PACKAGE.name}/room/a.py:9 {PACKAGE.name}.room.b",
    ]
    assert unexplained == [found[0]]
