"""`trtmc-videoqa schemas`: the artifacts' JSON Schemas written out (the repository commits them)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..common.atomic_write import write_text_atomic
from ..common.errors import EXIT_OK
from ..results import json_schemas


def cmd_schemas(args: argparse.Namespace) -> int:

    for name, schema in json_schemas().items():
        path = write_text_atomic(args.out / name, json.dumps(schema, indent=2, sort_keys=True) + "\n")
        print(f"wrote {path}")
    return EXIT_OK


def add_arguments(schemas: argparse.ArgumentParser) -> None:
    """The `schemas` command's options; its handler."""
    schemas.description = "Write the JSON Schemas exported from the artifact models; the repository commits them."
    schemas.add_argument(
        "--out", type=Path, default=Path("schemas"), metavar="DIR", help="where the schema files go (default: schemas)"
    )
    schemas.set_defaults(handler=cmd_schemas)
