"""Judgments a TRTMC row rests on, from its inputs and evidence alone: whether this run takes a variant through the
chain, whether the manifest's names may be used as paths, and whether the family's own run shows that our exact
bundle passed its checks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ..common.safe_names import plain_revision, safe_name
from ..results import ResultRow
from ..results.layout import CORRECTNESS_DIR, CORRECTNESS_LOG, FAMILY_RESULT_FILE, JUNIT_FILE
from ..trtmc.commands import (
    bundles_built_by,
    correctness_test,
    family_result,
    family_test_outcome,
    file_digest,
)
from .row_start import unsupported_row

if TYPE_CHECKING:
    from ..results import CheckpointEntry  # its schemas load on first use: an annotation only

# Smoke, random-weight and partial profiles answer nothing worth grading: listed, run only when named.
_NOT_BY_DEFAULT = ("l0", "random", "partial", "regression")


def variant_hold(
    entry: CheckpointEntry, *, chosen: bool, normal: str | None = None, name: str | None = None
) -> ResultRow | None:
    """A capable variant that this run does not take through the chain, and why; None when it runs. `normal` is
    the normal profile of the entry's checkpoint, if it has one; `name` the row's (`row_names`)."""
    sizes = {k: entry.build_settings.get(k, 1) for k in ("tensor_parallel_size", "context_parallel_size")}
    if "tp" in entry.variant_kinds or "cp" in entry.variant_kinds:
        return unsupported_row(entry, name).model_copy(
            update=dict(
                status="blocked",
                status_evidence=[entry.manifest],
                status_reason=f"distributed variant ({', '.join(f'{k}={v}' for k, v in sizes.items())}): the "
                "qualification serves one process on one GPU",
            )
        )
    held = [kind for kind in entry.variant_kinds if kind in _NOT_BY_DEFAULT]
    if held and not chosen:
        gap = f" ({entry.profile_gap})" if entry.profile_gap else ""
        return unsupported_row(entry, name).model_copy(
            update=dict(
                status="planned",
                status_evidence=[entry.manifest],
                status_reason=f"{'/'.join(held)} variant{gap}: listed, not qualified by default; name it with "
                "--profile",
            )
        )
    if not entry.normal_profile and not chosen and normal is not None:
        return unsupported_row(entry, name).model_copy(
            update=dict(
                status="planned",
                status_evidence=[entry.manifest],
                status_reason=f"variant of {entry.checkpoint}@{(entry.revision or 'unpinned')[:12]}, whose normal "
                f"profile is {normal}: listed, not counted as a model, not qualified by default; name it with "
                "--profile",
            )
        )
    return None


def named_by(profiles: list[str] | None, entry: CheckpointEntry, name: str) -> bool:
    """--profile names this entry, by its profile or by its row's name."""
    return bool(profiles) and bool({entry.profile, name} & set(profiles or []))


def row_names(entries: list[CheckpointEntry]) -> dict[str, str]:
    """Each entry's row name by its manifest: its profile, or, for a profile that several manifests name (two
    families may each have a `vidqa-2b`), `PROFILE.FAMILY`, or where the family does not tell them apart either,
    `PROFILE.` and the manifest's path (its folders joined by '-'), so that every row has a folder of its own."""
    counts = Counter(entry.profile for entry in entries)
    by_family = Counter((entry.profile, entry.family) for entry in entries)
    names = {}
    for entry in entries:
        if counts[entry.profile] == 1:
            names[entry.manifest] = entry.profile
        elif by_family[(entry.profile, entry.family)] == 1 and entry.family:
            names[entry.manifest] = f"{entry.profile}.{entry.family}"
        else:
            names[entry.manifest] = (
                f"{entry.profile}.{PurePosixPath(entry.manifest).with_suffix('').as_posix()}".replace("/", "-")
            )
    return names


def manifest_path_problem(entry: CheckpointEntry, checkout: Path, layout: str) -> str | None:
    """Why this row's names from its manifest cannot be used as paths, or None: the profile names the row's
    directory and bundle, the family the directory whose correctness test runs; none may leave its place."""
    if not safe_name(entry.profile):
        return (
            f"profile name {entry.profile!r} from {entry.manifest} is not a plain name (letters, digits, '.', "
            "'_', '-'); it could lead outside the output directory, so nothing was run"
        )
    if layout == "families" and not safe_name(entry.family):
        return (
            f"family {entry.family!r} from {entry.manifest} is not a plain name; its test path would leave "
            "families/, so nothing was run"
        )
    if entry.revision is not None and not plain_revision(entry.revision):
        return (
            f"revision {entry.revision!r} from {entry.manifest} is not a plain commit or tag name; it names "
            "cache paths, so nothing was run"
        )
    if entry.bundle is not None and not safe_name(entry.bundle):
        return (
            f"bundle {entry.bundle!r} from {entry.manifest} is not a plain file name; it would be written "
            "outside its engine directory, so nothing was run"
        )
    try:
        correctness_test(checkout, entry, layout)
    except ValueError as error:
        return f"{error}; nothing was run"
    return None


def correctness_problem(bundle: Path, digest: str, artifacts: Path, profile: str) -> tuple[str, str, list[str]] | None:
    """Why the family's run (exit 0) does not show that this exact bundle passed its checks: (reason, detail,
    evidence), or None. Checked, not assumed: some test passed and none failed (pytest exits 0 when all skip),
    the bundle the runner found is still ours byte for byte, it built no other bundle, and its own result for the
    profile, where it wrote one, says pass."""
    log = [CORRECTNESS_LOG]
    outcome = family_test_outcome(artifacts)
    if outcome is None:
        return "the family's tests left no JUnit report, so what ran is unknown", "no junit.xml", log
    if (failing := outcome.problem()) is not None:
        return (
            f"the family's tests did not pass on this bundle: {failing}",
            failing,
            [*log, f"{CORRECTNESS_DIR}/{JUNIT_FILE}"],
        )
    after = file_digest(bundle) if bundle.is_file() else "missing"
    digests = {
        p.name: file_digest(p)
        for p in [*bundles_built_by(bundle.parent), *bundles_built_by(artifacts)]
        if p != bundle and not p.name.startswith(".partial-")
    }
    others = {name: other for name, other in digests.items() if other != digest}  # copies of ours are ours
    if after != digest or others:
        theirs = ", ".join([after] * (after != digest) + [f"{name} {other}" for name, other in others.items()])
        return (
            "the family's command validated a bundle it built itself, not this one",
            f"ours {digest}; the family's {theirs}",
            log,
        )
    verdict = family_result(artifacts, profile)
    if verdict is not None and verdict.lower() not in ("pass", "passed"):
        return (
            f"the family's runner recorded status {verdict!r} for {profile}",
            f"{FAMILY_RESULT_FILE}: {verdict}",
            [*log, f"{CORRECTNESS_DIR}/{profile}/{FAMILY_RESULT_FILE}"],
        )
    return None
