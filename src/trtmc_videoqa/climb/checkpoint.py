"""What a TRTMC row's stages share: the inventory row, the checkout and its toolchain, and how a TRTMC command is
run (under a wall limit, its output to a raw log) and recorded (secrets as placeholders)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..common.processes import run_in_group
from ..results import CheckpointEntry, Inventory, RecordedCommand
from ..trtmc.commands import Toolchain
from .protocol import RowJob


@dataclass(kw_only=True)
class Checkpoint(RowJob):
    """One capable checkpoint of a TRTMC checkout along its ladder."""

    entry: CheckpointEntry
    inventory: Inventory
    checkout: Path
    toolchain: Toolchain
    tokenizer_label: str
    revision_check: str


def run_step(
    argv: list[str], *, log: Path, timeout_s: float, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int | None, float]:
    """(exit code, or None when it overstayed its wall limit; wall seconds)."""

    run = run_in_group(argv, wall_limit_s=timeout_s, log_path=log, cwd=cwd, env=env)
    return (None if run.timed_out else run.exit_code), run.wall_s


def redacted(argv: list[str]) -> RecordedCommand:
    """The command as a row records it: its program by name, its arguments as given (secrets never in them: TRTMC's
    commands take them from the environment)."""
    return RecordedCommand.of(argv)
