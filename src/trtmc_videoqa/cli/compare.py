"""`trtmc-videoqa compare`: its options, the typed request made of them, the run (`runs/compare.py`, which owns it:
`transformers serve` on the checkpoint, the endpoint ladder against it) and the row printed. The row is labelled
"comparison (not a TRTMC capability)"; `trtmc-videoqa report TRTMC_DIR COMPARE_DIR` shows both."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..common.errors import EXIT_OK
from ..common.text_escape import one_line, shown_name
from ..runs.compare import compare_inputs, comparison_run, run_compare
from .qualify_args import add_run_arguments, settings_options
from .requests import compare_request
from .run_output import print_outcome, recorded_argv, run_console


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("what to compare")
    source.add_argument("--checkpoint", metavar="ID|DIR", help="hub id (org/name) or a local checkpoint folder")
    source.add_argument("--revision", metavar="REV", help="the hub revision to serve (default: main)")
    source.add_argument(
        "--trtmc",
        type=Path,
        metavar="PATH",
        help="a TRTMC checkout: with --profile, serve that profile's checkpoint and revision",
    )
    source.add_argument(
        "--profile", metavar="NAME", help="the TRTMC profile this stands beside (the row: NAME.transformers-serve)"
    )
    source.add_argument("--device", default="cuda", help="the server's --device: cuda (default), cuda:N, cpu, auto")
    source.add_argument("--dtype", default="auto", help="the server's --dtype (default auto: the weights' own)")
    source.add_argument("--transformers", type=Path, metavar="PATH", help="the `transformers` script to run")
    source.add_argument(
        "--media-adaptation",
        choices=["silent-audio", "none"],
        default="silent-audio",
        help="silent-audio (default): a workload copy whose clips carry a silent AAC track and whose requests ask "
        "for the workload's frame count, for transformers serve 5.19-5.24, which reads audio from every video; "
        "none: for a server version without that defect",
    )
    add_run_arguments(parser.add_argument_group("the run"), defaults={"video_transport": "http"}, way="compare")


def cmd_compare(args: argparse.Namespace) -> int:
    """Check every input, then print the plan (--dry-run) or serve, qualify and report."""

    request = compare_request(args)
    comparison = comparison_run(request)
    if request.settings.dry_run:
        print(
            f"comparison: {shown_name(comparison.target.model)} on {comparison.device} with transformers serve "
            f"({comparison.executable.name}), media adaptation {comparison.adaptation}, video transport "
            f"{request.settings.video_transport}; row {shown_name(comparison.profile)}, labelled comparison (not a "
            "TRTMC capability)"
        )
        return EXIT_OK
    workloads, notes = compare_inputs(request)
    for note in notes:
        print(f"note: {one_line(note)}", file=sys.stderr)
    return print_outcome(run_compare(request, comparison, workloads, run_console(request, None), recorded_argv()))


def add_arguments(compare: argparse.ArgumentParser) -> None:
    """The `compare` command's options; its handler."""

    compare.description = (
        "Start `transformers serve` on a checkpoint (a hub id, or the checkpoint of a TRTMC profile "
        "with --trtmc and --profile; a local folder too) on loopback, and run the endpoint ladder against it with "
        "the same workload over http. The row is labelled 'comparison (not a TRTMC capability)' and never counts "
        "in the group; `trtmc-videoqa report TRTMC_DIR COMPARE_DIR` shows it beside trtmc-server's."
    )
    add_compare_arguments(compare)
    compare.set_defaults(handler=cmd_compare, option_for_field=settings_options())
