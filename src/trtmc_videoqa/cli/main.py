"""The command line: parses, calls the core rooms, renders. Bad input exits 2 with one message; a tool error 1."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from .. import __version__
from ..common.atomic_write import write_model_atomic, write_text_atomic
from ..common.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_TOOL_ERROR, BadInput, UserError
from ..common.stop_signals import interrupted_by, interrupted_exit_code, stop_signals_interrupt
from ..common.text_escape import ControlFree, one_line, shown_name
from .doctor import add_doctor_parser
from .refresh import add_refresh_parser

if TYPE_CHECKING:
    from ..results import Inventory

    # What `ArgumentParser.add_subparsers()` returns; argparse gives it no public name.
    _Commands = argparse._SubParsersAction[argparse.ArgumentParser]

DEBUG_ENV = "TRTMC_VIDEOQA_DEBUG"


def _say(message: str) -> None:
    """One line on stderr: a value from outside inside the message (a name, a path) never starts a line of its own."""
    print(one_line(message), file=sys.stderr)


# --- inventory ------------------------------------------------------------------------------------------------


# An inventory.json of ours holds about 4 kB per manifest (a 20,000-manifest tree writes 77 MB): --against reads up
# to 1 GiB, a quarter of a million manifests, and refuses more (a device or a stray file of gigabytes is no
# inventory of ours).
MAX_INVENTORY_BYTES = 1 << 30


def _load_inventory_file(path: Path) -> Inventory:
    from ..common.safe_read import UnreadableInput, read_regular_file
    from ..results import Inventory

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
    write_model_atomic(out / "inventory.json", inventory)
    write_text_atomic(out / "inventory.md", render_inventory_markdown(inventory))
    s = inventory.summary
    print(one_line(f"{inventory.layout_description}; commit {inventory.commit}"))
    print(f"{s.rows} rows, {s.in_group} in the group, {s.models} models, {s.variant_rows} variant rows")
    for verdict, count in s.by_verdict.items():
        if count:
            print(f"  {verdict:<22} {count:>4}  (in group {s.in_group_by_verdict.get(verdict, 0)})")
    print(f"capable of temporal video QA: {', '.join(shown_name(p) for p in s.capable) or 'none'}")
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
    print(one_line(f"wrote {out / 'inventory.json'} and {out / 'inventory.md'}"))
    return EXIT_OK


def cmd_matrix(args: argparse.Namespace) -> int:
    from ..inventory import run_inventory

    inventory = run_inventory(args.trtmc)
    # One job per checkpoint: its normal profile. A capable variant runs only when named with --profile.
    capable = set(inventory.summary.capable)
    print(json.dumps([e.profile for e in inventory.entries if e.profile in capable and e.normal_profile]))
    return EXIT_OK


# --- probe ----------------------------------------------------------------------------------------------------


def cmd_probe(args: argparse.Namespace) -> int:
    from ..media import SamplingPolicy, probe_clip, write_strip

    limit = {"max_bytes": args.max_bytes} if args.max_bytes else {}
    manifest = probe_clip(args.clip, decode_all=args.decode_all, **limit)
    try:
        policy = SamplingPolicy.parse(args.policy)
    except ValueError as error:
        raise BadInput(f"--policy {args.policy!r}: {error}") from None
    resolved = policy.resolve(manifest.frames_counted, manifest.fps, manifest.start_time_s)
    output: dict[str, object] = {"manifest": manifest.model_dump(), "sampling": resolved.model_dump(mode="json")}
    if args.strip:
        size = (manifest.width, manifest.height)  # the user's own path: its folder must exist already
        output["strip"] = str(write_strip(args.clip, resolved, args.strip, frame_size=size, make_parents=False))
    print(json.dumps(output, indent=2))
    return EXIT_OK


# --- serve-reference ------------------------------------------------------------------------------------------


def cmd_serve_reference(args: argparse.Namespace) -> int:
    from ..reference import config_from_arguments, serve

    # A setting the config refuses (out of range, a non-loopback host) is a pydantic ValidationError, an unset
    # --api-key-env a UserError: `main` says either in one line.
    serve(config_from_arguments(vars(args)))
    return EXIT_OK


# --- qualify and report ---------------------------------------------------------------------------------------


def cmd_qualify(args: argparse.Namespace) -> int:
    from .qualify import run_qualify
    from .requests import QualifyRequest

    return run_qualify(QualifyRequest.from_cli(args))


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import CompareRequest, run_compare

    return run_compare(CompareRequest.from_cli(args))


def cmd_report(args: argparse.Namespace) -> int:
    from ..report import build_report, frame_strip, write_report

    if args.check_public:
        return _check_public(args.dirs)

    report = build_report(args.dirs, title=args.title)
    out: Path = args.out or args.dirs[0]
    for path in write_report(report, out, frame_strip(report, args.dirs)):
        print(one_line(f"wrote {path}"))
    print(", ".join(f"{status} {count}" for status, count in report.counts.items()))
    return EXIT_OK


def _check_public(directories: list[Path]) -> int:
    """Each directory's public files scanned for this machine's paths, user and host names and known secrets."""
    from ..common.scrub import known_secrets
    from ..publish.check import check_public, run_sentinels
    from ..publish.rewrite import source_tree

    for directory in directories:
        if not directory.is_dir():
            raise BadInput(f"{directory} is not a directory; pass the --out directory of a qualify run")
        sentinels = run_sentinels(directory, extra_paths=[p for p in [source_tree()] if p], secrets=known_secrets())
        scanned = check_public(directory, sentinels, warn=_say)
        print(f"{one_line(directory)}: public check passed ({scanned} text files scanned)")
    return EXIT_OK


# --- schemas --------------------------------------------------------------------------------------------------


def cmd_schemas(args: argparse.Namespace) -> int:
    from ..results import json_schemas

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
        "and how fast.",
    )
    parser.add_argument("--version", action="version", version=f"trtmc-videoqa {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_command in (
        _add_inventory_parser,
        _add_matrix_parser,
        add_doctor_parser,
        _add_probe_parser,
        _add_qualify_parser,
        _add_compare_parser,
        _add_report_parser,
        _add_serve_reference_parser,
        _add_schemas_parser,
        add_refresh_parser,
    ):
        add_command(commands)
    return parser


def _add_inventory_parser(commands: _Commands) -> None:
    inventory = commands.add_parser(
        "inventory",
        help="audit a TRTMC checkout: one row per checkpoint manifest, with verdict and evidence",
        description="Audit a TRTMC checkout (either layout, detected automatically): every checkpoint manifest "
        "becomes a row with its Task, variants, catalog status, verdict about temporal video QA, "
        "the capability gap and the file and line that show it.",
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


def _add_matrix_parser(commands: _Commands) -> None:
    matrix = commands.add_parser(
        "matrix",
        help="print the JSON list of profiles to qualify (each capable checkpoint's normal profile), for a CI matrix",
        description="Audit the checkout and print, as one JSON list, the profiles with a temporal video QA "
        "capability: the normal profile of each such checkpoint (variants run only when named). An empty list is "
        "a valid answer.",
    )
    matrix.add_argument("--trtmc", type=Path, required=True, metavar="PATH", help="root of the TRTMC checkout")
    matrix.set_defaults(handler=cmd_matrix)


def _add_probe_parser(commands: _Commands) -> None:
    probe = commands.add_parser(
        "probe",
        help="probe a clip: frames, fps, duration, codec, sha256 ... as JSON, and the frames a policy picks",
        description="Probe a clip with PyAV and print its manifest as JSON, with the frames a sampling policy "
        "picks; --strip writes those frames side by side as a PNG.",
    )
    probe.add_argument("clip", type=Path, metavar="CLIP", help="the clip file (mp4, webm, mkv, avi, mpg, gif)")
    probe.add_argument("--decode-all", action="store_true", help="count frames by decoding every one")
    probe.add_argument("--max-bytes", type=int, metavar="N", help="refuse a larger file (default 64 MiB)")
    probe.add_argument("--policy", default="uniform:8", help="sampling policy: uniform:N or fps:F[,min=..,max=..,even]")
    probe.add_argument("--strip", type=Path, metavar="FILE.png", help="write the picked frames as one PNG strip")
    probe.set_defaults(handler=cmd_probe)


def _add_qualify_parser(commands: _Commands) -> None:
    from .qualify_args import add_qualify_arguments, settings_options

    qualify = commands.add_parser(
        "qualify",
        help="qualify checkpoints end to end (no arguments: the reference self-test, about a minute)",
        description="Run the step chain for every capable checkpoint of a TRTMC checkout (--trtmc), or for an "
        "already running video chat server (--endpoint); with neither, the self-test against the "
        "reference endpoint (a test double). Writes result rows and the reports.",
    )
    add_qualify_arguments(qualify)
    qualify.set_defaults(handler=cmd_qualify, option_for_field=settings_options())


def _add_compare_parser(commands: _Commands) -> None:
    from .compare import add_compare_arguments
    from .qualify_args import settings_options

    compare = commands.add_parser(
        "compare",
        help="serve a checkpoint with Hugging Face `transformers serve` and qualify it the same way, as a comparison",
        description="Start `transformers serve` on a checkpoint (a hub id, or the checkpoint of a TRTMC profile "
        "with --trtmc and --profile; a local folder too) on loopback, and run the endpoint ladder against it with "
        "the same workload over http. The row is labelled 'comparison (not a TRTMC capability)' and never counts "
        "in the group; `trtmc-videoqa report TRTMC_DIR COMPARE_DIR` shows it beside trtmc-server's.",
    )
    add_compare_arguments(compare)
    compare.set_defaults(handler=cmd_compare, option_for_field=settings_options())


def _add_report_parser(commands: _Commands) -> None:
    report = commands.add_parser(
        "report",
        help="rebuild report.json/md/html and junit.xml from artifact directories, merging several",
        description="Rebuild the reports from the artifacts alone; several directories (one per CI matrix job, "
        "or one checkpoint on two servers) merge into one report with the rows side by side.",
    )
    report.add_argument("dirs", type=Path, nargs="+", metavar="DIR", help="artifact directories of qualify runs")
    report.add_argument("--out", type=Path, metavar="DIR", help="where the reports go (default: the first DIR)")
    report.add_argument("--title", help="the report's title")
    report.add_argument(
        "--check-public",
        action="store_true",
        help="only check: scan every public text file (outside private/ folders) for this machine's absolute paths, "
        "user and host names and known secrets; exit 2 naming file:line for each hit (qualify runs it too)",
    )
    report.set_defaults(handler=cmd_report)


def _add_serve_reference_parser(commands: _Commands) -> None:
    from ..reference import add_reference_arguments

    serve_reference = commands.add_parser(
        "serve-reference",
        help="run the reference endpoint: a video chat server that is a test double",
        description="Serve the reference endpoint on loopback: an OpenAI-compatible video chat server that "
        "decodes the clip and answers the synthetic questions by computation. A test double, never "
        "a TRTMC model.",
    )
    add_reference_arguments(serve_reference)
    serve_reference.set_defaults(handler=cmd_serve_reference)


def _add_schemas_parser(commands: _Commands) -> None:
    schemas = commands.add_parser(
        "schemas",
        help="write the JSON Schemas of the artifacts (inventory.json, ...)",
        description="Write the JSON Schemas exported from the artifact models; the repository commits them.",
    )
    schemas.add_argument(
        "--out", type=Path, default=Path("schemas"), metavar="DIR", help="where the schema files go (default: schemas)"
    )
    schemas.set_defaults(handler=cmd_schemas)


# --- main -----------------------------------------------------------------------------------------------------


def _validation_message(error: ValidationError, option_for_field: Mapping[str, str]) -> str:
    """One line from a pydantic ValidationError: the option (or the model field) and the problem, the first only.

    `option_for_field` names the command-line option a model field comes from; an unnamed field is written as
    pydantic locates it (``faults.error_rate``), and an error of the whole model as ``settings``.
    """
    first = error.errors()[0]
    field = ".".join(str(part) for part in first.get("loc", ()))
    where = option_for_field.get(field, field) or "settings"
    return f"{where}: {first['msg']}"


def main(argv: Sequence[str] | None = None) -> int:
    # Nothing printed drives the terminal: a manifest name or a server's text may hold escape sequences.
    if not isinstance(sys.stdout, ControlFree):
        sys.stdout, sys.stderr = ControlFree(sys.stdout), ControlFree(sys.stderr)
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        with stop_signals_interrupt():
            return handler(args)
    except UserError as error:
        _say(f"trtmc-videoqa {args.command}: {error}")
        return EXIT_BAD_INPUT
    except ValidationError as error:  # an option one of our models refuses (a value out of range, ...)
        _say(f"trtmc-videoqa {args.command}: {_validation_message(error, getattr(args, 'option_for_field', {}))}")
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to say
        return EXIT_OK
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM or SIGHUP (stop_signals): every child was stopped on the way
        by = interrupted_by()
        _say(
            f"trtmc-videoqa {args.command}: {'interrupted' if by == 'interrupted' else f'interrupted ({by})'}; "
            "what was written so far is kept (a run again resumes from it)"
        )
        return interrupted_exit_code()
    except OSError as error:
        # An output or input location we cannot use (read-only, full, missing): the user can fix it.
        # A write error names no file of its own; the output directory is then where it happened.
        where = f" {error.filename}" if error.filename else (f" {args.out}" if getattr(args, "out", None) else "")
        _say(
            f"trtmc-videoqa {args.command}: cannot use{where}: {error.strerror or error}; "
            "choose a writable location with free space"
        )
        return EXIT_BAD_INPUT
    except Exception as error:  # a bug of ours: say so plainly, the traceback only on request
        if os.environ.get(DEBUG_ENV):
            raise
        _say(
            f"trtmc-videoqa {args.command}: internal error: {type(error).__name__}: {error} "
            f"(set {DEBUG_ENV}=1 for the traceback)"
        )
        return EXIT_TOOL_ERROR


if __name__ == "__main__":
    sys.exit(main())
