"""The rooms table of docs/architecture.md, held by the code: every import between rooms (at module level, inside a
function or under TYPE_CHECKING) must be one the table's "may import" column allows, and a forbidden edge is named.

How the column is read: `nothing of ours`; a list of rooms in backticks; `the rooms above` (every room on an earlier
row of the table), with more rooms after it; `the rooms above but` the rooms it names before `, and` more rooms;
`any room but` the rooms it names. A root module's cell names each module with what it may import (`__main__.py`:
`cli/`; ...). Every room may import the package itself (its
version) and its own modules."""

from __future__ import annotations

import re
from pathlib import Path

from test_source_limits import ARCHITECTURE, MODULES, imports_anywhere

ROOT = "(root)"
_TICKED = re.compile(r"`([a-z_]+)/[a-z_.]*`")  # a room named `room/` or a module of it, `room/module.py`


def rooms_table(page: str) -> dict[str, set[str] | None]:
    """Room -> the rooms it may import (None: the root row, read per module by `root_rules`)."""
    section = page.split("## The rooms", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    allowed: dict[str, set[str] | None] = {}
    above: list[str] = []
    every = [re.match(r"\| `([a-z_]+)/`", row).group(1) for row in rows if re.match(r"\| `([a-z_]+)/`", row)]
    for row in rows:
        cells = [cell.strip() for cell in row.replace("\\|", "/").strip("|").split("|")]  # `A \| B` is one cell
        named = re.match(r"`([a-z_]+)/`", cells[0])
        if named is None:  # the root row
            allowed[ROOT] = None
            continue
        room, rule = named.group(1), cells[2]
        if rule.startswith("nothing of ours"):
            rooms: set[str] = set()
        elif rule.startswith("any room but"):
            rooms = set(every) - set(_TICKED.findall(rule)) - {room}
        elif rule.startswith("the rooms above but"):  # `the rooms above but `x/` (why), and `y/`, ...`
            excluded, _, added = rule.partition(", and ")
            rooms = (set(above) - set(_TICKED.findall(excluded))) | set(_TICKED.findall(added))
        elif rule.startswith("the rooms above"):
            rooms = set(above) | set(_TICKED.findall(rule))
        else:
            rooms = set(_TICKED.findall(rule))
        allowed[room] = rooms
        above.append(room)
    return allowed


def root_rules(page: str) -> dict[str, set[str]]:
    """Root module -> the dotted modules or rooms it may import, from the root row's `module.py`: ... parts."""
    section = page.split("## The rooms", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| root"))
    rules: dict[str, set[str]] = {}
    for part in row.strip("|").split("|")[2].split(";"):
        module, _, targets = part.partition(":")
        name = module.strip().strip("`").removesuffix(".py")
        ticked = re.findall(r"`([a-z_/.]+)`", targets)
        rules[name] = {t.removesuffix("/").removesuffix(".py").replace("/", ".") for t in ticked if t != "dagger"}
    return rules


def forbidden_edges(page: str, modules: dict[str, Path]) -> list[str]:
    """Every import the table does not allow, as `from -> to` with the rule it breaks."""
    table, roots = rooms_table(page), root_rules(page)
    found = []
    for name, path in modules.items():
        parts = name.split(".")
        room = parts[1] if len(parts) > 2 or (len(parts) == 2 and modules[name].name == "__init__.py") else ROOT
        for target in sorted(imports_anywhere(name, path, modules)):
            target_parts = target.split(".")
            if len(target_parts) == 1:
                continue  # the package itself: its version
            target_room = target_parts[1]
            if room == ROOT:
                module = parts[1] if len(parts) > 1 else "__init__"
                allowed = roots.get(module, set())
                if not any(target[len("trtmc_videoqa.") :].startswith(rule) for rule in allowed):
                    found.append(f"{name} -> {target} (the root row lets {module}.py import {sorted(allowed)})")
                continue
            if target_room == room:
                continue
            rooms = table.get(room)
            if rooms is None or target_room not in rooms:
                found.append(f"{name} -> {target} (the rooms table lets {room}/ import {sorted(rooms or [])})")
    return found


def test_every_import_between_rooms_is_one_the_rooms_table_allows() -> None:
    assert forbidden_edges(ARCHITECTURE.read_text(), MODULES) == []


def test_a_forbidden_edge_is_named_with_the_rule_it_breaks(tmp_path: Path) -> None:
    page = ARCHITECTURE.read_text()
    package = tmp_path / "trtmc_videoqa"
    for folder in ("publish", "trtmc", "common"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "trtmc" / "commands.py").write_text("def find_toolchain(): ...\n")
    (package / "publish" / "rewrite.py").write_text("from ..trtmc.commands import find_toolchain\n")
    (package / "publish" / "check.py").write_text("from ..common import errors\n")
    (package / "common" / "errors.py").write_text("")
    modules = {
        "trtmc_videoqa": package / "__init__.py",
        "trtmc_videoqa.publish": package / "publish" / "__init__.py",
        "trtmc_videoqa.publish.rewrite": package / "publish" / "rewrite.py",
        "trtmc_videoqa.publish.check": package / "publish" / "check.py",
        "trtmc_videoqa.trtmc": package / "trtmc" / "__init__.py",
        "trtmc_videoqa.trtmc.commands": package / "trtmc" / "commands.py",
        "trtmc_videoqa.common": package / "common" / "__init__.py",
        "trtmc_videoqa.common.errors": package / "common" / "errors.py",
    }
    found = forbidden_edges(page, modules)
    assert len(found) == 1 and found[0].startswith("trtmc_videoqa.publish.rewrite -> trtmc_videoqa.trtmc.commands")
