"""The one exception the media room raises for a bad clip."""

from __future__ import annotations

from os import PathLike

from ..common.errors import UserError


class ClipError(UserError):
    """A clip that cannot be used, with a message that names the file, the problem and the fix.

    ``str(error)`` reads like "clip /x/y.mp4 is truncated: ...; re-export or re-download it".
    """

    def __init__(self, clip: str | PathLike[str], problem: str, fix: str) -> None:
        self.clip = str(clip)
        self.problem = problem
        self.fix = fix
        super().__init__(f"clip {self.clip} {problem}; {fix}")
