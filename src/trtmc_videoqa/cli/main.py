"""The command line's entry: a table of commands, each one module of cli/ whose options are built (and whose module
is imported) only for the command that runs; then the one place where errors become exit codes. Bad input exits 2
with one message; a check that did not hold 3, with one message; a tool error 1; a stop signal 128 + its number. A
run's own verdict (3, 4) is its handler's return (runs/verdict.py); the table is in docs/commands.md."""

from __future__ import annotations

import argparse
import errno
import gc
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from pydantic import ValidationError

from ..common.errors import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, EXIT_TOOL_ERROR, CheckNotHeld, UserError
from ..common.stop_signals import interrupted_by, interrupted_exit_code, stop_signals_interrupt
from ..common.text_escape import ControlFree
from .console import say

DEBUG_ENV = "TRTMC_VIDEOQA_DEBUG"
# httpx loads its own command-line client at its first import wherever rich, click and pygments are installed (AIPerf
# installs them): about 50 ms of every run's start, for a client our command line never runs.
HTTPX_CLI = "httpx._main"


@dataclass(frozen=True)
class Command:
    """One command: the module of cli/ with its `add_arguments(parser)` (which sets the handler), and its help."""

    module: str
    help: str


# In the order `--help` lists them.
COMMANDS: dict[str, Command] = {
    "inventory": Command(
        "inventory", "audit a TRTMC checkout: one row per checkpoint manifest, with verdict and evidence"
    ),
    "matrix": Command(
        "matrix",
        "print the JSON list of profiles to qualify (each capable checkpoint's normal profile), for a CI matrix",
    ),
    "doctor": Command("doctor", "check this machine: Python, PyAV codecs, aiperf version, loopback ports, Docker, GPU"),
    "probe": Command(
        "probe", "probe a clip: frames, fps, duration, codec, sha256 ... as JSON, and the frames a policy picks"
    ),
    "qualify": Command(
        "qualify", "qualify checkpoints end to end (no arguments: the reference self-test, 35 s to 2 min)"
    ),
    "compare": Command(
        "compare",
        "serve a checkpoint with Hugging Face `transformers serve` and qualify it the same way, as a comparison",
    ),
    "report": Command("report", "rebuild report.json/md/html and junit.xml from artifact directories, merging several"),
    "control-model": Command(
        "control_model", "print the folder of the shipped control model (or its order-blind twin), to serve it"
    ),
    "serve-reference": Command(
        "serve_reference", "run the reference endpoint: a video chat server that is a test double"
    ),
    "schemas": Command("schemas", "write the JSON Schemas of the artifacts (inventory.json, ...)"),
    "refresh": Command("refresh", "audit TRTMC main beside the pinned commit; what changed in the group"),
}


class _Version(argparse.Action):
    """argparse's `version` action, the version read only when asked for (reading it loads the package metadata)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from .. import __version__  # lazy: reading it loads the package metadata

        print(f"trtmc-videoqa {__version__}")
        parser.exit()


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser. Given `argv`, only the command it names gets its options, so only that command's module is
    imported; without it, every command does (for tests and documentation)."""
    parser = argparse.ArgumentParser(
        prog="trtmc-videoqa",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=30, width=110),
        description="Which TRTMC checkpoints answer a temporal question about a short clip through trtmc-server, "
        "and how fast.",
    )
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = None if argv is None else next((arg for arg in argv if not arg.startswith("-")), "")
    for name, command in COMMANDS.items():
        subparser = commands.add_parser(name, help=command.help)
        if chosen is None or chosen == name:
            import_module(f"{__package__}.{command.module}").add_arguments(subparser)
    return parser


def _validation_message(error: ValidationError, option_for_field: Mapping[str, str]) -> str:
    """One line from a pydantic ValidationError: the option (or the model field) and the problem, the first only.

    `option_for_field` names the command-line option a model field comes from; an unnamed field is written as
    pydantic locates it (``faults.error_rate``), and an error of the whole model as ``settings``.
    """
    first = error.errors()[0]
    field = ".".join(str(part) for part in first.get("loc", ()))
    where = option_for_field.get(field, field) or "settings"
    return f"{where}: {first['msg']}"


def skip_httpx_cli() -> None:
    """Make httpx, when it is first imported in this process, keep its stub `main` instead of loading its
    command-line client (it does so where that cannot be imported). Nothing of ours runs `httpx.main`."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault(HTTPX_CLI, None)  # type: ignore[arg-type]  # None there: "cannot be imported"


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (`argv`, or this process's own) run; its exit code. Given none (the console script, `python
    -m`), the process ends right after: what it built is left to the exit. Python's exit would otherwise walk every
    object still alive in its last garbage collections, 0.1 to 0.3 s after a run; frozen, they are freed with the
    process (the exit's own steps still run: atexit, flushing the output, module teardown)."""
    code = _command(argv)
    if argv is None:
        gc.freeze()
    return code


def _command(argv: Sequence[str] | None) -> int:
    skip_httpx_cli()
    # Nothing printed drives the terminal: a manifest name or a server's text may hold escape sequences.
    if not isinstance(sys.stdout, ControlFree):
        sys.stdout, sys.stderr = ControlFree(sys.stdout), ControlFree(sys.stderr)
    args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        with stop_signals_interrupt():
            return handler(args)
    except CheckNotHeld as error:  # a verdict (a public file names this machine), never bad input
        say(f"trtmc-videoqa {args.command}: {error}")
        return EXIT_FAILED
    except UserError as error:
        say(f"trtmc-videoqa {args.command}: {error}")
        return EXIT_BAD_INPUT
    except ValidationError as error:  # an option one of our models refuses (a value out of range, ...)
        say(f"trtmc-videoqa {args.command}: {_validation_message(error, getattr(args, 'option_for_field', {}))}")
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to say
        return EXIT_OK
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM or SIGHUP (stop_signals): every child was stopped on the way
        by = interrupted_by()
        say(
            f"trtmc-videoqa {args.command}: {'interrupted' if by == 'interrupted' else f'interrupted ({by})'}; "
            "what was written so far is kept (a run again resumes from it)"
        )
        return interrupted_exit_code()
    except OSError as error:
        # An output or input location we cannot use (read-only, full, missing): the user can fix it.
        # A write error names no file of its own; the output directory is then where it happened.
        where = f" {error.filename}" if error.filename else (f" {args.out}" if getattr(args, "out", None) else "")
        in_the_way = _file_in_the_way(error)
        if in_the_way is not None:
            say(f"trtmc-videoqa {args.command}: {in_the_way} is a file, not a folder; give a folder there")
            return EXIT_BAD_INPUT
        say(
            f"trtmc-videoqa {args.command}: cannot use{where}: {error.strerror or error}; "
            "choose a writable location with free space"
        )
        return EXIT_BAD_INPUT
    except Exception as error:  # a bug of ours: say so plainly, the traceback only on request
        if os.environ.get(DEBUG_ENV):
            raise
        say(
            f"trtmc-videoqa {args.command}: internal error: {type(error).__name__}: {error} "
            f"(set {DEBUG_ENV}=1 for the traceback)"
        )
        return EXIT_TOOL_ERROR


def _file_in_the_way(error: OSError) -> Path | None:
    """The file where a folder was wanted (`--out FILE`: "File exists" or "Not a directory"), if that is the
    error."""
    if error.errno not in (errno.EEXIST, errno.ENOTDIR) or not error.filename:
        return None
    path = Path(os.fsdecode(error.filename))
    return next((each for each in (path, *path.parents) if each.exists() and not each.is_dir()), None)


if __name__ == "__main__":
    sys.exit(main())
