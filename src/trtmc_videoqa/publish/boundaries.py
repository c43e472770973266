"""Where a sentinel may stand in a line: the lookarounds around a path, a user or host name, a short name, and the
patterns built from them; shared by the public check and the rewrite, so that what the rewrite leaves, the check
sees."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A shorter user or host name (a host named `vm`) is checked only where it stands machine-derived: after `@` or `/`
# (user@host, a URL's host, a path component) up to a separator, or as the user before `@`.
SHORT_WORD_BEFORE = r"(?<=[@/])"
SHORT_WORD_AFTER = r"(?=[/:@\s\"'),;\]]|$)"

# Where a path sentinel may stand. A path is a hit only as a whole path or a prefix of one ending at a component:
# not preceded by a character that continues a name (so /tmp is no hit in /var/tmp or ./tmp, but is in file:///tmp)
# and followed by `/`, a quote, whitespace, the line's end, or any other character that does not continue a name
# (so /tmp hits /tmp/x and "/tmp" but not /tmpfoo or /tmp.d; a sentence's closing dot after /tmp still hits).
_NAME_CHAR = r"[\w.~+@%-]"
PATH_BEFORE = rf"(?<!{_NAME_CHAR})"
PATH_AFTER = r"(?!\.?[\w~+@%-])"
# Words (user, host) match as whole tokens: not next to [A-Za-z0-9_-], so `root` is no hit in root_correlation_id,
# chroot or --runtime-root (host names and options are hyphenated words), but is in root@host, /home/root/, "root".
# Case-sensitive, like paths: the tool writes these values as the system gave them, and a case-blind match would
# flag ordinary words (a host named "Report").
WORD_BEFORE = r"(?<![A-Za-z0-9_-])"
WORD_AFTER = r"(?![A-Za-z0-9_-])"


def led_by(before: str, value: str) -> str:
    """The literal `value` where the one-character lookbehind `before` (`(?<!C)` or `(?<=C)`) holds at its start,
    written literal first, the lookbehind widened over it: the same matches, but a pattern that begins with its
    literals lets `re` skip to where one could start, where a leading lookbehind is tried at every position (a line
    of hundreds of kB of base64 in report.html took tens of milliseconds)."""
    literal = re.escape(value)
    return f"{literal}{before[:4]}{before[4:-1]}{literal})" if before else literal


def alternation(values: Iterable[str], before: str = "") -> str:
    # Longest first: of two sentinels where one is a prefix of the other, the excerpt centres on the longer.
    return "|".join(led_by(before, value) for value in sorted(values, key=len, reverse=True))
