"""The temporary folder of a run's children: every process a run starts (AIPerf, the servers, TRTMC's commands)
writes its temporary files inside the run's own private scratch folder, which is removed when the run ends, so a
run leaves nothing in the machine's temporary folder (AIPerf left an `aiperf_mmap_*` folder and its socket folders
there per run).

The children reach the scratch folder through a short link in the machine's temporary folder: AIPerf binds Unix
sockets under its temporary folder, and a socket's path may hold at most 107 bytes, which a deep `--out` exceeds.
Where the machine's temporary folder is itself too long for that (macOS gives one of about 49 bytes), the link is
made in /tmp instead.
The link and its private parent folder are the only entries a run makes outside `--out`, and it removes them; those
of a run of the same `--out` killed with -9 go when the next one starts."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")  # what Python's tempfile, and most tools, read
LINK_PREFIX = "trtmc-videoqa-"
LINK_NAME = "t"  # the children's temporary folder: <link parent>/t
# Below the link, AIPerf 0.13.0 puts its own mkdtemp folder (11 bytes), "aiperf" and a socket's name (33 bytes at
# most): 60 bytes with the slashes and room to spare, of a socket path's 107.
LINK_PATH_MAX = 47
SHORT_TMP = "/tmp"


@contextmanager
def children_temp_dir(folder: Path) -> Iterator[Path]:
    """`folder` (made anew: a leftover of a run killed with -9 is removed first) as the temporary folder of every
    child started in the block, by a short link to it; the folder, the link and the link's parent removed when the
    block ends, however it ends. This process keeps the machine's own temporary folder (pinned before the
    environment changes), which publish names by its placeholder. Yields the path the children are given."""
    link_dir = link_parent_dir(tempfile.gettempdir())
    remove_scratch(folder)
    folder.mkdir(parents=True)
    remove_stale_links(Path(link_dir), folder)
    parent = Path(tempfile.mkdtemp(prefix=LINK_PREFIX, dir=link_dir))  # private (0700), a name no one else has
    link = parent / LINK_NAME
    saved = {name: os.environ.get(name) for name in TEMP_VARIABLES}
    try:
        link.symlink_to(folder.resolve(), target_is_directory=True)
        os.environ.update({name: str(link) for name in TEMP_VARIABLES})
        yield link
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        link.unlink(missing_ok=True)
        parent.rmdir()
        remove_scratch(folder)


def link_parent_dir(machine_tmp: str) -> str:
    """Where the link's private parent folder is made: the machine's temporary folder, or /tmp where the link's path
    there would leave AIPerf no room for its sockets and /tmp is a folder this user can make one in."""
    link = os.path.join(machine_tmp, LINK_PREFIX + "x" * 8, LINK_NAME)  # mkdtemp's names have 8 characters
    if len(os.fsencode(link)) <= LINK_PATH_MAX or not os.access(SHORT_TMP, os.W_OK | os.X_OK):
        return machine_tmp
    return SHORT_TMP


def remove_scratch(folder: Path) -> None:
    """The folder and what is in it, never through a link (a link planted in its place is removed, not followed)."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    elif folder.is_dir():
        shutil.rmtree(folder)


def links_to(link_dir: Path, folder: Path) -> list[Path]:
    """The link parents in `link_dir` whose link points at `folder`, as `children_temp_dir` makes them."""
    target = str(folder.resolve())
    found = []
    for parent in link_dir.glob(LINK_PREFIX + "*"):
        link = parent / LINK_NAME
        try:
            if link.is_symlink() and os.readlink(link) == target:
                found.append(parent)
        except OSError:
            continue  # another user's, or gone meanwhile
    return found


def remove_stale_links(link_dir: Path, folder: Path) -> None:
    """The link parents in `link_dir` that point at `folder`: left by a run of the same output folder that was
    killed with -9 (the output lock keeps a live one out). Only a folder of ours holding that link alone goes."""
    for parent in links_to(link_dir, folder):
        try:
            (parent / LINK_NAME).unlink()
            parent.rmdir()  # refused where anything else is in it: then it is not ours alone
        except OSError:
            continue  # gone meanwhile, or not ours alone
