"""`--against`: what changed since an earlier inventory, by the fields that matter (never line numbers)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..results import CheckpointEntry, FieldChange, Inventory, Reconciliation
from .tree import shown_path

COMPARED_FIELDS = ("verdict", "catalog_status", "in_group", "checkpoint", "revision", "precision")


def keyed(inventory: Inventory) -> dict[str, CheckpointEntry]:
    """By profile; a profile that several manifests name is told apart by its manifest path."""
    counts = Counter(e.profile for e in inventory.entries)
    return {(e.profile if counts[e.profile] == 1 else f"{e.profile} ({e.manifest})"): e for e in inventory.entries}


def reconcile(old: Inventory, new: Inventory, against: str) -> Reconciliation:
    """What changed since `old`, which was read from `against` (named by its relative path as given, else by its
    file name: inventory.json is public)."""
    before = keyed(old)
    after = keyed(new)
    changed = [
        FieldChange(profile=profile, field=name, old=getattr(before[profile], name), new=getattr(after[profile], name))
        for profile in sorted(before.keys() & after.keys())
        for name in COMPARED_FIELDS
        if getattr(before[profile], name) != getattr(after[profile], name)
    ]
    return Reconciliation(
        against=shown_path(against, Path(against).name),
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        changed=changed,
    )
