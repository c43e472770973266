"""The audit of a TRTMC checkout: one row per manifest, with verdict and evidence."""

from .audit import run_inventory, skipped_manifests, summarize
from .manifest import ManifestError
from .tree import NotACheckout

__all__ = ["ManifestError", "NotACheckout", "run_inventory", "skipped_manifests", "summarize"]
