"""The public-artifact gate: nothing published from an output directory names the machine it ran on.

Everything under an output directory is public except each row's ``private/`` folder (raw logs). Public files must
not carry an absolute path of this machine (the run's own: the output directory, the venv, the TRTMC checkout,
$HOME, the temp dir; and any other path that exists here outside the system locations, publish/evidence.py), the
user or host name where it is machine-derived (in a path, in `user@host`, in a file the tool composes), or a secret
value. The user or host name as a word of workload or server text ("asked as root", an answer that says "runner")
is a warning naming file and line, never a failure: that text is measured evidence, never rewritten (issue 26).
`run_sentinels` gathers this run's values, `scan_tree` reads the public text files once, `check_public` refuses the
directory when anything fails and says the warnings.
"""

from __future__ import annotations

import os
import re
import stat
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from ..common.errors import CheckNotHeld
from ..common.scrub import REDACTED
from ..results.layout import PRIVATE_DIR
from .boundaries import (
    PATH_AFTER,
    PATH_BEFORE,
    SHORT_WORD_AFTER,
    SHORT_WORD_BEFORE,
    WORD_AFTER,
    WORD_BEFORE,
    alternation,
)
from .decoded import decoded_forms, file_kind
from .evidence import is_outside_text, machine_paths, token_around, users_own_values
from .machine_names import machine_words, run_dirs, short_machine_words, unique

HitKind = Literal["path", "user-or-host", "secret"]


# Read in pieces of at most this many bytes: memory stays bounded whatever a file's size (a one-line JSON export of
# many MB), yet the whole file is scanned: a cap that stopped reading would let a leak past the cap through.
PIECE_BYTES = 64 * 1024 * 1024
# A file up to this size is read whole: the sentinels it holds are found once, and each line is tested for those
# alone before it is read closely (`_nothing_to_read`); a larger one is read in pieces, every line closely.
WHOLE_BYTES = 16 * 1024 * 1024
SNIFF_BYTES = 8 * 1024  # a NUL byte in the first 8 KiB: binary (git's own test), not scanned
# Suffixes of the binary files an output directory holds (clips, frames, arrays, weights): skipped unread.
BINARY_SUFFIXES = frozenset(
    {".mp4", ".webm", ".mkv", ".mov", ".avi", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".npz", ".npy"}
    | {".bin", ".safetensors", ".pt", ".pth", ".onnx", ".gz", ".zip", ".zst", ".tar"}
)
MAX_LISTED = 50  # file:line places the error message names; the rest are counted
EXCERPT_CONTEXT = 60  # characters of the line either side of a hit in its excerpt

# Shared system directories every machine has: as a sentinel (sys.prefix of a system Python is /usr) they would
# flag harmless text (/usr/bin/ffmpeg) and name no one. Shorter than 4 characters is too generic as well; /tmp and
# /root are kept: the run's scratch files and root's home are this run's own (and `root` is a word sentinel too).
GENERIC_PATHS = frozenset({"/usr", "/usr/local", "/opt", "/bin", "/etc", "/var", "/home", "/srv", "/mnt", "/lib"})
MIN_PATH_CHARS = 4


class PublicSentinels(BaseModel):
    """The values no public file may contain: absolute paths, whole-token words, plain-substring secrets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    paths: list[str]
    words: list[str]
    secrets: list[str]
    short_words: list[str] = []  # under MIN_WORD_CHARS: checked only where machine-derived
    own: list[str] = []  # the user's own values, never a hit (evidence.users_own_values)

    @field_validator("paths")
    @classmethod
    def _clean_paths(cls, paths: list[str]) -> list[str]:
        # "/tmp/" would need a name character after the slash to hit (the lookahead): compare without it.
        return unique(path.rstrip("/") for path in paths)

    @field_validator("words", "secrets", "short_words")
    @classmethod
    def _clean_values(cls, values: list[str]) -> list[str]:
        return unique(values)  # an empty value would match everywhere


class Hit(BaseModel):
    """One line of a public file that names the machine; the excerpt never shows a secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str  # relative to the scanned directory, POSIX
    line: int  # 1-based
    kind: HitKind
    excerpt: str


class PublicCheckFailed(CheckNotHeld):
    """A public file of the output directory names this machine: a check not held (exit 3), not bad input."""

    def __init__(self, root: Path, hits: list[Hit]) -> None:
        self.hits = hits
        super().__init__(failure_message(root, hits))


# --- the run's sentinels ----------------------------------------------------------------------------------------


def path_forms(path: Path | str) -> list[str]:
    """The absolute form as given and the resolved one (links followed): text may carry either."""
    given = Path(os.path.abspath(path))
    try:
        resolved = given.resolve()
    except (OSError, RuntimeError):  # a link loop: the given form is all we have
        resolved = given
    return [str(given), str(resolved)]


def keep_path(path: str) -> bool:
    return path.startswith("/") and len(path) >= MIN_PATH_CHARS and path not in GENERIC_PATHS


def run_sentinels(out: Path, *, extra_paths: Sequence[Path | str] = (), secrets: Sequence[str] = ()) -> PublicSentinels:
    """This run's own values: the output directory, the venv, $HOME, the temp dir, the working directory and the
    paths given (a TRTMC checkout) in both forms; the user and host names; the secrets given."""
    candidates = [out, *run_dirs().values(), *extra_paths]
    paths = [form for path in candidates for form in path_forms(path)]
    return PublicSentinels(
        paths=[path for path in unique(paths) if keep_path(path)],
        words=machine_words(),
        secrets=list(secrets),
        short_words=short_machine_words(),
    )


# --- matching one piece of text ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Matchers:
    """The sentinels compiled once per scan: one pattern per kind that has values; the words apart, since where a
    word stands decides whether it fails the check or is a warning."""

    patterns: tuple[tuple[HitKind, re.Pattern[str], tuple[str, ...]], ...]  # paths and secrets, each its values
    words: re.Pattern[str] | None
    secrets: tuple[str, ...]  # longest first, for redaction
    overlap: int  # bytes carried across a piece's edge: the longest sentinel, and room for the lookarounds
    own: tuple[str, ...] = ()  # longest first: read past where they stand
    word_values: tuple[str, ...] = ()  # every user and host name, short ones included

    @classmethod
    def of(cls, sentinels: PublicSentinels) -> _Matchers:
        sources: list[tuple[HitKind, list[str], str, str]] = [
            ("path", sentinels.paths, PATH_BEFORE, PATH_AFTER),
            ("secret", sentinels.secrets, "", ""),
        ]
        patterns = tuple(
            (kind, re.compile(f"(?:{alternation(values, before)}){after}"), tuple(values))
            for kind, values, before, after in sources
            if values
        )
        alternatives = []
        if sentinels.words:
            alternatives.append(f"(?:{alternation(sentinels.words, WORD_BEFORE)}){WORD_AFTER}")
        if sentinels.short_words:
            after_mark = alternation(sentinels.short_words, SHORT_WORD_BEFORE)
            before_at = alternation(sentinels.short_words, WORD_BEFORE)
            alternatives += [f"(?:{after_mark}){SHORT_WORD_AFTER}", f"(?:{before_at})(?=@)"]
        words = re.compile("|".join(alternatives)) if alternatives else None
        every = [*sentinels.paths, *sentinels.words, *sentinels.secrets, *sentinels.short_words]
        longest = max((len(value.encode()) for value in every), default=0)
        secrets = tuple(sorted(sentinels.secrets, key=len, reverse=True))
        own = tuple(sorted(sentinels.own, key=len, reverse=True))
        overlap = max(longest, *(len(v.encode()) for v in own), 0) + 16
        return cls(patterns, words, secrets, overlap, own, (*sentinels.words, *sentinels.short_words))

    def present_in(self, text: str) -> tuple[str, ...]:
        """The sentinels and user or host names that `text` holds as a substring (most often none)."""
        values = (*(value for _, _, values in self.patterns for value in values), *self.word_values)
        return tuple(value for value in values if value in text)

    def forgive(self, text: str) -> str:
        """The text with the user's own values (a local model folder's path given as --model) read past."""
        for value in self.own:
            text = text.replace(value, "<--model>")
        return text

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def find(self, text: str) -> Iterator[tuple[HitKind, str]]:
        """Each kind that hits this text, with an excerpt around its first hit (secrets redacted): a sentinel path,
        else any path that exists on this machine (publish/evidence.py), and a secret."""
        redacted: str | None = None
        kinds: list[HitKind] = []
        for kind, pattern, values in self.patterns:
            # Each alternative of a pattern is one value between lookarounds: a text that holds none of the values
            # as a plain substring cannot match, and `in` is far cheaper than a search tried at every position.
            if not _holds_any(text, values):
                continue
            found = pattern.search(text)
            if found is None:
                continue
            redacted = self.redact(text) if redacted is None else redacted
            kinds.append(kind)
            yield kind, _excerpt(redacted, _span(kind, pattern, redacted, found.span()))
        if "path" not in kinds and text.count("/") >= 2:  # a path of this machine has two components at least
            redacted = self.redact(text) if redacted is None else redacted
            span = next(machine_paths(redacted), None)
            if span is not None:
                yield "path", _excerpt(redacted, span)

    def find_words(self, text: str) -> tuple[str, list[str]] | None:
        """(excerpt around the first, the token each user or host name stands in) for this text; None: none."""
        if self.words is None or not _holds_any(text, self.word_values):
            return None
        found = list(self.words.finditer(text))
        if not found:
            return None
        tokens = [token_around(text, *hit.span()) for hit in found]
        redacted = self.redact(text)
        again = self.words.search(redacted)
        return _excerpt(redacted, again.span() if again else found[0].span()), tokens


def _holds_any(text: str, values: tuple[str, ...]) -> bool:
    return any(value in text for value in values)


_ESCAPES = re.compile(r"[\\%&]")  # a JSON or Markdown backslash, a URL escape, an HTML entity: a decoded form differs


def _nothing_to_read(line: str, present: tuple[str, ...]) -> bool:
    """A line that cannot hit, read with plain substring tests: no sentinel or name of those its file holds (`present`),
    fewer than two slashes (a path of this machine has two components at least), and no escape that a decoded form
    would undo (a JSON `\\`, a `%XX`). Forgiving the user's own values and redacting secrets add no slash."""
    return line.count("/") < 2 and not _ESCAPES.search(line) and not _holds_any(line, present)


def _span(kind: HitKind, pattern: re.Pattern[str], redacted: str, fallback: tuple[int, int]) -> tuple[int, int]:
    """Where the hit stands in the redacted text (redaction shifts offsets)."""
    if kind == "secret":
        at = max(redacted.find(REDACTED), 0)
        return at, at + len(REDACTED)
    again = pattern.search(redacted)
    return again.span() if again else fallback  # a path that held a secret: near enough


def _excerpt(text: str, span: tuple[int, int]) -> str:
    start, end = max(span[0] - EXCERPT_CONTEXT, 0), span[1] + EXCERPT_CONTEXT
    body = text[start:end].strip()
    return ("…" if start > 0 else "") + body + ("…" if end < len(text.rstrip()) else "")


# --- walking the tree -------------------------------------------------------------------------------------------


def _raise(error: OSError) -> None:
    raise error  # a directory we cannot list is one we cannot vouch for: a tool error, not a silent pass


def public_files(root: Path) -> Iterator[Path]:
    """Regular files under root, outside any private/ folder, never through a link."""
    for dirpath, dirnames, filenames in os.walk(root, onerror=_raise, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d != PRIVATE_DIR and not (here / d).is_symlink())
        for name in sorted(filenames):
            path = here / name
            # lstat: a link is skipped, not followed; a FIFO or socket is skipped too (opening a FIFO blocks).
            if stat.S_ISREG(path.lstat().st_mode):
                yield path


def _lines(handle: BinaryIO, overlap: int) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) in pieces of at most PIECE_BYTES; a longer line comes in several pieces with the
    same number, each after the last `overlap` bytes of the one before, so a sentinel cut by an edge is still seen
    whole. An edge reads as a line's start or end to the patterns: an extra hit at worst, never a missed one."""
    number, carry = 1, b""
    while piece := handle.readline(PIECE_BYTES):
        yield number, (carry + piece).decode("utf-8", errors="replace")
        if piece.endswith(b"\n"):
            number, carry = number + 1, b""
        else:
            carry = piece[-overlap:]


def _is_binary(path: Path, handle: BinaryIO) -> bool:
    if path.suffix.lower() in BINARY_SUFFIXES:
        return True
    binary = b"\0" in handle.read(SNIFF_BYTES)
    handle.seek(0)
    return binary


@dataclass(frozen=True)
class _WordLine:
    """A line that names a user or host name: a failure or a warning once the whole tree has been read."""

    hit: Hit
    tokens: tuple[str, ...]
    outside: bool  # the file holds text from outside (a workload's or a server's words)


def _scan_file(path: Path, name: str, matchers: _Matchers) -> tuple[list[Hit], list[_WordLine]] | None:
    """The hits of one file, one per line and kind, and its lines with a user or host name; None when it is binary
    (not scanned)."""
    with path.open("rb") as handle:
        if _is_binary(path, handle):
            return None
        hits: dict[tuple[int, HitKind], Hit] = {}
        words: dict[int, _WordLine] = {}
        outside = is_outside_text(name)
        reading = file_kind(name)
        lines: Iterable[tuple[int, str]]
        present: tuple[str, ...] | None = None  # None: every line is read closely
        if os.fstat(handle.fileno()).st_size <= WHOLE_BYTES:
            whole = handle.read().decode("utf-8", errors="replace")
            lines, present = enumerate(whole.split("\n"), 1), matchers.present_in(whole)
        else:
            lines = _lines(handle, matchers.overlap)
        for number, raw in lines:
            if present is not None and _nothing_to_read(raw, present):
                continue
            text = matchers.forgive(raw)
            for variant in (text, *map(matchers.forgive, decoded_forms(text, kind=reading))):
                for kind, excerpt in matchers.find(variant):
                    hits.setdefault((number, kind), Hit(file=name, line=number, kind=kind, excerpt=excerpt))
            named = matchers.find_words(text)
            if named is not None and number not in words:
                hit = Hit(file=name, line=number, kind="user-or-host", excerpt=named[0])
                words[number] = _WordLine(hit, tuple(named[1]), outside)
        return list(hits.values()), list(words.values())


@dataclass(frozen=True)
class PublicScan:
    """What a scan found: the hits that fail the check, the warnings, and how many text files it read."""

    hits: list[Hit]
    warnings: list[Hit]
    scanned: int


def _quoted_from_outside(line: _WordLine, outside_tokens: set[str]) -> bool:
    """A line of a file the tool composes whose every name stands in a token that text from outside also holds
    (a question quoted in a report): the outside text's word, not this machine's."""
    return all(any(token in other for other in outside_tokens) for token in line.tokens)


def _judge_words(lines: list[_WordLine]) -> tuple[list[Hit], list[Hit]]:
    """(failures, warnings): a name in text from outside is a warning; elsewhere it fails unless it stands in a
    token that text from outside holds too (a path, user@host or a bare name the tool wrote itself fails)."""
    outside_tokens = {token for line in lines if line.outside for token in line.tokens}
    failing: list[Hit] = []
    warned: list[Hit] = []
    for line in lines:
        quoted = line.outside or _quoted_from_outside(line, outside_tokens)
        (warned if quoted else failing).append(line.hit)
    return failing, warned


def scan_tree(root: Path, sentinels: PublicSentinels) -> PublicScan:
    """Every public text file under root read once: hits (sorted by file and line) and warnings. The user's own
    values its rows record are never hits."""
    matchers = _Matchers.of(sentinels.model_copy(update={"own": [*sentinels.own, *users_own_values(root)]}))
    hits: list[Hit] = []
    words: list[_WordLine] = []
    scanned = 0
    for path in public_files(root):
        found = _scan_file(path, path.relative_to(root).as_posix(), matchers)
        if found is not None:
            scanned += 1
            hits.extend(found[0])
            words.extend(found[1])
    failing, warned = _judge_words(words)
    ordered = sorted([*hits, *failing], key=lambda hit: (hit.file, hit.line))
    return PublicScan(ordered, sorted(warned, key=lambda hit: (hit.file, hit.line)), scanned)


def scan_public(root: Path, sentinels: PublicSentinels) -> list[Hit]:
    """Every line of a public text file under root that fails the check, sorted by (file, line)."""
    return scan_tree(root, sentinels).hits


def format_hits(hits: Sequence[Hit]) -> str:
    """One line per hit: ``file:line: <kind> <excerpt>``."""
    return "\n".join(f"{hit.file}:{hit.line}: {hit.kind} {hit.excerpt}" for hit in hits)


def failure_message(root: Path, hits: Sequence[Hit]) -> str:
    """One line (the command line says a CheckNotHeld in one): the count, the directory, the places, the fix."""
    places = ", ".join(f"{hit.file}:{hit.line}" for hit in hits[:MAX_LISTED])
    more = f" and {len(hits) - MAX_LISTED} more" if len(hits) > MAX_LISTED else ""
    return (
        f"{len(hits)} hit{'' if len(hits) == 1 else 's'} in the public files of {root}: {places}{more}; "
        "an artifact names this machine (an absolute path of this machine, the user or host name in a path, "
        "user@host or a file the tool wrote, or a secret): write such values relative to the output directory or "
        "leave them out, and keep raw logs in the row's private/ folder, which is not published (see private/ for "
        "raw logs)"
    )


def warning_message(root: Path, warned: Sequence[Hit]) -> str:
    """One line naming every file and line where the user or host name is a word of workload or server text."""
    places = ", ".join(f"{hit.file}:{hit.line}" for hit in warned[:MAX_LISTED])
    more = f" and {len(warned) - MAX_LISTED} more" if len(warned) > MAX_LISTED else ""
    return (
        f"public check of {root}: this machine's user or host name appears as a word of workload or server text "
        f"(a question, an answer) at {places}{more}; left as it is (measured evidence is never rewritten): read "
        "those lines before you publish"
    )


class PublicTextWarning(UserWarning):
    """The user or host name as a word of workload or server text: named, never a failure."""


def _warn(message: str) -> None:
    warnings.warn(message, PublicTextWarning, stacklevel=3)


def check_public(root: Path, sentinels: PublicSentinels, *, warn: Callable[[str], None] | None = None) -> int:
    """The number of public text files scanned under root; PublicCheckFailed when any names this machine. The user
    or host name as a word of workload or server text is said through `warn` (a PublicTextWarning by default)."""
    scan = scan_tree(root, sentinels)
    if scan.hits:
        raise PublicCheckFailed(root, scan.hits)
    if scan.warnings:
        (warn or _warn)(warning_message(root, scan.warnings))
    return scan.scanned
