"""The identity check's verdict as the row's `identity` stage, and identity.json: all a row needs of identity when
no native route is asked (the clients and the native request's reader, compare.py, are not loaded for that)."""

from __future__ import annotations

from pathlib import Path

from ...common.atomic_write import write_model_atomic
from ...results import IdentityCheck, StageResult
from ...results.layout import IDENTITY_FILE

_SHOWN = 120  # characters of a differing answer shown in the stage's detail


def not_applicable(reason: str) -> IdentityCheck:
    return IdentityCheck(verdict="not-applicable", reason=reason)


def blocked(reason: str) -> IdentityCheck:
    return IdentityCheck(verdict="blocked", reason=reason)


def _short(text: str | None) -> str:
    if text is None:
        return "(none)"
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "...")


def identity_stage(check: IdentityCheck) -> StageResult:
    """held passes; differs and failed fail (showing the first differing pair's answers); blocked blocks;
    not-applicable is skipped, and says so."""
    evidence = [IDENTITY_FILE]
    if check.verdict == "held":
        return StageResult(name="identity", status="passed", detail=check.reason, evidence=evidence)
    if check.verdict == "blocked":
        return StageResult(name="identity", status="blocked", detail=check.reason, evidence=evidence)
    if check.verdict == "not-applicable":
        detail = f"not-applicable: {check.reason}"
        return StageResult(name="identity", status="skipped", detail=detail, evidence=evidence)
    detail = f"{check.verdict}: {check.reason}"
    first = next((pair for pair in check.pairs if pair.verdict == "different"), None)
    if first is not None:
        detail += (
            f"; first difference, {first.question_id} on {first.clip_id}: chat {_short(first.chat.answer)}, "
            f"native {_short(first.native.answer)}"
        )
    return StageResult(name="identity", status="failed", detail=detail, evidence=evidence)


def write_identity(row_dir: Path, check: IdentityCheck) -> Path:
    return write_model_atomic(row_dir / IDENTITY_FILE, check)
