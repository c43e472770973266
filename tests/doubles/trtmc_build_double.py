"""TEST DOUBLE for `trtmc build HF_ID --output X.bundle [--max-cache-length N] [--precision P]`: writes a labelled
fake bundle."""

import argparse
import json
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(prog="trtmc (test double)")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build")
    build.add_argument("checkpoint")
    build.add_argument("--output", type=Path, required=True)
    build.add_argument("--max-cache-length", type=int)
    build.add_argument("--precision", default="fp32")
    args = parser.parse_args()
    header = {
        "format": 1,
        "family": "test-double",
        "checkpoint": args.checkpoint,
        "backend": "none",
        "test_double": True,
        "max_cache_length": args.max_cache_length,
        "precision": args.precision,
    }  # the row reads it back from here
    args.output.write_bytes(json.dumps(header, sort_keys=True).encode() + b"\n" + b"\0" * 64)
    if os.environ.get("TRTMC_BUILD_DOUBLE_DIES_AFTER_WRITING") == "1":  # a build killed after writing part of it
        print("test double: dying after writing part of the bundle", file=sys.stderr)
        return 9
    if os.environ.get("HF_TOKEN"):  # as a careless tool would: it prints the token (qualify must scrub its log)
        print(f"test double: downloading {args.checkpoint} with hub token {os.environ['HF_TOKEN']}", file=sys.stderr)
    print(f"test double: wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
