"""The audit of a TRTMC checkout: one row per manifest, with verdict and evidence.

The audit's names load on first use (PEP 562), so a stage that reads one module of the room (the Task requests, a
Task contract) does not load the whole audit."""

from typing import TYPE_CHECKING

from ..common.lazy import lazy_getattr

if TYPE_CHECKING:
    from .audit import run_inventory, skipped_manifests, summarize
    from .manifest import ManifestError
    from .tree import NotACheckout

_LAZY = {
    "run_inventory": "audit",
    "skipped_manifests": "audit",
    "summarize": "audit",
    "ManifestError": "manifest",
    "NotACheckout": "tree",
}

__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = ["ManifestError", "NotACheckout", "run_inventory", "skipped_manifests", "summarize"]
