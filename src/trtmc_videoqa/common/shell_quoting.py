"""A command as one line the shell reads back exactly: for command.txt, the row's commands and the reports.

Each argument is quoted (shlex's quoting, or bash's $'...' where a value holds a line break, control or invisible
character), so no value can start a line of its own. A secret is never in a recorded command: where one is needed,
the command holds a placeholder the shell expands from the environment (`SECRET_PLACEHOLDERS`), left unquoted.
"""

from __future__ import annotations

import re
import shlex

from .scrub import SERVER_TOKEN_ENV

# Placeholders a recorded command holds instead of a secret: the server's API key, by its variable.
SECRET_PLACEHOLDERS = frozenset({f"${SERVER_TOKEN_ENV}"})
# Placeholders the publish step writes for a path of this machine (publish/rewrite.py): at the start of an argument,
# left for the shell to expand, so that a recorded command runs with the reader's own folders.
PATH_PLACEHOLDERS = frozenset(
    {"$TRTMC_CHECKOUT", "$BUNDLE_CACHE", "$HF_HUB_CACHE", "$TRTMC_VIDEOQA_SRC", "$AIPERF_VENV", "$VENV", "$HOME"}
    | {"$TMPDIR", "$PWD", "$MODEL_DIR"}
)
_LEADING_PLACEHOLDER = re.compile(r"\$[A-Z][A-Z0-9_]*(?=/|$)")

# What a recorded value may not hold as it is: C0 and C1 controls (a newline or carriage return ends the line and
# lets the rest of the value be read as a command of its own), DEL, the line and paragraph separators, and the
# bidirectional and invisible formatting characters (which make the line read otherwise than it runs).
UNSAFE_IN_COMMAND = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060-\u2064\ufeff\ud800-\udfff]"
)
ESCAPED_NOTE = (
    "# a value holds a line break, control or invisible character: it is written in bash's $'...' quoting, so the"
    " command stays one line and bash passes the value as it was"
)
_ANSI_C = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _ansi_c_quoted(part: str) -> str:
    """`part` in bash's $'...' quoting, every character UNSAFE_IN_COMMAND matches written as an escape."""
    out = []
    for char in part:
        if char in _ANSI_C:
            out.append(_ANSI_C[char])
        elif 0xDC80 <= ord(char) <= 0xDCFF:  # a byte of a file name that is not UTF-8 (surrogateescape): that byte
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif UNSAFE_IN_COMMAND.match(char):
            out.append(f"\\x{ord(char):02x}" if ord(char) < 0x80 else f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "$'" + "".join(out) + "'"


def quoted(part: str) -> str:
    """One argument as a shell reads it back: shlex's quoting, or bash's $'...' where the value holds a character
    no line of command.txt may hold; a path placeholder that starts it stays for the shell to expand
    (`"$BUNDLE_CACHE"/x.bundle`)."""
    leading = _LEADING_PLACEHOLDER.match(part)
    if leading and leading.group() in PATH_PLACEHOLDERS:
        rest = part[leading.end() :]
        return f'"{leading.group()}"' + (quoted(rest) if rest else "")
    return _ansi_c_quoted(part) if UNSAFE_IN_COMMAND.search(part) else shlex.quote(part)


def reproducible_command(argv: list[str]) -> str:
    """For command.txt and reports: one line, each argument quoted so the shell passes it back exactly (a
    placeholder, never a secret, left for the shell to expand). A value with a line break or control character is
    written in $'...' quoting, with a note line before the command that says so: no value can start a line."""
    line = " ".join(part if part in SECRET_PLACEHOLDERS else quoted(part) for part in argv)
    return f"{ESCAPED_NOTE}\n{line}" if any(UNSAFE_IN_COMMAND.search(part) for part in argv) else line
