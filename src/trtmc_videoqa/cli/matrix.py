"""`trtmc-videoqa matrix`: the profiles a CI matrix qualifies, as one JSON list."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..common.errors import EXIT_OK


def cmd_matrix(args: argparse.Namespace) -> int:
    from ..inventory import run_inventory

    inventory = run_inventory(args.trtmc)
    # One job per checkpoint: its normal profile. A capable variant runs only when named with --profile.
    capable = set(inventory.summary.capable)
    print(json.dumps([e.profile for e in inventory.entries if e.profile in capable and e.normal_profile]))
    return EXIT_OK


def add_arguments(matrix: argparse.ArgumentParser) -> None:
    """The `matrix` command's options; its handler."""
    matrix.description = (
        "Audit the checkout and print, as one JSON list, the profiles with a temporal video QA "
        "capability: the normal profile of each such checkpoint (variants run only when named). An empty list is "
        "a valid answer."
    )
    matrix.add_argument("--trtmc", type=Path, required=True, metavar="PATH", help="root of the TRTMC checkout")
    matrix.set_defaults(handler=cmd_matrix)
