"""inventory.md: the table a person reads in a pull request."""

from __future__ import annotations

from ..common.text_escape import md_code, md_text, shown_name
from ..results import CheckpointEntry, Inventory
from .audit import skipped_manifests
from .normal_profile import normal_of


def _cell(value: object) -> str:
    """Every value from the checkout goes through here (or _code): manifest and file names are not ours."""
    return "–" if value in (None, "", []) else md_text(value)


def _code(value: object) -> str:
    """A name or path from the checkout: its zero-width and bidirectional characters shown escaped."""
    return md_code(shown_name(value), in_table=True)


def _evidence(entry: CheckpointEntry) -> str:
    first = next((e for e in entry.evidence if e.line is not None), entry.evidence[0] if entry.evidence else None)
    return _code(f"{first.file}:{first.line}") if first and first.line else (_code(first.file) if first else "–")


def _normal(entry: CheckpointEntry, everyone: list[CheckpointEntry]) -> str:
    """Is this row its checkpoint's normal profile; else which one is, or the profile gap."""
    if entry.normal_profile:
        return "**normal**"
    if entry.profile_gap:
        return _cell(entry.profile_gap)
    normal = normal_of(everyone, entry)
    return f"no (normal: {_code(normal.profile)})" if normal else "–"


def _table(entries: list[CheckpointEntry], everyone: list[CheckpointEntry]) -> list[str]:
    lines = [
        "| profile | checkpoint | revision | precision | Task | variants | normal profile | catalog | verdict | gap "
        "| evidence |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        verdict = f"**{_cell(e.verdict)}**" + (" (ambiguous)" if e.ambiguous else "")
        lines.append(
            "| "
            + " | ".join(
                [
                    _cell(shown_name(e.profile)),
                    _cell(shown_name(e.checkpoint)),
                    _cell(e.revision[:12] if e.revision else None),
                    _cell(e.precision),
                    _cell(e.task),
                    _cell(", ".join(e.variant_kinds)),
                    _normal(e, everyone),
                    _cell(e.catalog_status),
                    verdict,
                    _cell(e.gap),
                    _evidence(e),
                ]
            )
            + " |"
        )
    return lines


def _normal_summary(entries: list[CheckpointEntry]) -> str:
    normal = [e.profile for e in entries if e.normal_profile]
    gaps = [e.profile for e in entries if e.profile_gap]
    return (
        f"- Normal profiles (one per checkpoint@revision, the one run by default): {len(normal)}; "
        f"rows whose checkpoint has no full-model profile in this checkout: {_cell(', '.join(gaps) or 'none')}"
    )


def _pin(inventory: Inventory) -> str:
    return {
        True: "matches the pin",
        False: f"differs from the pin {inventory.pinned_commit[:12]}",
        None: f"unknown (pin {inventory.pinned_commit[:12]})",
    }[inventory.matches_pin]


def render_inventory_markdown(inventory: Inventory) -> str:
    s = inventory.summary
    pin = _pin(inventory)
    out = [
        "# TRTMC inventory",
        "",
        f"- Checkout: {_code(inventory.checkout)} ({inventory.layout_description})",
        f"- Commit: {_code(inventory.commit)} — {_cell(pin)}",
        f"- Rows: {s.rows} manifests, {s.in_group} in the vision/video group; {s.models} models "
        f"(distinct checkpoints without variants), {s.variant_rows} variant rows",
        f"- Capable of temporal video QA: {_cell(', '.join(map(shown_name, s.capable)) or 'none')}",
        _normal_summary(inventory.entries),
        *([f"- {_cell(inventory.group_line)}"] if inventory.group_line else []),
    ]
    if inventory.skipped:
        manifests = len(skipped_manifests(inventory))
        out.append(
            f"- Skipped: {manifests} manifest(s) without a row, {len(inventory.skipped) - manifests} other "
            "path(s); see Skipped below"
        )
    if inventory.serving.source:
        accepts = {True: "accepts video", False: "does not accept video", None: "unknown"}[
            inventory.serving.accepts_video
        ]
        out.append(
            f"- trtmc-server chat content parts: {_cell(', '.join(inventory.serving.chat_content_types) or '?')} "
            f"({accepts}; {_code(inventory.serving.source)})"
        )
    out += ["", "| verdict | rows | in group |", "|---|---|---|"]
    out += [f"| {v} | {n} | {s.in_group_by_verdict.get(v, 0)} |" for v, n in s.by_verdict.items() if n]
    group = [e for e in inventory.entries if e.in_group]
    models = [e for e in group if not e.is_variant]
    variants = [e for e in group if e.is_variant]
    everyone = inventory.entries
    out += ["", "## In the group: models", "", *_table(models, everyone)]
    if variants:
        out += ["", "## In the group: variants (not counted as models)", "", *_table(variants, everyone)]
    others = [e for e in inventory.entries if not e.in_group]
    if others:
        out += ["", "## Outside the group", "", *_table(others, everyone)]
    ambiguous = [e for e in inventory.entries if e.ambiguous]
    if ambiguous:
        out += ["", "## Ambiguous evidence", ""] + [f"- {_code(e.profile)}: {_cell(e.ambiguity)}" for e in ambiguous]
    if inventory.lacking:
        out += ["", "## What the checkout lacked", ""] + [f"- {_cell(item)}" for item in inventory.lacking]
    if inventory.skipped:
        out += ["", "## Skipped", ""] + [f"- {_code(item.path)}: {_cell(item.reason)}" for item in inventory.skipped]
    return "\n".join(out + _declarations(inventory) + _against(inventory)) + "\n"


def _against(inventory: Inventory) -> list[str]:
    r = inventory.reconciliation
    if r is None:
        return []
    out = [
        "",
        f"## Against {_code(r.against)}",
        "",
        f"- Added: {_cell(', '.join(r.added) or 'none')}",
        f"- Removed: {_cell(', '.join(r.removed) or 'none')}",
    ]
    changed = [f"- Changed {_code(c.profile)} {_cell(c.field)}: {_cell(c.old)} -> {_cell(c.new)}" for c in r.changed]
    return out + (changed or ["- Changed: none"])


def _declarations(inventory: Inventory) -> list[str]:
    """TRTMC's own Task declarations (issue 27): the headers' Task ids, then what each family declares or binds."""
    if not inventory.declared_tasks and not any(f.file or f.bound for f in inventory.family_declarations):
        return []
    out = ["", "## TRTMC's own Task declarations", "", "| Task | declared at | contract | known |", "|---|---|---|---|"]
    out += [
        f"| {_code(t.task)} | {_code(f'{t.file}:{t.line}')} | {_cell(' '.join(t.inputs))} -> {_cell(t.output)}"
        f"{' (video to text)' if t.video_to_text else ''} | {'yes' if t.known else 'no: inferred from its name'} |"
        for t in inventory.declared_tasks
    ]
    out += ["", "| family | support.py | declares | conditions | runtime binds |", "|---|---|---|---|---|"]
    out += [
        f"| {_code(f.family)} | {_code(f.file) if f.file else 'none: no declaration found'} | "
        f"{_cell(', '.join(f.tasks))} | {_cell('; '.join(f.conditions + f.unreadable))} | {_cell(', '.join(f.bound))} |"
        for f in inventory.family_declarations
    ]
    return out
