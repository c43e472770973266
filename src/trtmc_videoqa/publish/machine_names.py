"""This machine's own names and folders, as the public check looks for them: the user and host names (too short
or generic ones apart) and the folders a public file names by placeholder."""

from __future__ import annotations

import getpass
import os
import socket
import sys
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

# Host names that name no machine (a container's default): public text says "localhost" in URLs and help.
GENERIC_HOSTS = frozenset({"localhost", "localhost.localdomain", "localdomain"})
MIN_WORD_CHARS = 3  # `root` (4) must be checked; 1-2 characters would hit everywhere as words


def unique(values: Iterable[str]) -> list[str]:
    """The values in order, each once, the empty one left out (an empty sentinel would match everywhere)."""
    return [value for value in dict.fromkeys(values) if value]


def run_dirs() -> dict[str, Path | str]:
    """The venv, $HOME, the temp dir and the working directory, by the placeholder a public file names each with;
    one that cannot be told is left out."""
    dirs: dict[str, Path | str] = {"$VENV": sys.prefix, "$TMPDIR": tempfile.gettempdir()}
    with suppress(RuntimeError, KeyError, OSError):  # no $HOME and no passwd entry (a bare container user)
        dirs["$HOME"] = Path.home()
    with suppress(OSError):  # the working directory was removed
        dirs["$PWD"] = os.getcwd()
    return dirs


def user_name() -> list[str]:
    try:
        return [getpass.getuser()]
    except (OSError, KeyError, ImportError):  # no $USER/$LOGNAME and no passwd entry for the uid
        return []


def host_names() -> list[str]:
    try:
        host = socket.gethostname()
    except OSError:
        return []
    return [host, host.split(".", 1)[0]]  # the short form turns up in prompts and logs without the domain


def _keep_word(word: str) -> bool:
    return len(word) >= MIN_WORD_CHARS and word.lower() not in GENERIC_HOSTS


def machine_words() -> list[str]:
    """The user and host names that no public file may hold (too short or generic ones left out)."""
    return [word for word in unique([*user_name(), *host_names()]) if _keep_word(word)]


def short_machine_words() -> list[str]:
    """The user and host names too short to check as words (checked where they stand machine-derived)."""
    return [word for word in unique([*user_name(), *host_names()]) if len(word) < MIN_WORD_CHARS]
