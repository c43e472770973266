"""The inventory's group line: the furthest state the group reached along TRTMC's own declarations.

The states, in order: the API declares a video-to-text Task; a family declares or binds it; a manifest of that family
names it; a checkpoint is temporal-video-qa. The line names the furthest one reached and what the next one lacks,
for example "Group: blocked: 38 in-group rows; TRTMC declares video_text_to_text
(core/api/include/trtmc/language.h:266) but no family declares or binds it".
"""

from __future__ import annotations

from ..common.text_escape import shown_name
from ..results import CheckpointEntry, DeclaredTaskFact, FamilyDeclarationFact
from .declared_support import CheckoutDeclarations
from .task_registry import TaskDeclarations
from .tasks import VIDEO_TO_TEXT_TASKS

PRIMARY_TASK = "video_text_to_text"


def declared_task_facts(declared: TaskDeclarations) -> list[DeclaredTaskFact]:
    return [
        DeclaredTaskFact(
            task=d.task,
            file=d.file,
            line=d.line,
            side="api" if d.side == "api" else "runtime",
            known=d.known,
            inputs=list(d.contract.inputs),
            output=d.contract.output,
            video_to_text=d.is_video_to_text,
        )
        for d in declared.tasks
    ]


def family_names(declared: CheckoutDeclarations) -> list[str]:
    base = declared.root / "families"
    if not declared.newer or not base.is_dir() or base.is_symlink():
        return []
    return sorted(p.name for p in base.iterdir() if p.is_dir() and not p.is_symlink())


def family_declaration_facts(declared: CheckoutDeclarations) -> list[FamilyDeclarationFact]:
    facts: list[FamilyDeclarationFact] = []
    for name in family_names(declared):
        family = declared.family(name)
        facts.append(
            FamilyDeclarationFact(
                family=name,
                file=family.file,
                tasks=family.tasks,
                conditions=[f"{d.task}: {d.condition} (line {d.line})" for d in family.declared if d.condition],
                matches=family.matches,
                bound=sorted(declared.bindings[name]),
                unreadable=family.unreadable,
            )
        )
    return facts


def group_state_line(entries: list[CheckpointEntry], declared: CheckoutDeclarations) -> str:
    """One line; every name from the checkout in it is shown with its invisible characters escaped."""
    return shown_name(_state_line(entries, declared))


def _state_line(entries: list[CheckpointEntry], declared: CheckoutDeclarations) -> str:
    group = [entry for entry in entries if entry.in_group]
    head = f"{len(group)} in-group row{'' if len(group) == 1 else 's'}"
    capable = [e.profile for e in entries if e.verdict == "temporal-video-qa" and not e.is_variant]
    if capable:
        return f"Group: {head}; temporal-video-qa (not yet qualified): {', '.join(capable)}"
    video = declared.tasks.video_to_text()
    if not video:
        if not declared.tasks.found:
            return f"Group: blocked: {head}; the checkout has no Task API headers ({'core/api/include/trtmc'})"
        return f"Group: blocked: {head}; the checkout's Task API declares no video-to-text Task"
    primary = next((d for d in video if d.task == PRIMARY_TASK), video[0])
    said = f"TRTMC declares {primary.task} ({primary.where})"
    families = {name: declared.video_tasks_of(name) for name in family_names(declared)}
    families = {name: tasks for name, tasks in families.items() if tasks}
    if not families:
        return f"Group: blocked: {head}; {said} but no family declares or binds it"
    named = [e for e in entries if e.family in families and e.task in VIDEO_TO_TEXT_TASKS]
    if not named:
        which = ", ".join(f"{name} ({', '.join(tasks)})" for name, tasks in families.items())
        return f"Group: blocked: {head}; {said}; family {which} declares or binds it, but no manifest names it"
    row = named[0]
    return f"Group: blocked: {head}; {said}; {row.profile} names {row.task} but is {row.verdict}: {row.gap}"
