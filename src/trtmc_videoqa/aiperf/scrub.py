"""Scrub AIPerf's exports in place before anything keeps them: credential headers, known secret values and the
embedded clips redacted, each file kept to at most `EVIDENCE_CAP` bytes.

A file is first read in pieces: one that holds nothing to redact and fits the cap is left as AIPerf wrote it. Any
other is rewritten through a temporary file beside it, line by line, cut only between whole lines (whole JSONL
records): from the first record that does not fit, every record is dropped, and a last line (`CUT_KEY`) says where
the cut is and how much was dropped.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..common.atomic_write import check_target, rewrite_atomic
from .exports import EVIDENCE_CAP, READ_PIECE, bounded_lines

CUT_KEY = "trtmc_videoqa_cut"
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"})
_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+);base64,([A-Za-z0-9+/=]+)")
_SCRUBBED = frozenset({".jsonl", ".json", ".txt", ".log", ".csv"})


def _redact_data_urls(text: str) -> str:
    """Replace an embedded clip by its digest: the clip is in the workload, and the raw export stays small."""

    def digest(match: re.Match[str]) -> str:
        return f"data:{match.group(1)};sha256={hashlib.sha256(match.group(2).encode()).hexdigest()}"

    return _DATA_URL.sub(digest, text)


def _scrub_headers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<redacted>" if str(k).lower() in _SECRET_HEADERS else _scrub_headers(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_headers(v) for v in value]
    return value


def scrub_exports(artifact_dir: Path, secrets: list[str], *, cap: int = EVIDENCE_CAP) -> None:
    """Redact credential headers, any known secret value and the embedded clips from AIPerf's files, in place, each
    kept to at most `cap` bytes."""
    for path in sorted(artifact_dir.rglob("*")):
        scrub_export_file(path, secrets, cap=cap)


def scrub_export_file(path: Path, secrets: list[str], *, cap: int = EVIDENCE_CAP) -> None:
    """`scrub_exports` for one file (a symbolic link, or a file of another kind, is left alone), streamed line by
    line through a temporary file beside it; the file is replaced only when a line changed or it was cut."""
    if path.is_symlink() or not path.is_file() or path.suffix not in _SCRUBBED:
        return
    check_target(path)
    if not _may_need_scrub(path, secrets, cap):
        return  # nothing in it is redacted and it fits: left as AIPerf wrote it, never rewritten
    with path.open("rb") as source:
        rewrite_atomic(path, lambda out: _scrub_stream(source, out, secrets, cap, jsonl=path.suffix == ".jsonl"))


@dataclass
class _Cut:
    """Where a file was cut: before line `at_line`, `kept` bytes kept, and what was dropped from there on."""

    at_line: int
    kept: int
    lines: int = 0
    size: int = 0


def _scrub_stream(source: BinaryIO, out: BinaryIO, secrets: list[str], cap: int, *, jsonl: bool) -> bool:
    """Each line scrubbed and written while the file stays within `cap`; from the first line that does not fit (or
    is longer than the cap), every line is dropped and counted. True when anything differs from the source."""
    kept, changed, needles = 0, False, _needles(secrets)
    cut: _Cut | None = None
    for number, (line, size) in enumerate(bounded_lines(source, cap), 1):
        if cut is None and line is not None:
            cleaned = _scrub_line(line, secrets, needles)
            if kept + len(cleaned) <= cap:
                out.write(cleaned)
                kept += len(cleaned)
                changed = changed or cleaned != line
                continue
        cut = cut or _Cut(at_line=number, kept=kept)
        cut.lines += 1
        cut.size += size
    if cut is not None:
        out.write(_cut_line(cut, cap, jsonl=jsonl))
    return changed or cut is not None


def _cut_line(cut: _Cut, cap: int, *, jsonl: bool) -> bytes:
    facts = {
        "cap_bytes": cap,
        "cut_before_line": cut.at_line,
        "kept_bytes": cut.kept,
        "dropped_lines": cut.lines,
        "dropped_bytes": cut.size,
        "why": f"trtmc-videoqa keeps at most {cap} bytes of an export file, cut only between whole lines",
    }
    text = json.dumps({CUT_KEY: facts}) if jsonl else f"# {CUT_KEY}: " + json.dumps(facts)
    return (("\n" if cut.kept and not jsonl else "") + text + "\n").encode("utf-8")


def _scrub_line(line: bytes, secrets: list[str], needles: list[bytes]) -> bytes:
    """One line with its embedded clips, credential headers and known secrets redacted; its bytes otherwise kept
    (undecodable bytes pass through as they are)."""
    # Most lines hold none of what is redacted (AIPerf's JSON is pretty-printed, a value a line): passed on as bytes.
    # A text match is always a bytes match of its UTF-8 (surrogateescape maps each undecodable byte to itself).
    if not any(needle in line for needle in needles):
        return line
    text = line.decode("utf-8", errors="surrogateescape")
    cleaned = _redact_data_urls(text)
    if "request_headers" in cleaned:
        ending = cleaned[len(cleaned.rstrip("\r\n")) :]
        cleaned = _scrub_json_line(cleaned.rstrip("\r\n")) + ending
    for secret in secrets:
        if secret:
            cleaned = cleaned.replace(secret, "<redacted>")
    return line if cleaned == text else cleaned.encode("utf-8", errors="surrogateescape")


def _needles(secrets: list[str]) -> list[bytes]:
    """What a line must hold (as bytes) to be redacted: an embedded clip, request headers, a secret."""
    return [b"data:", b"request_headers", *(s.encode("utf-8", errors="surrogateescape") for s in secrets if s)]


def _may_need_scrub(path: Path, secrets: list[str], cap: int) -> bool:
    """Whether the file holds anything a line is redacted for, or is over the cap (then it is cut), read in pieces
    (each with the end of the one before, so a needle across an edge is still seen) and never past the cap."""
    needles = _needles(secrets)
    overlap = max(len(needle) for needle in needles) - 1
    read, tail = 0, b""
    with path.open("rb") as handle:
        while piece := handle.read(READ_PIECE):
            read += len(piece)
            window = tail + piece
            if read > cap or any(needle in window for needle in needles):
                return True
            tail = window[-overlap:]
    return False


def _scrub_json_line(line: str) -> str:
    if "request_headers" not in line:
        return line
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return re.sub(r'("(?:[Aa]uthorization|[Xx]-[Aa]pi-[Kk]ey)"\s*:\s*)"[^"]*"', r'\1"<redacted>"', line)
    return json.dumps(_scrub_headers(data))
