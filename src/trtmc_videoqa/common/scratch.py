"""The temporary folder of a run's children: every process a run starts (AIPerf, the servers, TRTMC's commands)
writes its temporary files inside the run's own private scratch folder, which is removed when the run ends, so a
run leaves nothing in the machine's temporary folder (AIPerf left an `aiperf_mmap_*` folder there per run)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")  # what Python's tempfile, and most tools, read


@contextmanager
def children_temp_dir(folder: Path) -> Iterator[Path]:
    """`folder` (made anew: a leftover of a run killed with -9 is removed first) as the temporary folder of every
    child started in the block; removed when the block ends, however it ends. This process keeps the machine's own
    temporary folder (pinned before the environment changes), which publish names by its placeholder."""
    tempfile.gettempdir()
    remove_scratch(folder)
    folder.mkdir(parents=True)
    saved = {name: os.environ.get(name) for name in TEMP_VARIABLES}
    os.environ.update({name: str(folder.resolve()) for name in TEMP_VARIABLES})
    try:
        yield folder
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        remove_scratch(folder)


def remove_scratch(folder: Path) -> None:
    """The folder and what is in it, never through a link (a link planted in its place is removed, not followed)."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    elif folder.is_dir():
        shutil.rmtree(folder)
