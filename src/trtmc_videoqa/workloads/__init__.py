"""The workloads as data: committed clip bytes with attribution, questions, accepted answers, prompts, policies.

``load_workload("bigbuckbunny")`` (or a path to any workload.json) returns a checked ``Workload``. Importing this
package loads no PyAV; the clip-making modules (``synthetic``, ``recipe``, ``encode``) do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from ..results.layout import WORKLOAD_FILE
from .loading import Workload, WorkloadError, load_workload_file
from .model import (
    Clip,
    ClipDerivation,
    ClipVideo,
    Generation,
    Option,
    PromptTemplate,
    Question,
    RenderedPrompt,
    WorkloadFile,
)

DATA_DIR = Path(__file__).parent / "data"

BUILTIN_WORKLOADS: Mapping[str, Path] = MappingProxyType(
    {name: DATA_DIR / name / WORKLOAD_FILE for name in ("bigbuckbunny", "synthetic")}
)


def builtin_workload(name: str) -> Workload:
    if name not in BUILTIN_WORKLOADS:
        raise WorkloadError(f"no built-in workload {name!r}; the built-in ones are {sorted(BUILTIN_WORKLOADS)}")
    return load_workload_file(BUILTIN_WORKLOADS[name])


def load_workload(path_or_name: str | os.PathLike[str]) -> Workload:
    """A built-in workload by name, or a workload file (or its directory) at any path.

    A bare built-in name always means the built-in one; write ``./synthetic`` for a local directory of that name.
    """
    if isinstance(path_or_name, str) and path_or_name in BUILTIN_WORKLOADS:
        return builtin_workload(path_or_name)
    if not Path(path_or_name).exists():  # a typo of a name as often as a missing file: say both
        raise WorkloadError(
            f"{path_or_name}: no such workload file, and no built-in workload of that name; give a built-in name "
            f"({', '.join(sorted(BUILTIN_WORKLOADS))}) or the path of a {WORKLOAD_FILE} (or its folder)"
        )
    return load_workload_file(Path(path_or_name))


__all__ = [
    "BUILTIN_WORKLOADS",
    "Clip",
    "ClipDerivation",
    "ClipVideo",
    "Generation",
    "Option",
    "PromptTemplate",
    "Question",
    "RenderedPrompt",
    "Workload",
    "WorkloadError",
    "WorkloadFile",
    "builtin_workload",
    "load_workload",
]
