"""What the command line says on stderr: one line each, a value from outside never starting a line of its own."""

from __future__ import annotations

import sys

from ..common.text_escape import one_line


def say(message: str) -> None:
    print(one_line(message), file=sys.stderr)
