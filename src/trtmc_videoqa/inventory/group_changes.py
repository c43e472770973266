"""What changed in the group between the pinned commit and main, for a maintainer to read in ten seconds.

The group (rows whose Task takes image, video or frame input or produces video) comes first, row by row: rows that
joined or left it, verdict changes (a row that became `temporal-video-qa` is NEW CAPABLE; one that became `partial`
is flagged too), catalog status changes, and revision or precision changes of in-group rows. Everything outside the
group is only counted. Pure: two inventories in, a `GroupReconciliation` out.
"""

from __future__ import annotations

from collections import Counter

from ..common.text_escape import md_code, md_text
from ..results import CheckpointEntry, GroupChange, GroupChangeKind, GroupReconciliation, Inventory, OutsideCounts
from .reconcile import keyed
from .tasks import VIDEO_TO_TEXT_TASKS

CAPABLE = "temporal-video-qa"
FLAGGED = (CAPABLE, "partial")  # verdicts a maintainer must see appear
_IN_GROUP_FIELDS: tuple[GroupChangeKind, ...] = ("catalog_status", "revision", "precision", "checkpoint")


def _change(
    profile: str, kind: GroupChangeKind, old: object, new: object, entry: CheckpointEntry | None
) -> GroupChange:
    return GroupChange(
        profile=profile,
        kind=kind,
        old=None if old is None else str(old),
        new=None if new is None else str(new),
        variant=bool(entry and entry.is_variant),
        new_capable=kind in ("joined", "verdict") and entry is not None and entry.verdict == CAPABLE,
    )


def _row_changes(profile: str, before: CheckpointEntry | None, after: CheckpointEntry | None) -> list[GroupChange]:
    """The in-group changes of one row (empty when it is outside the group on both sides)."""
    was, now = bool(before and before.in_group), bool(after and after.in_group)
    if not was and not now:
        return []
    if now and not was:
        verdict = after.verdict if after else None
        return [_change(profile, "joined", before.verdict if before else None, verdict, after)]
    if was and not now:
        return [_change(profile, "left", before.verdict if before else None, after.verdict if after else None, after)]
    assert before is not None and after is not None
    changes = []
    if before.verdict != after.verdict:
        changes.append(_change(profile, "verdict", before.verdict, after.verdict, after))
    for name in _IN_GROUP_FIELDS:
        if getattr(before, name) != getattr(after, name):
            changes.append(_change(profile, name, getattr(before, name), getattr(after, name), after))
    return changes


def _outside(before: dict[str, CheckpointEntry], after: dict[str, CheckpointEntry]) -> OutsideCounts:
    def outside(entry: CheckpointEntry | None) -> bool:
        return entry is None or not entry.in_group

    added = removed = changed = 0
    for profile in before.keys() | after.keys():
        old, new = before.get(profile), after.get(profile)
        if not (outside(old) and outside(new)):
            continue
        if old is None:
            added += 1
        elif new is None:
            removed += 1
        elif any(getattr(old, f) != getattr(new, f) for f in ("verdict", "catalog_status", *_IN_GROUP_FIELDS)):
            changed += 1
    return OutsideCounts(added=added, removed=removed, changed=changed)


def group_reconciliation(
    pinned: Inventory, main: Inventory, *, main_ref: str, pinned_commit_source: str
) -> GroupReconciliation:
    before, after = keyed(pinned), keyed(main)
    changes = [
        change
        for profile in sorted(before.keys() | after.keys())
        for change in _row_changes(profile, before.get(profile), after.get(profile))
    ]
    new_capable = sorted({c.profile for c in changes if c.new_capable})
    new_tasks, new_families = video_news(pinned, main)
    flagged = sorted({c.profile for c in changes if c.kind in ("joined", "verdict") and c.new in FLAGGED})
    return GroupReconciliation(
        pinned_commit=pinned.commit,
        pinned_commit_source=pinned_commit_source,
        main_ref=main_ref,
        main_commit=main.commit,
        line=_line(pinned.commit, main.commit, changes, new_capable, _news(pinned, main, new_tasks, new_families)),
        changes=changes,
        new_capable=new_capable,
        flagged_verdicts=flagged,
        outside=_outside(before, after),
        by_kind=dict(sorted(Counter(c.kind for c in changes).items())),
        new_video_tasks=new_tasks,
        new_video_families=new_families,
    )


def video_news(pinned: Inventory, main: Inventory) -> tuple[list[str], list[str]]:
    """Video-to-text Tasks that appeared in main's API, and families that newly declare or bind one. A pinned
    inventory that records no declarations (schema v1, or a tree without the files) counts as declaring none."""
    video = VIDEO_TO_TEXT_TASKS | {t.task for t in main.declared_tasks if t.video_to_text}
    before = {t.task for t in pinned.declared_tasks if t.task in video}
    tasks = sorted({t.task for t in main.declared_tasks if t.task in video} - before)
    had = {f.family: set(f.tasks) | set(f.bound) for f in pinned.family_declarations}
    families = []
    for family in main.family_declarations:
        new = sorted(((set(family.tasks) | set(family.bound)) & video) - had.get(family.family, set()))
        if new:
            families.append(f"{family.family}: {', '.join(new)}")
    return tasks, families


def _news(pinned: Inventory, main: Inventory, tasks: list[str], families: list[str]) -> list[str]:
    where = {t.task: f"{t.file}:{t.line}" for t in reversed(main.declared_tasks)}  # the first declaration of each
    news = []
    older = (
        " (the pinned inventory is schema v1: it records no Task declarations)"
        if pinned.schema_version.endswith("/v1")
        else ""
    )
    if tasks:
        news.append(f"NEW VIDEO TASK in the API{older}: {', '.join(f'{t} ({where[t]})' for t in tasks)}")
    if families:
        news.append(f"newly declared or bound by family {'; '.join(families)}")
    return news


def _line(pinned: str, main: str, changes: list[GroupChange], new_capable: list[str], news: list[str]) -> str:
    """Video-to-text Tasks new in the API first, then families newly declaring or binding one, then new capable
    checkpoints, then the count of in-group row changes."""
    first = [f"NEW CAPABLE: {', '.join(new_capable)}"] if new_capable else []
    if not changes:
        return "; ".join([*news, f"No in-group change between {pinned} and main {main}"])
    capable = [] if new_capable else ["no new capable checkpoint"]
    rest = f"{len(changes)} in-group change(s) between {pinned} and main {main}"
    return "; ".join([*news, *first, rest, *capable])


def render_reconciliation_markdown(reconciliation: GroupReconciliation) -> str:
    """reconciliation.md: the one line first, then the group's changes, then the count of the rest."""

    r = reconciliation
    out = [
        f"**{md_text(r.line)}**",
        "",
        f"- Pinned: {md_code(r.pinned_commit)} ({md_text(r.pinned_commit_source)})",
        f"- Main: {md_code(r.main_commit)} ({md_code(r.main_ref)})",
        "",
        "## In the group",
        "",
    ]
    if r.changes:
        out += ["| profile | change | before | after | variant | new capable |", "|---|---|---|---|---|---|"]
        out += [
            f"| {md_text(c.profile)} | {c.kind} | {md_text(c.old or '–')} | {md_text(c.new or '–')} | "
            f"{'yes' if c.variant else 'no'} | {'**NEW CAPABLE**' if c.new_capable else ''} |"
            for c in r.changes
        ]
    else:
        out.append("No change.")
    o = r.outside
    out += [
        "",
        "## Outside the group (counts only)",
        "",
        f"- {o.added} added, {o.removed} removed, {o.changed} changed",
    ]
    return "\n".join(out) + "\n"
