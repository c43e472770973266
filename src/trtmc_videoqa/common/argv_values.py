"""User values that stand on another program's command line (git's repository and ref, AIPerf's model and URL, a
server's checkpoint): one that begins with `-` would be read there as an option (`--upload-pack=CMD` runs CMD), so
it is refused before anything runs, naming the option. Every command we build also ends its options with `--` (or
`--end-of-options`) where the program takes it; this check is for the programs and places that do not."""

from __future__ import annotations

from .errors import BadInput


class OptionLikeValue(BadInput):
    """A value given for a repository, ref, model, URL or path that begins with `-`."""


def not_an_option(value: str, option: str, what: str) -> str:
    """`value` unchanged, or OptionLikeValue when another program would take it for an option."""
    if value.startswith("-"):
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise OptionLikeValue(
            f"{option} {shown!r} begins with '-', which the program it is passed to would read as an option; give "
            f"{what} (a path whose name begins with '-' can be written ./NAME)"
        )
    return value
