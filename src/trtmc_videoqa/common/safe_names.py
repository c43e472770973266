"""Names from a manifest or an endpoint that become paths: which are safe as one path component, and the row
directory a name gets."""

from __future__ import annotations

import hashlib
import re

# A profile names a directory (checkpoints/<profile>/) and a bundle file: one plain path component, nothing else.
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
_PLAIN_REVISION = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,99}")  # a commit or tag: it names cache paths


def safe_name(name: str) -> bool:
    """True for a name that is one path component and cannot lead anywhere else ('..', '/', a leading dot)."""
    return bool(_SAFE_NAME.match(name))


def plain_revision(revision: str) -> bool:
    """True for a commit or tag name that may name cache paths."""
    return bool(_PLAIN_REVISION.fullmatch(revision))


def row_dir_name(profile: str) -> str:
    """The row's directory: the profile itself, or, for a name that could leave checkpoints/ (from a manifest or
    an endpoint's model name), a fixed name made from its digest; the row keeps the name as given."""
    if safe_name(profile):
        return profile
    return "unsafe-name-" + hashlib.sha256(profile.encode("utf-8", "surrogatepass")).hexdigest()[:16]
