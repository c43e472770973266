"""What the checkout's trtmc-server accepts as chat content parts, read from its request schemas."""

from __future__ import annotations

import re
from pathlib import Path

from ..results import Evidence, ServingFacts
from .bounded_source import Unreadable, read_text

SERVER_SCHEMAS = "apps/server/python/trtmc_server/schemas.py"
MAX_SCHEMAS_BYTES = 4 * 1024 * 1024  # TRTMC's is tens of kB
# `type: Literal[` alone: what it lists is read up to the next `]` with str.find, once per line, never by a pattern
# that could try each start against the rest of the line.
_TYPE_LITERAL = re.compile(r"""\btype\s*+:\s*+Literal\[""")
_STRING = re.compile(r"""["']([A-Za-z0-9_]+)["']""")
VIDEO_PART_TYPES = frozenset({"video_url", "input_video", "video"})


def read_serving_facts(root: Path) -> tuple[ServingFacts, str | None]:
    """The content-part types of chat messages, and what is lacking when the source is absent."""
    path = root / SERVER_SCHEMAS
    if not path.is_file():
        return ServingFacts(), f"{SERVER_SCHEMAS} is absent: what trtmc-server accepts as chat content is unknown"
    try:
        text = read_text(root, SERVER_SCHEMAS, MAX_SCHEMAS_BYTES, "what trtmc-server accepts is unknown", exact=False)
    except Unreadable as refused:
        return (
            ServingFacts(),
            f"{SERVER_SCHEMAS} could not be read ({refused.why}): what trtmc-server accepts is unknown",
        )
    lines = text.splitlines()
    types: list[str] = []
    seen: set[str] = set()
    evidence: list[Evidence] = []
    in_content_part = False
    for number, line in enumerate(lines, start=1):
        if line.startswith("class "):
            in_content_part = "ContentPart" in line or "Content(" in line
        listed = _literal_types(line) if in_content_part else None
        if listed is not None:
            found = _STRING.findall(listed)
            types.extend(t for t in dict.fromkeys(found) if t not in seen)
            seen.update(found)
            evidence.append(
                Evidence(
                    file=SERVER_SCHEMAS,
                    line=number,
                    excerpt=line.strip()[:160],
                    shows=f"a chat content part of type {', '.join(found)}",
                )
            )
    accepts = bool(VIDEO_PART_TYPES & set(types)) if types else None
    return ServingFacts(source=SERVER_SCHEMAS, chat_content_types=types, accepts_video=accepts, evidence=evidence), None


def _literal_types(line: str) -> str | None:
    """What the first `type: Literal[...]` of a line lists (not empty), else None; linear in the line."""
    for match in _TYPE_LITERAL.finditer(line):
        closing = line.find("]", match.end())
        if closing < 0:
            return None  # no `]` after this one, so none after any later one either
        if closing > match.end():
            return line[match.end() : closing]
    return None
