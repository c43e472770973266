"""`--against`: what changed since an earlier inventory, by the fields that matter (never line numbers)."""

from __future__ import annotations

from ..results import CheckpointEntry, FieldChange, Inventory, Reconciliation

COMPARED_FIELDS = ("verdict", "catalog_status", "in_group", "checkpoint", "revision", "precision")


def _key(entry: CheckpointEntry) -> str:
    return entry.profile


def reconcile(old: Inventory, new: Inventory, against: str) -> Reconciliation:
    before = {_key(e): e for e in old.entries}
    after = {_key(e): e for e in new.entries}
    changed = [
        FieldChange(profile=profile, field=name, old=getattr(before[profile], name), new=getattr(after[profile], name))
        for profile in sorted(before.keys() & after.keys())
        for name in COMPARED_FIELDS
        if getattr(before[profile], name) != getattr(after[profile], name)
    ]
    return Reconciliation(against=against, added=sorted(after.keys() - before.keys()),
                          removed=sorted(before.keys() - after.keys()), changed=changed)
