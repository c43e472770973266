"""The options of `trtmc-videoqa qualify` (and the run options `compare` shares): each run option is derived from
its `RunSettings` field (flag, default, help, the ways in it applies to), so the command line and the settings
cannot disagree. What each option applies to is data beside it: `--help` says it, `compare --help` lists only
compare's, and `cli/requests.py` refuses, in one place, an option given to a run it does not apply to."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic.fields import FieldInfo

from ..common.errors import EXIT_BAD_INPUT
from ..common.sizes import shown_size, size_argument
from ..plan.settings import EVERY_WAY, TRTMC_ONLY, WAY_NAMES, Flag, RunSettings, Way, setting_flag

URL_ONLY: frozenset[Way] = frozenset({"url"})

# What to qualify: --trtmc and --url choose the way in (neither: the self-test); each other option here applies to
# one of them only (by its argparse destination: the flag, and the ways).
SOURCE_WAYS: dict[str, tuple[str, frozenset[Way]]] = {
    "profile": ("--profile", TRTMC_ONLY),
    "model": ("--model", URL_ONLY),
    "server_records": ("--server-records", URL_ONLY),
    "native_url": ("--native-url", URL_ONLY),
    "server_setting": ("--server-setting", URL_ONLY),
}


def add_qualify_arguments(parser: argparse.ArgumentParser) -> None:
    _add_source_arguments(parser.add_argument_group("what to qualify (default: the reference self-test)"))
    add_run_arguments(parser.add_argument_group("the run"))


def _add_source_arguments(source: argparse._ArgumentGroup) -> None:
    source.add_argument("--trtmc", type=Path, metavar="PATH", help="a TRTMC checkout: every capable checkpoint")
    source.add_argument(
        "--profile", action="append", metavar="NAME", help="with --trtmc: only this profile (repeatable)"
    )
    # Kept as lists, so that one given twice is refused by name (argparse's last-one-wins would drop the first).
    # --url is AIPerf's (and vLLM's) name for the server; --endpoint, this tool's first name for it, is the same option.
    source.add_argument(
        "--url",
        "--endpoint",
        dest="url",
        action=_AppendNamed,
        metavar="URL",
        help="an already running OpenAI-compatible video chat server: its base URL, http://HOST:PORT (a URL ending "
        "in /v1 or /v1/chat/completions is taken as its base, with a note)",
    )
    source.add_argument("--model", action="append", metavar="NAME", help="with --url: the model name to send")
    source.add_argument(
        "--server-records",
        type=Path,
        metavar="FILE",
        help="with --url: the per-request records file the server writes (trtmc-server --records), "
        "read after the run for the server's task time when responses carry none",
    )
    source.add_argument(
        "--native-url",
        action="append",
        metavar="URL",
        help="with --url: the server's native Task route, in perf_serving's request shape (POST URL/v1/tasks/generate "
        'with {"request": {"prompt", "video_path": {"$file": ...}, "max_new_tokens", "temperature"}}): each question '
        "and clip once there and once through chat must give the same answer; without it identity is not-applicable",
    )
    source.add_argument(
        "--server-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --url: a server-side sampling or media-cache setting of the server, recorded as stated",
    )


def add_run_arguments(
    run: argparse._ArgumentGroup, defaults: Mapping[str, object] | None = None, way: Way | None = None
) -> None:
    """The options of a run, shared by qualify and compare: one per RunSettings field, in the model's order, its
    flag, default, type or choices, and help all from the field (its range is the model's own: a value out of range
    is refused with the option's name). `defaults` overrides a field's default (by name) for a command whose own
    default differs, and the help says the one in force. `way` (compare): only the options that apply to it; without
    it (qualify), every option, the help naming the ways in of one that applies to some only."""
    for name, info in RunSettings.model_fields.items():
        flag = setting_flag(name)
        if way is not None and way not in flag.ways:  # refused by name, and not in --help
            nargs = 0 if flag.action == "store_true" else "?"  # its value taken (if any), so the refusal is ours
            run.add_argument(
                flag.name,
                nargs=nargs,
                action=_NotHere,
                default=argparse.SUPPRESS,
                help=argparse.SUPPRESS,
                ways=(way, flag.ways),
            )
            continue
        default = (defaults or {}).get(name, info.default)
        helped = _help(info, flag, default) + ("" if way is not None else _ways_note(flag.ways))
        if flag.action == "store_true":
            run.add_argument(flag.name, dest=name, action="store_true", help=helped)
        elif flag.choices:
            run.add_argument(flag.name, dest=name, choices=get_args(info.annotation), default=default, help=helped)
        else:
            run.add_argument(
                flag.name,
                dest=name,
                type=size_argument if flag.size else _listed(info) if flag.listed else _value_type(info),
                default=default,
                metavar=flag.metavar
                or ("SIZE" if flag.size else flag.name.removeprefix("--").replace("-", "_").upper()),
                help=helped,
            )
    run.add_argument("--strict", nargs=0, action=_StrictIsGone, help=argparse.SUPPRESS)


class _StrictIsGone(argparse.Action):
    """`--strict` (exit 1 when an in-group row failed) is gone: the verdict is every run's exit code now."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        parser.exit(
            EXIT_BAD_INPUT,
            f"{parser.prog}: --strict is gone: a failed row exits 3 and a run with nothing qualified 4 without it "
            "(docs/commands.md, exit codes); drop --strict, or give --exit-zero for a report-only job\n",
        )


def option_ways() -> dict[str, tuple[str, frozenset[Way]]]:
    """Each qualify option that applies to some ways in only, by its argparse destination: its flag and the ways."""
    settings = {name: (setting_flag(name).name, setting_flag(name).ways) for name in RunSettings.model_fields}
    return {**{name: item for name, item in settings.items() if item[1] != EVERY_WAY}, **SOURCE_WAYS}


class _AppendNamed(argparse._AppendAction):
    """append, and the option as typed kept (`url_option`), so that a refusal names the one the user wrote."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, *args: Any) -> None:
        super().__call__(parser, namespace, *args)
        typed = args[1] if len(args) > 1 else None
        setattr(namespace, f"{self.dest}_option", typed or self.option_strings[0])


def not_applicable(flag: str, way: Way, ways: frozenset[Way]) -> str:
    """The refusal of an option given to a run it does not apply to."""
    goes_with = " or ".join(WAY_NAMES[each] for each in sorted(ways))
    return f"{flag} does not apply to {WAY_NAMES[way]}: it is for {goes_with} only; drop it"


class _NotHere(argparse.Action):
    """An option of another way in: refused by name (argparse's exit 2), never silently taken."""

    def __init__(self, *args: Any, ways: tuple[Way, frozenset[Way]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ways = ways

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        parser.error(not_applicable(self.option_strings[0], *self.ways))


def _ways_note(ways: frozenset[Way]) -> str:
    """`qualify --help`'s words for an option that applies to some ways in only."""
    named = [
        words for way, words in (("self-test", "the self-test"), ("trtmc", "--trtmc"), ("url", "--url")) if way in ways
    ]
    return "" if len(named) == 3 else f" [{' or '.join(named)} only]"


def settings_options() -> dict[str, str]:
    """The option each RunSettings field comes from: a value the settings refuse is reported under its name."""
    return {name: setting_flag(name).name for name in RunSettings.model_fields}


def settings_from(args: argparse.Namespace) -> RunSettings:
    """The run's settings from the parsed options (a ValidationError names the field; see `settings_options`); a
    field its command has no option for keeps its default."""
    return RunSettings(**{name: getattr(args, name) for name in RunSettings.model_fields if hasattr(args, name)})


def _value_type(info: FieldInfo) -> Callable[[str], Any]:
    """int, float, str or Path: the field's type, without None."""
    kinds = [kind for kind in get_args(info.annotation) if kind is not type(None)] or [info.annotation]
    kind: Callable[[str], Any] = kinds[0]
    return kind


def _listed(info: FieldInfo) -> Callable[[str], tuple[Any, ...]]:
    """AIPerf's list syntax, `1,2,4`: a tuple of the field's item type (int or float); the range is the model's."""
    tuple_type = next(kind for kind in get_args(info.annotation) if kind is not type(None))
    item: Callable[[str], Any] = get_args(tuple_type)[0]
    noun = "whole numbers" if item is int else "numbers"

    def parse(text: str) -> tuple[Any, ...]:
        try:
            return tuple(item(part) for part in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"give {noun}, comma-separated (1,2,4); got {text!r}") from None

    return parse


def _help(info: FieldInfo, flag: Flag, default: object) -> str:
    text = info.description or ""
    if flag.choices:
        named = [
            f"{choice} ({'default; ' if choice == default else ''}{words})" for choice, words in flag.choices.items()
        ]
        return f"{text}: {', '.join(named[:-1])} or {named[-1]}"
    if not flag.show_default or default is None or flag.action == "store_true":
        return text
    if flag.size and isinstance(default, int):
        return f"{text} (default {shown_size(default)}; a size: 512MiB, 4GiB or bytes)"
    return f"{text} (default {default:g})" if isinstance(default, float) else f"{text} (default {default})"
