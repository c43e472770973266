"""What the publish step may not change, whose words are not this machine's, and which paths are this machine's.

**Measured evidence** (`is_measured`): the request bodies (a row's `aiperf/inputs.jsonl` and `aiperf/plan.json`,
AIPerf's raw export, its per-record files, its records export and its `inputs.json`), the answers
(`requests.jsonl`), the workloads as they ran (`workload/<name>/files/`) and `execution.jsonl`. The publish step
never changes their content (issue 26): every `request_sha` re-computes from the published raw export and the
published workload loads and qualifies again. The one thing it maps there is a file reference the tool wrote itself
(`FILE_REFERENCE_KEYS` in the request plan and AIPerf's input file: where a clip was read, never part of a body
sent), which becomes the workload copy's relative path, as a reproduce command needs.

**Text from outside** (`is_outside_text`): the measured evidence, and what a server or a workload said in the other
files a row keeps (capability, identity, grading, output check, the workload's prepared facts). A user or host name
there is a word of a question or an answer ("asked as root", "runner"), never rewritten: the public check warns,
naming the file and line, where it fails on the same name in a path, in `user@host` or in a file the tool composes.

**This machine's paths** (`machine_paths`): any absolute path in a public text whose first two or more components
exist on this machine, outside the system locations every machine has (`SYSTEM_ROOTS`) and shared folders
(`SHARED_DIRS`): not only the run's own paths, so an inventory of a checkout in another folder is caught too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path, PurePosixPath

from ..common.errors import UserError
from ..common.safe_read import read_regular_file
from ..results.layout import (
    AIPERF_DIR,
    AIPERF_EXPORT_DIR,
    AIPERF_INPUTS_EXPORT,
    AIPERF_INPUTS_FILE,
    AIPERF_PLAN_FILE,
    AIPERF_RAW_EXPORT,
    AIPERF_RAW_RECORDS_DIR,
    AIPERF_RECORDS_EXPORT,
    AIPERF_RUN_LABEL,
    CAPABILITY_FILE,
    CHECKPOINTS_DIR,
    EXECUTION_FILE,
    GRADING_FILE,
    IDENTITY_FILE,
    OUTPUT_CHECK_FILE,
    REQUESTS_FILE,
    SERVED_MODEL_FILE,
    WORKLOAD_DIR,
    WORKLOAD_FILES_DIR,
)

OWN_VALUE_FILE_BYTES = 64 * 1024
MEASURED_NAMES = frozenset({REQUESTS_FILE, EXECUTION_FILE, SERVED_MODEL_FILE})
AIPERF_INPUTS = frozenset({AIPERF_INPUTS_FILE, AIPERF_PLAN_FILE})  # in a row's aiperf/ folder: the request bodies
AIPERF_EVIDENCE = frozenset({AIPERF_RAW_EXPORT, AIPERF_RECORDS_EXPORT, AIPERF_INPUTS_EXPORT})
# Files of a row that hold a server's text or the workload's words besides the measured evidence.
SERVER_TEXT = frozenset({CAPABILITY_FILE, IDENTITY_FILE, GRADING_FILE, OUTPUT_CHECK_FILE})
# Keys of the request plan and AIPerf's input file whose value is where a clip was read (not sent): mapped.
FILE_REFERENCE_KEYS = ("video", "clip_path")
_FILE_REFERENCE = re.compile(r'("(?:' + "|".join(FILE_REFERENCE_KEYS) + r')"\s*:\s*")((?:[^"\\]|\\.)*)(")')

# First components of the system locations every machine has: a path under them names no one (/usr/bin/ffmpeg).
SYSTEM_ROOTS = frozenset(
    {"usr", "etc", "dev", "proc", "sys", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "boot", "run", "snap"}
)
# Folders under those roots that users write in (memory scratch, the per-user runtime folders): what is below them is
# someone's, as below /tmp.
WRITABLE_SYSTEM_DIRS = frozenset({"/dev/shm", "/run/shm", "/run/user"})
# Shared folders that exist on most machines: named alone they say nothing; a path below them that exists does.
SHARED_DIRS = WRITABLE_SYSTEM_DIRS | frozenset(
    {"/var/tmp", "/var/lib", "/var/log", "/var/cache", "/var/run", "/var/spool", "/var/mail"}
)
MIN_COMPONENTS = 2  # "/tmp" or "/home" alone names no one; "/home/alice" does
# An absolute path as public text carries it: not after a character that continues a name (so the "/v1/models" of a
# URL, "and/or" or "video/mp4" are no candidates), components of name characters.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~+@%-])(?:/[\w.~+@%-]+){2,}")
# Where a token ends around a word: whitespace and the quotes and marks of JSON, Markdown and HTML.
_TOKEN_END = set(" \t\r\n\"'`<>|,")


def _parts(relative: str) -> tuple[str, ...]:
    return PurePosixPath(relative).parts


def is_measured(relative: str) -> bool:
    """Whether the public file at `relative` (POSIX, from the output folder) is measured evidence."""
    parts = _parts(relative)
    if not parts:
        return False
    if parts[0] == WORKLOAD_DIR:
        return len(parts) > 3 and parts[2] == WORKLOAD_FILES_DIR
    if parts[-1] in MEASURED_NAMES:
        return True
    if AIPERF_DIR not in parts[:-1]:
        return False
    rest = parts[parts.index(AIPERF_DIR) + 1 :]
    if len(rest) > 1 and AIPERF_RUN_LABEL.fullmatch(rest[0]):  # a further run's folder: the same names inside
        rest = rest[1:]
    if len(rest) == 1:
        return rest[0] in AIPERF_INPUTS
    return rest[0].startswith(AIPERF_EXPORT_DIR) and (rest[-1] in AIPERF_EVIDENCE or AIPERF_RAW_RECORDS_DIR in rest)


def is_file_reference_file(relative: str) -> bool:
    """AIPerf's input file or the request plan, whose clip references the publish step maps."""
    parts = _parts(relative)
    if len(parts) >= 3 and parts[-3] == AIPERF_DIR and AIPERF_RUN_LABEL.fullmatch(parts[-2]):
        return parts[-1] in AIPERF_INPUTS  # a further AIPerf run's (results/layout.py aiperf_run_dir)
    return len(parts) >= 2 and parts[-2] == AIPERF_DIR and parts[-1] in AIPERF_INPUTS


def is_outside_text(relative: str) -> bool:
    """Whether the file holds text from outside: a workload's or a server's words (the measured evidence too)."""
    parts = _parts(relative)
    return bool(parts) and (parts[0] == WORKLOAD_DIR or parts[-1] in SERVER_TEXT or is_measured(relative))


def map_file_references(text: str, rewrite: Callable[[str], str]) -> str:
    """`text` with only the values of its clip references (`"video": "..."`, `"clip_path": "..."`) rewritten."""
    return _FILE_REFERENCE.sub(lambda m: m.group(1) + rewrite(m.group(2)) + m.group(3), text)


def token_around(text: str, start: int, end: int) -> str:
    """The run of text around [start, end) up to whitespace or a quote or mark: `root@host`, `/home/root/x`,
    `root)` of "(asked as root)"."""
    while start > 0 and text[start - 1] not in _TOKEN_END:
        start -= 1
    while end < len(text) and text[end] not in _TOKEN_END:
        end += 1
    return text[start:end]


@lru_cache(maxsize=65536)
def _exists(path: str) -> bool:
    return os.path.lexists(path)


def machine_prefix(path: str) -> str | None:
    """The shortest prefix of `path` with at least two components that exists here and is no system location or
    shared folder; None when there is none."""
    parts = path.split("/")[1:]
    if not parts or (parts[0] in SYSTEM_ROOTS and "/" + "/".join(parts[:2]) not in WRITABLE_SYSTEM_DIRS):
        return None
    for count in range(MIN_COMPONENTS, len(parts) + 1):
        prefix = "/" + "/".join(parts[:count])
        if not _exists(prefix):
            return None  # nothing below a missing folder exists either
        if prefix not in SHARED_DIRS:
            return prefix
    return None


def machine_paths(text: str) -> Iterator[tuple[int, int]]:
    """The spans of absolute paths in `text` that name a place on this machine (`machine_prefix`)."""
    for found in _ABSOLUTE_PATH.finditer(text):
        if machine_prefix(found.group(0)) is not None:
            yield found.span()


def forget_machine_paths() -> None:
    """Forget what exists (a test that makes or removes folders between two checks)."""
    _exists.cache_clear()


def users_own_values(root: Path) -> list[str]:
    """The values the user gave that a public file may hold as they are: each endpoint row's --model where it is a
    local folder's absolute path (`transformers serve` names a local model by its path, and the request bodies,
    measured evidence, carry it), as its row recorded it (SERVED_MODEL_FILE)."""
    import json

    values: list[str] = []
    for path in sorted((root / CHECKPOINTS_DIR).glob(f"*/{SERVED_MODEL_FILE}")):
        try:
            model = json.loads(read_regular_file(path, OWN_VALUE_FILE_BYTES)).get("model")
        except (ValueError, AttributeError, UserError):
            continue  # not ours: nothing forgiven
        if isinstance(model, str) and _ABSOLUTE_PATH.fullmatch(model):
            values.append(model)
    return values
