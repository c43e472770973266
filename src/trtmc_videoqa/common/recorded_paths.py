"""Our own command line as a row records it, its paths absolute: every path a recorded command holds is then either
inside the artifacts folder, which the publish step writes relative to it (`--out artifacts` becomes `--out .`,
the working folder of every command in command.txt), or outside it, named by placeholder (`$TRTMC_CHECKOUT`,
publish/rewrite.py). A path left relative to the folder the run was started in would be right only there, and
the public check, which looks for this machine's absolute paths, could not see it."""

from __future__ import annotations

import os
from collections.abc import Collection


def with_absolute_paths(
    argv: list[str], path_options: Collection[str], local_options: Collection[str] = ()
) -> list[str]:
    """`argv` with the value of each option in `path_options` made absolute (links kept as given), in both the
    `--opt VALUE` and `--opt=VALUE` forms; an option in `local_options` (a built-in name or hub id, or a local
    path) only where its value names something on this machine. Every other argument, and all after `--`, as
    typed."""
    out: list[str] = []
    pending: str | None = None  # the option whose value comes next
    for index, part in enumerate(argv):
        name, equals, value = part.partition("=")
        if pending is not None:
            out.append(_absolute(part, pending in local_options))
            pending = None
        elif part == "--":
            return out + argv[index:]
        elif part.startswith("--") and equals and (name in path_options or name in local_options):
            out.append(f"{name}={_absolute(value, name in local_options)}")
        else:
            out.append(part)
            pending = part if part in path_options or part in local_options else None
    return out


def _absolute(value: str, local_only: bool) -> str:
    if not value or (local_only and not os.path.exists(value)):
        return value
    return os.path.abspath(value)
