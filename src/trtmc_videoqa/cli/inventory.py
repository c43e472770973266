"""`trtmc-videoqa inventory`: audit a checkout, write inventory.json and inventory.md, say what was found."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.errors import EXIT_OK, BadInput
from ..common.safe_read import UnreadableInput, read_regular_file
from ..common.text_escape import one_line, shown_name
from ..results import Inventory
from ..results.layout import INVENTORY_FILE, INVENTORY_MD

if TYPE_CHECKING:
    from ..results import Inventory


def _load_inventory_file(path: Path) -> Inventory:
    from ..results.inventory import MAX_INVENTORY_BYTES

    if not path.exists():
        raise BadInput(f"--against {path} does not exist; pass an inventory.json written by an earlier audit")
    try:  # a regular file, read up to a cap: /dev/zero or a FIFO is refused, never read or waited on
        return Inventory.model_validate_json(read_regular_file(path, MAX_INVENTORY_BYTES))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "the file"
        reason = f"{where}: {first['msg']}"
    except (OSError, ValueError, UnreadableInput) as error:
        reason = " ".join(str(error).split())
    raise BadInput(
        f"--against {path} is not an inventory.json of this tool ({reason}); "
        "pass the inventory.json an earlier `trtmc-videoqa inventory` wrote"
    ) from None


def cmd_inventory(args: argparse.Namespace) -> int:
    from ..inventory import run_inventory, skipped_manifests
    from ..inventory.markdown import render_inventory_markdown
    from ..inventory.reconcile import reconcile

    old = _load_inventory_file(args.against) if args.against else None
    inventory = run_inventory(args.trtmc, commit=args.commit)
    if old is not None:
        inventory.reconciliation = reconcile(old, inventory, str(args.against))
    out: Path = args.out
    write_model_atomic(out / INVENTORY_FILE, inventory)
    write_text_atomic(out / INVENTORY_MD, render_inventory_markdown(inventory))
    s = inventory.summary
    print(one_line(f"{inventory.layout_description}; commit {inventory.commit}"))
    print(f"{s.rows} rows, {s.in_group} in the group, {s.models} models, {s.variant_rows} variant rows")
    for verdict, count in s.by_verdict.items():
        if count:
            print(f"  {verdict:<22} {count:>4}  (in group {s.in_group_by_verdict.get(verdict, 0)})")
    print(f"capable of temporal video QA: {', '.join(shown_name(p) for p in s.capable) or 'none'}")
    if inventory.group_line:  # the furthest state along TRTMC's own Task declarations (issue 27)
        print(one_line(inventory.group_line))
    if inventory.lacking:
        print(f"the checkout lacked {len(inventory.lacking)} thing(s); see inventory.md")
    manifests = len(skipped_manifests(inventory))
    if manifests:
        print(
            f"skipped {manifests} manifest(s), so no row (not a regular file, or a link leading out of the checkout "
            "or to nothing); see inventory.md"
        )
    if len(inventory.skipped) > manifests:
        print(f"skipped {len(inventory.skipped) - manifests} other path(s), not read; see inventory.md")
    if inventory.reconciliation:
        r = inventory.reconciliation
        counts = f"{len(r.added)} added, {len(r.removed)} removed, {len(r.changed)} changed"
        print(f"against {one_line(r.against)}: {counts}")
    print(one_line(f"wrote {out / INVENTORY_FILE} and {out / INVENTORY_MD}"))
    return EXIT_OK


def add_arguments(inventory: argparse.ArgumentParser) -> None:
    """The `inventory` command's options; its handler."""
    inventory.description = (
        "Audit a TRTMC checkout (either layout, detected automatically): every checkpoint manifest "
        "becomes a row with its Task, variants, catalog status, verdict about temporal video QA, "
        "the capability gap and the file and line that show it."
    )
    inventory.add_argument("--trtmc", type=Path, required=True, metavar="PATH", help="root of the TRTMC checkout")
    inventory.add_argument(
        "--out",
        type=Path,
        default=Path("artifacts/inventory"),
        metavar="DIR",
        help="where inventory.json and inventory.md go (default: artifacts/inventory)",
    )
    inventory.add_argument(
        "--against",
        type=Path,
        metavar="OLD.json",
        help="an earlier inventory.json to reconcile with: added, removed and changed rows",
    )
    inventory.add_argument(
        "--commit",
        type=_full_sha,
        metavar="SHA",
        help="the commit the tree is, when it has no .git (an exported tree); its own .git wins where it has one",
    )
    inventory.set_defaults(handler=cmd_inventory)


def _full_sha(value: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{40}", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a full 40-character commit SHA")
    return value
