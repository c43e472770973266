"""Variant kinds of a profile: rows that are listed but never counted as models."""

from __future__ import annotations

import re

from ..results import VariantKind
from .catalog import parallel_sizes
from .manifest import Manifest

QUANTIZED_PRECISIONS = frozenset({"fp8", "int8", "int4", "fp4", "nvfp4", "mxfp4", "w4a16", "w8a8", "w4a8"})
_QUANT_WORDS = QUANTIZED_PRECISIONS | {"awq", "gptq", "quantized"}


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[-_.]", name.lower()) if w]


def variant_kinds(manifest: Manifest) -> list[VariantKind]:
    name = manifest.profile
    words = _words(name)
    data = manifest.data
    kinds: list[VariantKind] = []
    tp, cp = parallel_sizes(manifest)
    if tp > 1 or re.search(r"(^|-)tp\d+($|-)", name):
        kinds.append("tp")
    if cp > 1 or re.search(r"(^|-)cp\d+($|-)", name):
        kinds.append("cp")
    precision = str(data.get("precision", "")).lower()
    if data.get("quantization") or precision in QUANTIZED_PRECISIONS or _QUANT_WORDS & set(words):
        kinds.append("quantized")
    # TRTMC names L0 (smoke) profiles "-l0"; a full checkpoint whose testcases run in the L0 tier stays a model.
    if "l0" in words:
        kinds.append("l0")
    # TRTMC marks regression-test profiles with "-regression-"; a regression *model* (a Task about regression) is
    # not one.
    if "-regression-" in name and "regression" not in manifest.task:
        kinds.append("regression")
    if "random" in words or "random" in _words(str(data.get("hf_id", ""))):
        kinds.append("random")
    if "partial" in words:
        kinds.append("partial")
    if "local" in words or not manifest.optional_string("hf_id"):
        kinds.append("local-only")
    return kinds
