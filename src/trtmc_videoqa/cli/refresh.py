"""`trtmc-videoqa refresh`: its options, the typed request (`inventory.refresh.RefreshRequest`) made of them, and
what it prints: the group's line, where the reconciliation is, and the exit code."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..common.text_escape import one_line
from ..inventory.refresh import EXIT_NEW_CAPABLE, RefreshRequest, exit_code, run_refresh


def cmd_refresh(args: argparse.Namespace) -> int:
    reconciliation, markdown = run_refresh(
        RefreshRequest(
            out=args.out,
            ref=args.ref,
            trtmc=args.trtmc,
            main=args.main,
            main_tree=args.main_tree,
            main_commit=args.main_commit,
            cache=args.cache,
            fail_on_new_capable=args.fail_on_new_capable,
        )
    )
    print(reconciliation.line)
    print(one_line(f"wrote {markdown}"))
    return exit_code(reconciliation, fail_on_new_capable=args.fail_on_new_capable)


def add_arguments(refresh: argparse.ArgumentParser) -> None:
    """The `refresh` command's options; its handler."""
    refresh.description = (
        "Fetch a ref of TRTMC (default: main of the pin file's repository) with git into a cache, audit "
        "it and the pinned commit, and write refresh/{inventory.pinned.json, inventory.main.json, "
        "reconciliation.json, reconciliation.md}: the group's changes first, the rest counted."
    )
    refresh.add_argument(
        "--trtmc", type=Path, metavar="PATH", help="the pinned checkout (default: the pin's commit, fetched)"
    )
    refresh.add_argument(
        "--main", metavar="GIT_URL_OR_PATH", help="the repository to fetch main from (default: the pin file's)"
    )
    refresh.add_argument("--ref", default="main", help="the ref to compare with the pin (default: main)")
    refresh.add_argument("--main-tree", type=Path, metavar="DIR", help="the ref's tree, already fetched (no git)")
    refresh.add_argument("--main-commit", metavar="SHA", help="the commit --main-tree is")
    refresh.add_argument("--out", type=Path, default=Path("refresh"), metavar="DIR", help="default: refresh")
    refresh.add_argument(
        "--cache", type=Path, metavar="DIR", help="the git cache (default: ~/.cache/trtmc-videoqa/git)"
    )
    refresh.add_argument(
        "--fail-on-new-capable",
        action="store_true",
        help=f"exit {EXIT_NEW_CAPABLE} when a checkpoint that is temporal-video-qa joined the group or changed to it",
    )
    refresh.set_defaults(handler=cmd_refresh)
