"""The checkout as a file tree: which layout it has, its commit, and safe listing (no symlink leaves it)."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..common.errors import UserError
from ..results import Layout, Skipped

NEW_MANIFEST_GLOB = "families/*/tests/manifests/*.json"
OLD_MANIFEST_GLOB = "tests/e2e/models/*/manifests/*.json"
# How inventory.json and inventory.md name a checkout given by absolute path: a placeholder, as publish/ writes the
# run's TRTMC checkout; an absolute path would name this machine in a public file (issue 26).
CHECKOUT_PLACEHOLDER = "$TRTMC_CHECKOUT"
# Folders below a family's folder that the audit lists (walked with a list, never recursion); a real family nests a
# handful. A deeper one is named in the inventory and not listed.
MAX_FOLDER_DEPTH = 32


def shown_path(path: Path | str, placeholder: str) -> str:
    """A path as a public file may carry it: a relative path as given, when it does not climb out of the working
    directory; else `placeholder` (an absolute path, or one with `..`, says where on this machine it is)."""
    given = Path(path)
    return given.as_posix() if not given.is_absolute() and ".." not in given.parts else placeholder


class NotACheckout(UserError):
    """The path given is missing or is not a TRTMC checkout; the message names it and the fix."""


@dataclass
class CheckoutTree:
    """A checkout root plus what the audit had to skip while listing it."""

    root: Path
    skipped: list[Skipped] = field(default_factory=list)
    _skipped_paths: set[str] = field(default_factory=set)

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def _skip(self, path: Path, reason: str) -> None:
        rel = self.rel(path)
        if rel not in self._skipped_paths:
            self._skipped_paths.add(rel)
            self.skipped.append(Skipped(path=rel, reason=reason))

    def inside(self, path: Path) -> bool:
        """True for a path whose real location stays in the checkout; a symlink out is recorded and refused."""
        try:
            real = path.resolve()
        except (RuntimeError, OSError) as error:  # Python 3.11 raises RuntimeError on a symlink loop
            self._skip(path, f"symlink that cannot be resolved ({error}); not followed")
            return False
        if real == self.root or self.root in real.parents:
            return True
        what = "symlink pointing" if path.is_symlink() else "path leading"
        self._skip(path, f"{what} outside the checkout (to {real}); not followed")
        return False

    def glob(self, pattern: str) -> list[Path]:
        """Regular files matching the pattern; anything else matching it (a link out of the checkout or to
        nothing, a directory, a FIFO ...) is recorded as skipped, never read."""
        found = []
        for path in sorted(self.root.glob(pattern)):
            if not self.inside(path):
                continue
            if path.is_file():
                found.append(path)
            else:
                self._skip(path, not_regular_reason(path))
        return found

    def files_under(self, directory: Path, suffixes: frozenset[str]) -> list[Path]:
        """Regular files below a directory, symlinks out of the checkout refused, never followed into."""
        if not directory.is_dir() or not self.inside(directory):
            return []
        found: list[Path] = []
        listed = walk_files(directory, lambda name: not name.startswith(".") and name != "__pycache__")
        for path in listed.files:
            # folder links are never followed, so only a file link can lead out.
            if path.suffix not in suffixes or (path.is_symlink() and not self.inside(path)):
                continue
            if path.is_file():
                found.append(path)
            else:
                self._skip(path, not_regular_reason(path))
        for folder in listed.too_deep:
            self._skip(folder, f"{listed.why}; not listed")
        return found


@dataclass
class Listing:
    """What `walk_files` found: every entry that is no folder, and the folders past the depth budget."""

    files: list[Path] = field(default_factory=list)
    too_deep: list[Path] = field(default_factory=list)
    why: str = ""  # why those are not listed, in words


def walk_files(base: Path, keep: Callable[[str], bool], max_depth: int = MAX_FOLDER_DEPTH) -> Listing:
    """Every entry below `base` that is no folder (files, file links, FIFOs ...), in os.walk's top-down order with
    names sorted: a folder's own entries, then each kept subfolder's in turn. Walked with a list, never recursion
    (os.walk recurses, and a checkout nesting a thousand folders ended the audit with RecursionError); a folder link
    is never followed; a folder more than `max_depth` levels below `base` is not listed, but named."""
    listing = Listing(why=f"a folder nested more than {max_depth} levels deep")
    stack = [(base, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            continue
        subfolders = []
        for entry in entries:
            try:
                is_folder = entry.is_dir()  # a link to a folder is one, never followed (as os.walk)
            except OSError:
                is_folder = False
            if not is_folder:
                listing.files.append(Path(entry.path))
            elif not entry.is_symlink() and keep(entry.name):
                subfolders.append(Path(entry.path))
        if depth >= max_depth:
            listing.too_deep.extend(subfolders)
        else:
            stack.extend((sub, depth + 1) for sub in reversed(subfolders))
    return listing


def not_regular_reason(path: Path) -> str:
    """Why a path that is not a regular file was not read, naming what it is."""
    link = "symlink to " if path.is_symlink() else ""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return f"broken symlink: its target {os.readlink(path)} does not exist" if link else "vanished while listed"
    except OSError as error:
        return f"could not be examined ({error.strerror or error}); not read"
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    what = next((name for test, name in kinds if test(mode)), "not a regular file")
    return f"not a regular file ({link}{what}); not read"


def open_checkout(path: Path) -> tuple[CheckoutTree, Layout]:
    """Check the path and detect its layout; the newer layout wins when a tree has both."""
    if not path.exists():
        raise NotACheckout(f"TRTMC checkout {path} does not exist; pass the path of a TensorRT-Model-Connect clone")
    if not path.is_dir():
        raise NotACheckout(f"TRTMC checkout {path} is not a directory; pass the root of a TensorRT-Model-Connect clone")
    root = path.resolve()
    tree = CheckoutTree(root)
    if (root / "families").is_dir() and tree.glob(NEW_MANIFEST_GLOB):
        return tree, "families"
    if (root / "tests" / "e2e" / "models").is_dir():
        return tree, "e2e-models"
    if (root / "families").is_dir():
        return tree, "families"
    raise NotACheckout(
        f"{path} is not a TRTMC checkout: it has neither families/<family>/tests/manifests/ (newer layout) nor "
        "tests/e2e/models/<family>/manifests/ (older layout); pass the root of a TensorRT-Model-Connect clone"
    )


def checkout_commit(root: Path) -> str:
    """HEAD from git when the checkout has it, else 'unknown' (an exported tree has no history)."""
    if not (root / ".git").exists():
        return "unknown"
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--verify", "--end-of-options", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else "unknown"
