"""The command line: parses, calls the core rooms, renders. Bad input exits 2 with one message; a tool error 1."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

from pydantic import ValidationError

from . import __version__
from .artifacts import write_model_atomic, write_text_atomic

EXIT_OK, EXIT_TOOL_ERROR, EXIT_BAD_INPUT = 0, 1, 2
DEBUG_ENV = "TRTMC_VIDEOQA_DEBUG"


class BadInput(Exception):
    """Input the user can fix; the message names the input and the fix."""


def _say(message: str) -> None:
    print(message, file=sys.stderr)


# --- inventory ------------------------------------------------------------------------------------------------

def _load_inventory_file(path: Path):
    from .results import Inventory

    try:
        return Inventory.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise BadInput(f"--against {path} does not exist; pass an inventory.json written by an earlier audit") from None
    except (OSError, ValidationError, ValueError) as error:
        first = str(error).splitlines()[0]
        raise BadInput(f"--against {path} is not an inventory.json of this tool ({first}); "
                       "pass the inventory.json an earlier `trtmc-videoqa inventory` wrote") from None


def cmd_inventory(args: argparse.Namespace) -> int:
    from .inventory import NotACheckout, run_inventory
    from .inventory.markdown import render_inventory_markdown
    from .inventory.reconcile import reconcile

    old = _load_inventory_file(args.against) if args.against else None
    try:
        inventory = run_inventory(args.trtmc)
    except NotACheckout as error:
        raise BadInput(str(error)) from None
    if old is not None:
        inventory.reconciliation = reconcile(old, inventory, str(args.against))
    out: Path = args.out
    write_model_atomic(out / "inventory.json", inventory)
    write_text_atomic(out / "inventory.md", render_inventory_markdown(inventory))
    s = inventory.summary
    print(f"{inventory.layout_description}; commit {inventory.commit}")
    print(f"{s.rows} rows, {s.in_group} in the group, {s.models} models, {s.variant_rows} variant rows")
    for verdict, count in s.by_verdict.items():
        if count:
            print(f"  {verdict:<22} {count:>4}  (in group {s.in_group_by_verdict.get(verdict, 0)})")
    print(f"capable of temporal video QA: {', '.join(s.capable) or 'none'}")
    if inventory.lacking:
        print(f"the checkout lacked {len(inventory.lacking)} thing(s); see inventory.md")
    if inventory.reconciliation:
        r = inventory.reconciliation
        print(f"against {r.against}: {len(r.added)} added, {len(r.removed)} removed, {len(r.changed)} changed")
    print(f"wrote {out / 'inventory.json'} and {out / 'inventory.md'}")
    return EXIT_OK


# --- doctor ---------------------------------------------------------------------------------------------------

def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import run_checks

    checks = run_checks()
    if args.json:
        print(json.dumps([c.model_dump() for c in checks], indent=2))
    else:
        for check in checks:
            print(f"{check.level.upper():<4}  {check.name:<14} {check.detail}")
            if check.fix and check.level != "ok":
                print(f"      {'':<14} fix: {check.fix}")
    return EXIT_TOOL_ERROR if any(c.level == "fail" for c in checks) else EXIT_OK


# --- schemas --------------------------------------------------------------------------------------------------

def cmd_schemas(args: argparse.Namespace) -> int:
    from .results import json_schemas

    for name, schema in json_schemas().items():
        path = write_text_atomic(args.out / name, json.dumps(schema, indent=2, sort_keys=True) + "\n")
        print(f"wrote {path}")
    return EXIT_OK


# --- parser ---------------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trtmc-videoqa",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=30, width=110),
        description="Which TRTMC checkpoints answer a temporal question about a short clip through trtmc-server, "
                    "and how fast.")
    parser.add_argument("--version", action="version", version=f"trtmc-videoqa {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    inventory = commands.add_parser(
        "inventory", help="audit a TRTMC checkout: one row per checkpoint manifest, with verdict and evidence",
        description="Audit a TRTMC checkout (either layout, detected automatically): every checkpoint manifest "
                    "becomes a row with its Task, variants, catalog status, verdict about temporal video QA, "
                    "the capability gap and the file and line that show it.")
    inventory.add_argument("--trtmc", type=Path, required=True, metavar="PATH", help="root of the TRTMC checkout")
    inventory.add_argument("--out", type=Path, default=Path("artifacts/inventory"), metavar="DIR",
                           help="where inventory.json and inventory.md go (default: artifacts/inventory)")
    inventory.add_argument("--against", type=Path, metavar="OLD.json",
                           help="an earlier inventory.json to reconcile with: added, removed and changed rows")
    inventory.set_defaults(handler=cmd_inventory)

    doctor = commands.add_parser(
        "doctor", help="check this machine: Python, PyAV codecs, aiperf version, loopback ports, Docker, GPU",
        description="Check the environment and say what is missing and how to fix it. Exits 1 when a required "
                    "part is missing; Docker, GPU and TRTMC are only warned about.")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(handler=cmd_doctor)

    schemas = commands.add_parser(
        "schemas", help="write the JSON Schemas of the artifacts (inventory.json, ...)",
        description="Write the JSON Schemas exported from the artifact models; the repository commits them.")
    schemas.add_argument("--out", type=Path, default=Path("schemas"), metavar="DIR",
                         help="where the schema files go (default: schemas)")
    schemas.set_defaults(handler=cmd_schemas)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except BadInput as error:
        _say(f"trtmc-videoqa {args.command}: {error}")
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to say
        return EXIT_OK
    except KeyboardInterrupt:
        _say(f"trtmc-videoqa {args.command}: interrupted; what was written so far is kept")
        return 130
    except OSError as error:
        # An output or input location we cannot use (read-only, full, missing): the user can fix it.
        where = f" {error.filename}" if error.filename else ""
        _say(f"trtmc-videoqa {args.command}: cannot use{where}: {error.strerror or error}; "
             "choose a writable location with free space")
        return EXIT_BAD_INPUT
    except Exception as error:  # a bug of ours: say so plainly, the traceback only on request
        if os.environ.get(DEBUG_ENV):
            raise
        _say(f"trtmc-videoqa {args.command}: internal error: {type(error).__name__}: {error} "
             f"(set {DEBUG_ENV}=1 for the traceback)")
        return EXIT_TOOL_ERROR


if __name__ == "__main__":
    sys.exit(main())
