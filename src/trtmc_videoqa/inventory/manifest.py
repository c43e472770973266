"""Read one manifest of either layout into plain facts, keeping its text so every fact can cite its line."""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..results import Evidence, Layout
from .bounded_source import MAX_JSON_DEPTH, json_deeper_than

# catalog.py's required fields (newer layout); the older layout names the Task in `task_strategy`.
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "families": ("name", "bundle", "family", "task", "precision", "testcases"),
    "e2e-models": ("name", "family", "task_strategy", "testcases"),
}
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
_EXCERPT_CHARS = 160


class ManifestError(Exception):
    """An unreadable or malformed manifest; the row becomes `invalid` with this message."""


_STRING_LITERAL = re.compile(r'"(?:[^"\\\n]++|\\.)*+"')  # as written, escapes kept
_COLON = re.compile(r"\s*+:\s*+")


@dataclass(frozen=True)
class ManifestText:
    """The manifest's lines, for citing evidence by line number. Each line's first key is indexed once, so a look-up
    costs the same in a manifest of 30,000 testcases as in one (a scan per look-up took tens of minutes there)."""

    rel: str
    lines: tuple[str, ...]
    _keys: dict[str, list[int]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _values: dict[tuple[str, str], list[int]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """A key is on a line where the first time its quoted name appears there, a colon follows."""
        for index, line in enumerate(self.lines):
            seen: set[str] = set()
            for literal in _STRING_LITERAL.finditer(line):
                quoted = literal.group()
                colon = _COLON.match(line, literal.end()) if quoted not in seen else None
                seen.add(quoted)
                if colon is not None:
                    value = _STRING_LITERAL.match(line, colon.end())
                    self._keys.setdefault(quoted[1:-1], []).append(index)
                    self._values.setdefault((quoted[1:-1], value.group() if value else ""), []).append(index)

    def find(self, key: str, start: int = 0, value: str | None = None) -> int | None:
        """0-based index of the first line at or after `start` holding `"key":` (its value the JSON string `value`,
        quotes included, if given)."""
        found = self._keys.get(key, []) if value is None else self._values.get((key, value), [])
        at = bisect.bisect_left(found, start)
        return found[at] if at < len(found) else None

    def evidence(self, key: str, shows: str, start: int = 0, value: str | None = None) -> Evidence:
        index = self.find(key, start, value)
        if index is None:
            return Evidence(file=self.rel, line=None, excerpt=f'"{key}" (no line of its own)', shows=shows)
        return Evidence(file=self.rel, line=index + 1, excerpt=self.lines[index].strip()[:_EXCERPT_CHARS], shows=shows)

    def testcase_start(self, name: str) -> int:
        """Where a testcase's object begins (its `"name": "<name>"` line), so its keys are found after it."""
        index = self.find("name", 0, f'"{name}"')
        # the profile and its first testcase often share a name: prefer the occurrence after "testcases".
        cases = self.find("testcases")
        if cases is not None:
            later = self.find("name", cases, f'"{name}"')
            if later is not None:
                return later
        return index or 0


@dataclass(frozen=True)
class Manifest:
    layout: Layout
    family_dir: str
    rel: str
    data: Mapping[str, Any]
    text: ManifestText

    @property
    def profile(self) -> str:
        return str(self.data["name"])

    @property
    def task(self) -> str:
        key = "task" if self.layout == "families" else "task_strategy"
        return str(self.data[key])

    @property
    def testcases(self) -> list[Mapping[str, Any]]:
        return list(self.data["testcases"])

    def optional_string(self, key: str) -> str | None:
        value = self.data.get(key)
        return value if isinstance(value, str) and value else None


def read_manifest(path: Path, rel: str, layout: Layout, family_dir: str) -> Manifest:
    """Parse and check the fields the audit relies on; anything else wrong raises ManifestError."""
    try:
        size = path.stat().st_size
        if size > MAX_MANIFEST_BYTES:
            raise ManifestError(f"manifest is {size} bytes, over the {MAX_MANIFEST_BYTES} byte limit for a manifest")
        raw_text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise ManifestError(f"manifest is not UTF-8 text: {error}") from None
    except OSError as error:
        raise ManifestError(f"cannot read manifest: {error.strerror or error}") from None
    try:
        data = json.loads(raw_text)
    except json.JSONDecodeError as error:
        raise ManifestError(f"malformed JSON at line {error.lineno} column {error.colno}: {error.msg}") from None
    except RecursionError:  # Python's JSON reader gives up on deep nesting this way
        raise ManifestError(f"manifest nests more than {MAX_JSON_DEPTH} levels deep") from None
    if json_deeper_than(data, MAX_JSON_DEPTH):  # no row could be written from it (nor walked)
        raise ManifestError(f"manifest nests more than {MAX_JSON_DEPTH} levels deep")
    if not isinstance(data, dict):
        raise ManifestError(f"manifest must be a JSON object, not {type(data).__name__}")
    missing = sorted(key for key in REQUIRED_FIELDS[layout] if key not in data)
    if missing:
        raise ManifestError(f"manifest is missing: {', '.join(missing)}")
    for key in REQUIRED_FIELDS[layout]:
        if key != "testcases" and (not isinstance(data[key], str) or not data[key]):
            raise ManifestError(f"{key} must be a non-empty string")
    testcases = data["testcases"]
    if not isinstance(testcases, list) or not testcases or not all(isinstance(case, dict) for case in testcases):
        raise ManifestError("testcases must be a non-empty list of objects")
    return Manifest(layout, family_dir, rel, data, ManifestText(rel, tuple(raw_text.splitlines())))


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def profile_from_path(path: Path) -> str:
    """The row name of a manifest that could not be read: its file stem, as TRTMC's catalog does."""
    return _SAFE_NAME.sub("-", path.stem) or "unnamed"
