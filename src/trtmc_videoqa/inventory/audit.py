"""The audit: a checkout in, one CheckpointEntry per manifest out, nothing silently dropped."""

from __future__ import annotations

import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from .. import __version__
from ..common.pins import load_pins
from ..results import (
    LAYOUT_DESCRIPTIONS,
    VERDICTS,
    CheckpointEntry,
    Evidence,
    Inventory,
    Layout,
    NativeRequest,
    Skipped,
    Summary,
    TaskContract,
)
from .bounded_source import Unreadable, note_unreadable, read_text, unreadable_files
from .catalog import TaskRegistry, catalog_status, read_task_registry
from .declared_support import CheckoutDeclarations
from .family_source import FamilyScan, scan_family
from .group_state import declared_task_facts, family_declaration_facts, group_state_line
from .inputs import media_controls, media_inputs, testcase_facts
from .manifest import Manifest, ManifestError, profile_from_path, read_manifest
from .normal_profile import with_normal_profiles
from .server_source import read_serving_facts
from .task_requests import native_requests
from .tasks import FRAME_RUNTIME_MARKERS, VISUAL_INPUTS, contract_for
from .tree import (
    CHECKOUT_PLACEHOLDER,
    NEW_MANIFEST_GLOB,
    OLD_MANIFEST_GLOB,
    CheckoutTree,
    checkout_commit,
    open_checkout,
    shown_path,
)
from .variants import variant_kinds
from .verdict import RowFacts, judge

MAX_MODEL_TOML_BYTES = 1024 * 1024  # an older family's MODEL.toml is a few kB
TaskField = Literal["task", "task_strategy"]  # the manifest key naming the Task: CheckpointEntry.task_field

# catalog.py's build settings, plus the older layout's names for the same things.
BUILD_SETTINGS = (
    "max_sequence_length",
    "max_cache_length",
    "image_height",
    "image_width",
    "video_num_frames",
    "max_batch_size",
    "tensor_parallel_size",
    "context_parallel_size",
    "quantization",
    "fp32_layers",
    "backend",
    "dynamic_kv_cache",
    "build_args",
    "trust_remote_code",
)


@dataclass
class _AuditContext:
    tree: CheckoutTree
    layout: Layout
    registry: TaskRegistry | None
    registry_lines: tuple[str, ...]
    registry_problem: str | None
    lacking: list[str] = field(default_factory=list)
    _lacked: set[str] = field(default_factory=set)
    scans: dict[str, FamilyScan] = field(default_factory=dict)
    model_tomls: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    native: dict[str, NativeRequest] = field(default_factory=dict)  # by Task: its native request (task_requests.py)
    declared: CheckoutDeclarations | None = None  # TRTMC's own Task declarations (issue 27)

    def lack(self, what: str) -> None:
        if what not in self._lacked:  # a set: a checkout lacking 100,000 things is said in linear time
            self._lacked.add(what)
            self.lacking.append(what)

    def scan(self, family: str) -> FamilyScan:
        if family not in self.scans:
            scan = scan_family(self.tree, self.layout, family)
            if not scan.found:
                self.lack(
                    f"model code of family {family!r} (looked in {', '.join(scan.directories)}): "
                    "its media path could not be checked"
                )
            self.scans[family] = scan
        return self.scans[family]


def run_inventory(
    checkout: Path, *, pinned_commit: str | None = None, commit: str | None = None, shown_as: str | None = None
) -> Inventory:
    """One row per manifest of the checkout. Its commit is HEAD from its .git when it has one, else `commit` as
    the caller knows it (an exported tree of a known commit), else 'unknown'. The inventory names the checkout as
    `shown_as`, else by its relative path as given, else as $TRTMC_CHECKOUT: never by an absolute path. Every file
    read within budget (bounded_source.py); one that is not is named in `skipped`, with why, and the audit goes on."""
    with unreadable_files() as ledger:
        inventory = _audit(checkout, pinned_commit, commit, shown_as)
    listed = {item.path for item in inventory.skipped}
    inventory.skipped.extend(item for item in ledger.skipped if item.path not in listed)
    return inventory


def _audit(checkout: Path, pinned_commit: str | None, commit: str | None, shown_as: str | None) -> Inventory:
    tree, layout = open_checkout(checkout)
    registry, registry_lines, registry_problem = (
        read_task_registry(tree.root) if layout == "families" else (None, (), None)
    )
    context = _AuditContext(tree, layout, registry, registry_lines, registry_problem)
    context.declared = CheckoutDeclarations(tree.root, layout == "families")
    if layout == "families":
        context.native = native_requests(tree.root)
    if registry_problem:
        context.lack(registry_problem)
    serving, serving_problem = read_serving_facts(tree.root)
    if serving_problem:
        context.lack(serving_problem)
    pattern = NEW_MANIFEST_GLOB if layout == "families" else OLD_MANIFEST_GLOB
    paths = tree.glob(pattern)
    if not paths:
        context.lack(f"manifests: no file matches {pattern}")
    entries = [_entry(context, path) for path in paths]
    if layout == "e2e-models":
        _check_listed_manifests(context, paths)
    entries.sort(key=lambda entry: (entry.family, entry.profile, entry.manifest))
    entries = with_normal_profiles(entries)  # one normal profile per checkpoint@revision (normal_profile.py)
    for profile, count in Counter(entry.profile for entry in entries).items():
        if count > 1:
            context.lack(f"profile {profile!r} is named by {count} manifests: rows are told apart by manifest path")
    declared = context.declared
    for problem in declared.problems:
        context.lack(problem)
    head = checkout_commit(tree.root)
    commit = head if head != "unknown" else (commit or "unknown")
    pinned = pinned_commit or load_pins().trtmc.commit
    facts = family_declaration_facts(declared)  # reads every family's declaration: before the inventory is built
    return Inventory(
        tool_version=__version__,
        checkout=shown_as or shown_path(checkout, CHECKOUT_PLACEHOLDER),
        layout=layout,
        layout_description=LAYOUT_DESCRIPTIONS[layout],
        commit=commit,
        pinned_commit=pinned,
        matches_pin=None if commit == "unknown" else commit == pinned,
        lacking=context.lacking,
        skipped=tree.skipped,
        serving=serving,
        entries=entries,
        summary=summarize(entries),
        declared_tasks=declared_task_facts(declared.tasks),
        family_declarations=facts,
        group_line=group_state_line(entries, declared) if layout == "families" else None,
    )


def _entry(context: _AuditContext, path: Path) -> CheckpointEntry:
    rel = context.tree.rel(path)
    family_dir = path.parents[2].name if context.layout == "families" else path.parents[1].name
    try:
        manifest = read_manifest(path, rel, context.layout, family_dir)
    except ManifestError as error:
        return CheckpointEntry(
            profile=profile_from_path(path),
            family=family_dir,
            manifest=rel,
            catalog_status="invalid" if context.layout == "families" else "n/a",
            catalog_reason=str(error),
            in_group=False,
            group_reason="the manifest could not be read",
            verdict="invalid",
            gap=f"unreadable manifest: {error}",
            error=str(error),
            evidence=[Evidence(file=rel, line=None, excerpt="", shows=str(error))],
        )
    return _judged_entry(context, manifest)


def _judged_entry(context: _AuditContext, manifest: Manifest) -> CheckpointEntry:
    family = manifest.optional_string("family") or manifest.family_dir
    facts = _row_facts(context, manifest, family)
    judgement = judge(facts)
    status, reason = catalog_status(manifest, context.registry, context.registry_problem)
    operation = context.registry.operations.get(facts.task) if context.registry else None
    contract = facts.contract
    return CheckpointEntry(
        profile=manifest.profile,
        family=family,
        manifest=manifest.rel,
        checkpoint=manifest.optional_string("hf_id"),
        revision=manifest.optional_string("hf_revision"),
        bundle=manifest.optional_string("bundle"),
        precision=manifest.optional_string("precision"),
        task=facts.task,
        task_field=_task_field(manifest),
        runtime_strategy=manifest.optional_string("runtime_strategy"),
        operation=operation,
        contract=TaskContract(
            inputs=list(contract.inputs),
            output=contract.output,
            source=facts.contract_source + (f"; {contract.note}" if contract.note else ""),
        ),
        variant_kinds=variant_kinds(manifest),
        native_request=context.native.get(facts.task),
        catalog_status=status,
        catalog_reason=reason,
        in_group=judgement.in_group,
        group_reason=judgement.group_reason,
        media_controls=media_controls(manifest),
        build_settings={k: manifest.data[k] for k in BUILD_SETTINGS if k in manifest.data},
        testcases=testcase_facts(manifest),
        verdict=judgement.verdict,
        gap=judgement.gap,
        ambiguous=bool(judgement.ambiguities),
        ambiguity="; ".join(judgement.ambiguities) or None,
        evidence=judgement.evidence + _registry_evidence(context, facts.task, operation),
        gap_evidence=judgement.gap_evidence,
        declaration=facts.declaration.words if facts.declaration else None,
        family_tasks=context.declared.family(family).tasks if context.declared and context.declared.newer else [],
    )


def _task_field(manifest: Manifest) -> TaskField:
    return "task_strategy" if manifest.layout == "e2e-models" else "task"


def _row_facts(context: _AuditContext, manifest: Manifest, family: str) -> RowFacts:
    """What the verdict depends on; the family's model code is scanned only when a text answer may see frames."""
    older = manifest.layout == "e2e-models"
    task = manifest.task
    contract, contract_source = contract_for(task, older)
    inputs = media_inputs(manifest)
    frame_runtime = _frame_runtime(manifest)
    visual = (set(contract.inputs) | inputs.kinds) & VISUAL_INPUTS
    needs_scan = contract.output in ("text", "decision") and bool(visual or frame_runtime)
    declared = context.declared
    checkpoint, revision = manifest.optional_string("hf_id"), manifest.optional_string("hf_revision")
    declaration = declared.row(family, task, checkpoint, revision) if declared else None
    return RowFacts(
        manifest_file=manifest.rel,
        task=task,
        task_evidence=manifest.text.evidence(
            _task_field(manifest), f"native {'task strategy' if older else 'Task'} {task!r}"
        ),
        contract=contract,
        contract_inferred=contract_source.startswith("inferred"),
        contract_source=contract_source,
        inputs=inputs,
        frame_runtime=frame_runtime,
        scan=context.scan(family) if needs_scan else None,
        extra_input_evidence=_model_toml_inputs(context, manifest) if older and needs_scan else [],
        declaration=declaration,
        family_video_tasks=tuple(declared.video_tasks_of(family)) if declared and declared.newer else (),
    )


def _frame_runtime(manifest: Manifest) -> Evidence | None:
    """The older layout's runtime strategy, when it is one that runs on ordered frames."""
    runtime = manifest.optional_string("runtime_strategy")
    if runtime and any(marker in runtime for marker in FRAME_RUNTIME_MARKERS):
        return manifest.text.evidence("runtime_strategy", f"runtime strategy {runtime!r} runs on ordered frames")
    return None


def _registry_evidence(context: _AuditContext, task: str, operation: str | None) -> list[Evidence]:
    """The benchmark registry's line for the Task, when the registry maps it to an operation."""
    if context.registry is None or not operation:
        return []
    registry_line = context.registry.evidence(task, context.registry_lines)
    return [registry_line] if registry_line else []


def _model_toml_text(context: _AuditContext, family_dir: str) -> tuple[str, ...] | None:
    if family_dir not in context.model_tomls:
        rel = PurePosixPath("tests/e2e/models", family_dir, "MODEL.toml").as_posix()
        cost = "its E2E input fields and manifest list are unknown"
        try:
            text = read_text(context.tree.root, rel, MAX_MODEL_TOML_BYTES, cost)
            tomllib.loads(text)  # read as lines below, but only once it is known to be the TOML it claims to be
            context.model_tomls[family_dir] = tuple(text.splitlines())
        except (Unreadable, tomllib.TOMLDecodeError, RecursionError) as error:
            context.model_tomls[family_dir] = None
            why = f"unreadable ({error.why})" if isinstance(error, Unreadable) else f"not valid TOML ({error})"
            if isinstance(error, RecursionError):  # tomllib recurses once per nested array or table
                why = "not TOML this tool reads (nested too deeply: RecursionError)"
                note_unreadable(Unreadable(rel, "RecursionError", why), cost)
            context.lack(f"{rel}: {why}; {cost}")
    return context.model_tomls[family_dir]


def _model_toml_inputs(context: _AuditContext, manifest: Manifest) -> list[Evidence]:
    """The older layout's E2E input fields for this task strategy (`input = ..., manifest = ...` lines)."""
    lines = _model_toml_text(context, manifest.family_dir)
    if lines is None:
        return []
    rel = f"tests/e2e/models/{manifest.family_dir}/MODEL.toml"
    header = f"[e2e_defaults.{manifest.task}]"
    found: list[Evidence] = []
    inside = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped == header
        elif inside and "input =" in stripped:
            found.append(
                Evidence(
                    file=rel,
                    line=number,
                    excerpt=stripped[:160],
                    shows="the family's E2E defaults name this input field",
                )
            )
    return found


def _check_listed_manifests(context: _AuditContext, paths: list[Path]) -> None:
    """Older layout: every manifest a MODEL.toml lists should exist; say which do not."""
    present = {context.tree.rel(p) for p in paths}
    for family_dir in sorted({p.parents[1].name for p in paths}):
        lines = _model_toml_text(context, family_dir)
        for line in lines or ():
            stripped = line.strip().strip(",")
            if stripped.startswith('"manifests/') and stripped.endswith('.json"'):
                rel = f"tests/e2e/models/{family_dir}/{stripped.strip(chr(34))}"
                if rel not in present:
                    context.lack(f"{rel}: listed in MODEL.toml test_manifests but absent")


def skipped_manifests(inventory: Inventory) -> list[Skipped]:
    """Skipped paths matching the layout's manifest pattern: manifests that got no row, each with its reason."""
    pattern = NEW_MANIFEST_GLOB if inventory.layout == "families" else OLD_MANIFEST_GLOB
    return [item for item in inventory.skipped if PurePosixPath(item.path).match(pattern)]


def summarize(entries: list[CheckpointEntry]) -> Summary:
    by_verdict: Counter[str] = Counter(entry.verdict for entry in entries)
    in_group = [entry for entry in entries if entry.in_group]
    base = [entry for entry in entries if not entry.is_variant and entry.verdict != "invalid"]
    models = {(entry.checkpoint, entry.revision) for entry in base if entry.checkpoint}
    return Summary(
        rows=len(entries),
        in_group=len(in_group),
        by_verdict={verdict: by_verdict[verdict] for verdict in VERDICTS},
        in_group_by_verdict={v: c for v, c in Counter(e.verdict for e in in_group).items()},
        models=len(models),
        variant_rows=sum(1 for entry in entries if entry.is_variant),
        capable=[entry.profile for entry in base if entry.verdict == "temporal-video-qa"],
    )
