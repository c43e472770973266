"""One normal full-model profile per checkpoint@revision: the one the qualification runs and counts as a model.

A pure function of the audited entries. Entries are grouped by checkpoint@revision (an entry without a checkpoint is
its own group, by profile); unreadable (`invalid`) entries belong to no group and are never normal. A group's
full-model profiles are those without a smoke variant kind (L0, partial, random, regression). Among them the normal
one is the first by this rule, which always picks one:

1. a capable verdict (`temporal-video-qa`) first, so the qualification runs the profile that has the capability;
2. no variant kinds;
3. fewest parallel ranks (tensor_parallel_size x context_parallel_size from the build settings, default 1);
4. not quantized (the manifest's own precision);
5. the shortest profile name;
6. the first in name order (then manifest path, so two manifests naming one profile still give one answer).

A group without a full-model profile has no normal profile: every entry in it carries the profile gap
`NO_FULL_MODEL`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final

from ..results import CheckpointEntry

NO_FULL_MODEL: Final = "no full-model profile in this checkout"
SMOKE_KINDS: Final = frozenset({"l0", "partial", "random", "regression"})
CAPABLE_VERDICT: Final = "temporal-video-qa"


def is_full_model(entry: CheckpointEntry) -> bool:
    """A readable profile of the whole model: none of its variant kinds is a smoke kind."""
    return entry.verdict != "invalid" and not SMOKE_KINDS.intersection(entry.variant_kinds)


def parallel_ranks(entry: CheckpointEntry) -> int:
    """tensor_parallel_size x context_parallel_size from the build settings; 1 for a size that is absent or odd."""
    ranks = 1
    for key in ("tensor_parallel_size", "context_parallel_size"):
        value = entry.build_settings.get(key)
        if isinstance(value, bool):
            continue
        try:
            size = int(value) if isinstance(value, int | str) else 1
        except ValueError:
            size = 1
        ranks *= max(size, 1)
    return ranks


def group_key(entry: CheckpointEntry) -> Hashable:
    """checkpoint@revision; an entry without a checkpoint is its own group, by profile."""
    if entry.checkpoint:
        return ("checkpoint", entry.checkpoint, entry.revision or "")
    return ("profile", entry.profile)


def rank(entry: CheckpointEntry) -> tuple[bool, bool, int, bool, int, str, str]:
    """The rule's sort key: the smallest is the normal profile."""
    return (
        entry.verdict != CAPABLE_VERDICT,
        bool(entry.variant_kinds),
        parallel_ranks(entry),
        "quantized" in entry.variant_kinds,
        len(entry.profile),
        entry.profile,
        entry.manifest,
    )


def _groups(entries: list[CheckpointEntry]) -> dict[Hashable, list[CheckpointEntry]]:
    groups: dict[Hashable, list[CheckpointEntry]] = {}
    for entry in entries:
        if entry.verdict != "invalid":
            groups.setdefault(group_key(entry), []).append(entry)
    return groups


def choose_normal_profiles(entries: list[CheckpointEntry]) -> dict[str, bool]:
    """Whether each entry is the normal profile of its checkpoint@revision, by manifest path (one entry each)."""
    normal = {entry.manifest: False for entry in entries}
    for members in _groups(entries).values():
        full = [entry for entry in members if is_full_model(entry)]
        if full:
            normal[min(full, key=rank).manifest] = True
    return normal


def profile_gaps(entries: list[CheckpointEntry]) -> dict[str, str | None]:
    """NO_FULL_MODEL for every entry of a group without a full-model profile, else None; by manifest path."""
    gaps: dict[str, str | None] = {entry.manifest: None for entry in entries}
    for members in _groups(entries).values():
        if not any(is_full_model(entry) for entry in members):
            gaps.update({entry.manifest: NO_FULL_MODEL for entry in members})
    return gaps


def with_normal_profiles(entries: list[CheckpointEntry]) -> list[CheckpointEntry]:
    """The entries, in their order, each carrying `normal_profile` and `profile_gap`."""
    normal = choose_normal_profiles(entries)
    gaps = profile_gaps(entries)
    return [
        entry.model_copy(update={"normal_profile": normal[entry.manifest], "profile_gap": gaps[entry.manifest]})
        for entry in entries
    ]


def normal_of(entries: list[CheckpointEntry], entry: CheckpointEntry) -> CheckpointEntry | None:
    """The normal profile of the entry's checkpoint@revision, among entries that already carry the choice."""
    if entry.verdict == "invalid":
        return None
    key = group_key(entry)
    return next((e for e in entries if e.normal_profile and e.verdict != "invalid" and group_key(e) == key), None)
