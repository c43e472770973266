"""Sizes as a user writes them: one parser for every option that asks for a size (`4GiB`, `512MiB`, `4096 MiB`, or
a plain number of bytes), and the one way a size is shown (`--help`'s defaults), so what is shown is accepted."""

from __future__ import annotations

import argparse
import re
from decimal import Decimal

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# Binary units (what --help shows), and the decimal ones a user may bring from other tools; case-insensitive.
UNITS: dict[str, int] = {
    "b": 1,
    "kib": KIB,
    "mib": MIB,
    "gib": GIB,
    "tib": 1 << 40,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
}
FORMS = "bytes (4194304) or a number with a unit: 512MiB, 4GiB, 4096 MiB (B, KiB, MiB, GiB, TiB; kB, MB, GB, TB)"
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """Bytes from `text`: a plain integer is bytes; a number with a unit is that many units (a fraction rounded
    down to whole bytes). A ValueError says the accepted forms."""
    match = _SIZE.fullmatch(text) if len(text) <= 64 else None
    unit = UNITS.get(match.group(2).lower() if match and match.group(2) else "b") if match else None
    if match is None or unit is None:
        raise ValueError(f"{text[:64]!r} is not a size; give {FORMS}")
    return int(Decimal(match.group(1)) * unit)


def size_argument(text: str) -> int:
    """`parse_size` as an argparse type: a refusal is argparse's exit 2, naming the option and the forms."""
    try:
        return parse_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def shown_size(size: int) -> str:
    """The size in the largest binary unit that holds it whole (`4 GiB`, `16 MiB`), else in bytes."""
    for name, unit in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} bytes"
