"""`trtmc-videoqa qualify`: its options, the typed request made of them, the run (`runs/qualify.py`, which owns
it), and the rows printed."""

from __future__ import annotations

import argparse
import sys

from ..common.text_escape import one_line
from ..runs.qualify import qualify_inputs, run_qualify
from .dry_run import dry_run
from .qualify_args import add_qualify_arguments, settings_options
from .requests import qualify_request
from .run_output import print_outcome, recorded_argv, run_console


def cmd_qualify(args: argparse.Namespace) -> int:
    """Check every input, then print the plan (--dry-run) or run it and print the rows."""

    request = qualify_request(args)
    workloads, api_key, notes = qualify_inputs(request)
    if request.settings.dry_run:
        return dry_run(request, workloads, notes)
    for note in notes:
        print(f"note: {one_line(note)}", file=sys.stderr)
    return print_outcome(run_qualify(request, workloads, api_key, run_console(request, api_key), recorded_argv()))


def add_arguments(qualify: argparse.ArgumentParser) -> None:
    """The `qualify` command's options; its handler."""

    qualify.description = (
        "Run the step chain for every capable checkpoint of a TRTMC checkout (--trtmc), or for an already running "
        "video chat server (--url; --endpoint is the same option); with neither, the self-test against the "
        "reference endpoint (a test double). Writes result rows and the reports. An option that does not apply to "
        "the way chosen is refused."
    )
    add_qualify_arguments(qualify)
    qualify.set_defaults(handler=cmd_qualify, option_for_field=settings_options())
