"""What the checkout's trtmc-server accepts as chat content parts, read from its request schemas."""

from __future__ import annotations

import re
from pathlib import Path

from ..results import Evidence, ServingFacts

SERVER_SCHEMAS = "apps/server/python/trtmc_server/schemas.py"
_TYPE_LITERAL = re.compile(r"""\btype\s*:\s*Literal\[([^\]]+)\]""")
_STRING = re.compile(r"""["']([A-Za-z0-9_]+)["']""")
VIDEO_PART_TYPES = frozenset({"video_url", "input_video", "video"})


def read_serving_facts(root: Path) -> tuple[ServingFacts, str | None]:
    """The content-part types of chat messages, and what is lacking when the source is absent."""
    path = root / SERVER_SCHEMAS
    if not path.is_file():
        return ServingFacts(), f"{SERVER_SCHEMAS} is absent: what trtmc-server accepts as chat content is unknown"
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    types: list[str] = []
    evidence: list[Evidence] = []
    in_content_part = False
    for number, line in enumerate(lines, start=1):
        if line.startswith("class "):
            in_content_part = "ContentPart" in line or "Content(" in line
        match = _TYPE_LITERAL.search(line)
        if match and in_content_part:
            found = _STRING.findall(match.group(1))
            types.extend(t for t in found if t not in types)
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
