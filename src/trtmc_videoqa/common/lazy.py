"""One way for a package to load heavy names on first use (PEP 562): importing the package stays quick."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, table: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that loads ``name`` from ``package.<table[name]>`` on first use and
    keeps it as a plain attribute from then on."""

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{table[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
