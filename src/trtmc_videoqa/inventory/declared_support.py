"""What TRTMC itself declares for one row: its family's support.py and runtime bindings, beside the manifest's Task.

A declaration under a config condition ("when the config has a vision part") or a model-type condition ("when
`model_type in {'a', 'b'}`") counts only where that config is available locally and satisfies every condition: the
checkpoint's config.json at its pinned revision in the local Hugging Face hub cache (a look-up, never a download),
its keys for a part and its top-level `model_type` for a model type. Otherwise the condition is named as unchecked;
a condition of any other shape cannot be checked statically. A family without support.py has no declaration,
and the row is judged as before, saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..hub.cache import json_object, snapshot_dir
from ..results import Evidence
from .family_declarations import Declared, FamilyDeclaration, read_family_declaration
from .runtime_bindings import Binding, bound_tasks, read_runtime_bindings
from .task_registry import TaskDeclarations, interface_map, interface_name, read_task_declarations
from .tasks import VIDEO_TO_TEXT_TASKS

MAX_CONFIG_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class RowDeclaration:
    """The family's declaration of the row's Task. `declared` is None when the family has no support.py."""

    task: str
    words: str  # what the row says about it
    declared: bool | None
    counted: bool  # declared, and its condition (if any) checked true on a local config
    missing: str | None  # the missing piece, in words, when declared is not None and not counted
    evidence: list[Evidence] = field(default_factory=list)
    bound: bool = False


def hub_config(checkpoint: str | None, revision: str | None, environ: Mapping[str, str] | None = None) -> Path | None:
    """The checkpoint's config.json in the local hub cache at its pinned revision, when it is there."""
    snapshot = snapshot_dir(checkpoint, revision, environ)
    path = snapshot / "config.json" if snapshot is not None else None
    return path if path is not None and path.is_file() else None


def _unmet(hit: Declared, data: dict[str, object] | None) -> str | None:
    """What of the declaration's conditions the local config does not satisfy, in words; None when it satisfies all.
    A part is a top-level key naming it, with a value; a model type is the config's top-level `model_type`."""
    if data is None:
        return "the local config could not be read"
    if not all(any(part in str(key).lower() and value for key, value in data.items()) for part in hit.config_parts):
        return "the local config has no such part"
    model_type = data.get("model_type")
    for test in hit.model_types:
        if not isinstance(model_type, str):
            return "the local config names no model_type"
        if not test.holds(model_type):
            names = "{" + ", ".join(repr(name) for name in test.names) + "}"
            return (
                f"the local config's model_type is {model_type!r}, {'not one of' if test.allowed else 'one of'} {names}"
            )
    return None


def row_declaration(
    family: FamilyDeclaration,
    bindings: list[Binding],
    task: str,
    config: Path | None,
) -> RowDeclaration:
    """The row's Task against its family's support.py and runtime; `bindings` are those mapped to this Task."""
    bound_lines = [binding.evidence(task) for binding in bindings]
    runtime = (
        f"the family's runtime implements or binds {interface_name(task)} (evidence)"
        if bindings
        else f"no runtime class of the family implements or binds {interface_name(task)}"
    )
    if family.file is None:
        words = f"no support.py in families/{family.family}: no declaration found (judged without one); {runtime}"
        return RowDeclaration(task, words, None, False, None, bound_lines, bool(bindings))
    if family.problem:
        return RowDeclaration(task, family.problem, False, False, family.problem, bound_lines, bool(bindings))
    hits = family.declares(task)
    if not hits:
        unreadable = f"; not read statically: {'; '.join(family.unreadable)}" if family.unreadable else ""
        absent = f"{family.file} does not declare {task!r} (it declares {', '.join(family.tasks) or 'no Task'})"
        return RowDeclaration(task, f"{absent}{unreadable}; {runtime}", False, False, absent + unreadable, bound_lines)
    shown = [_declared_evidence(family, hit) for hit in hits]
    counted, missing = _counted(family, hits, config)
    words = f"{family.file}:{hits[0].line} declares {task!r}{_condition(hits)}; {runtime}"
    if missing:
        words += f"; {missing}"
    return RowDeclaration(task, words, True, counted, missing, shown + bound_lines, bool(bindings))


def _condition(hits: list[Declared]) -> str:
    plain = [hit for hit in hits if hit.condition is None]
    return "" if plain else f" {hits[0].condition}"


def _counted(family: FamilyDeclaration, hits: list[Declared], config: Path | None) -> tuple[bool, str | None]:
    """An unconditional declaration counts; one under config-part and model-type conditions only when a local config
    satisfies them all; one under any other condition never."""
    if any(hit.condition is None for hit in hits):
        return True, None
    checkable = [hit for hit in hits if hit.checkable]
    if not checkable:
        return False, f"the declaration holds only {hits[0].condition}, which the audit cannot check statically"
    hit = checkable[0]
    if config is None:
        return False, (
            f"{family.file}:{hit.line} declares it only {hit.condition}; unchecked: the checkpoint's config is not "
            "in the local hub cache"
        )
    data = json_object(config, MAX_CONFIG_BYTES)
    unmet = [_unmet(each, data) for each in checkable]
    if None in unmet:
        return True, None
    return False, f"{family.file}:{hit.line} declares it only {hit.condition}, and {unmet[0]}"


def _declared_evidence(family: FamilyDeclaration, hit: Declared) -> Evidence:
    where = f" {hit.condition}" if hit.condition else ""
    return Evidence(
        file=family.file or "",
        line=hit.line,
        excerpt=f"{hit.task}{where}"[:160],
        shows=f"the family's support.py declares the Task {hit.task!r}{where}",
    )


class CheckoutDeclarations:
    """The checkout's three sources, read once: the Task registry, each family's support.py, its runtime bindings."""

    def __init__(self, root: Path, newer_layout: bool, environ: Mapping[str, str] | None = None) -> None:
        self.root = root
        self.newer = newer_layout
        self.environ = environ
        self.tasks = read_task_declarations(root) if newer_layout else TaskDeclarations()
        self.interfaces = interface_map(self.tasks)
        self.families: dict[str, FamilyDeclaration] = {}
        self.bindings: dict[str, dict[str, list[Binding]]] = {}
        self.problems: list[str] = list(self.tasks.problems)

    def family(self, name: str) -> FamilyDeclaration:
        if name not in self.families:
            self.families[name] = read_family_declaration(self.root, name)
            found, problems = read_runtime_bindings(self.root, name)
            self.bindings[name] = bound_tasks(found, self.interfaces)
            self.problems.extend(problems)
            if self.families[name].problem:
                self.problems.append(self.families[name].problem or "")
        return self.families[name]

    def row(self, family: str, task: str, checkpoint: str | None, revision: str | None) -> RowDeclaration | None:
        """None for the older layout, which has none of these files."""
        if not self.newer:
            return None
        declaration = self.family(family)
        config = hub_config(checkpoint, revision, self.environ)
        return row_declaration(declaration, self.bindings[family].get(task, []), task, config)

    def video_tasks_of(self, family: str) -> list[str]:
        """The video-to-text Tasks the family declares or its runtime binds."""
        declared = set(self.family(family).tasks) | set(self.bindings[family])
        return sorted(task for task in declared if task in VIDEO_TO_TEXT_TASKS)
