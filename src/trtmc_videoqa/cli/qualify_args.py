"""The options of `trtmc-videoqa qualify` (and the run options `compare` shares): each run option is derived from
its `RunSettings` field (flag, default, help), so the command line and the settings cannot disagree."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_args

from pydantic.fields import FieldInfo

from ..common.errors import EXIT_BAD_INPUT
from ..plan.settings import MIB, Flag, RunSettings, setting_flag


def add_qualify_arguments(parser: argparse.ArgumentParser) -> None:
    _add_source_arguments(parser.add_argument_group("what to qualify (default: the reference self-test)"))
    add_run_arguments(parser.add_argument_group("the run"))


def _add_source_arguments(source: argparse._ArgumentGroup) -> None:
    source.add_argument("--trtmc", type=Path, metavar="PATH", help="a TRTMC checkout: every capable checkpoint")
    source.add_argument("--profile", action="append", metavar="NAME", help="only this profile (repeatable)")
    # Kept as lists, so that one given twice is refused by name (argparse's last-one-wins would drop the first).
    source.add_argument(
        "--endpoint", action="append", metavar="URL", help="an already running OpenAI-compatible video chat server"
    )
    source.add_argument("--model", action="append", metavar="NAME", help="the model name to send to --endpoint")
    source.add_argument(
        "--server-records",
        type=Path,
        metavar="FILE",
        help="the per-request records file --endpoint's server writes (trtmc-server --records), "
        "read after the run for the server's task time when responses carry none",
    )
    source.add_argument(
        "--native-url",
        action="append",
        metavar="URL",
        help="--endpoint's native Task route, in perf_serving's request shape (POST URL/v1/tasks/generate with "
        '{"request": {"prompt", "video_path": {"$file": ...}, "max_new_tokens", "temperature"}}): each question and '
        "clip once there and once through chat must give the same answer; without it identity is not-applicable",
    )
    source.add_argument(
        "--server-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server-side sampling or media-cache setting of --endpoint, recorded as stated",
    )


def add_run_arguments(run: argparse._ArgumentGroup, defaults: Mapping[str, object] | None = None) -> None:
    """The options of a run, shared by qualify and compare: one per RunSettings field, in the model's order, its
    flag, default, type or choices, and help all from the field (its range is the model's own: a value out of range
    is refused with the option's name). `defaults` overrides a field's default (by name) for a command whose own
    default differs, and the help says the one in force."""
    for name, info in RunSettings.model_fields.items():
        flag = setting_flag(name)
        default = (defaults or {}).get(name, info.default)
        helped = _help(info, flag, default)
        if flag.action == "store_true":
            run.add_argument(flag.name, dest=name, action="store_true", help=helped)
        elif flag.choices:
            run.add_argument(flag.name, dest=name, choices=get_args(info.annotation), default=default, help=helped)
        else:
            run.add_argument(
                flag.name,
                dest=name,
                type=_value_type(info),
                default=default,
                metavar=flag.metavar or flag.name.removeprefix("--").replace("-", "_").upper(),
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


def settings_options() -> dict[str, str]:
    """The option each RunSettings field comes from: a value the settings refuse is reported under its name."""
    return {name: setting_flag(name).name for name in RunSettings.model_fields}


def settings_from(args: argparse.Namespace) -> RunSettings:
    """The run's settings from the parsed options (a ValidationError names the field; see `settings_options`)."""
    return RunSettings(**{name: getattr(args, name) for name in RunSettings.model_fields})


def _value_type(info: FieldInfo) -> Callable[[str], Any]:
    """int, float, str or Path: the field's type, without None."""
    kinds = [kind for kind in get_args(info.annotation) if kind is not type(None)] or [info.annotation]
    kind: Callable[[str], Any] = kinds[0]
    return kind


def _help(info: FieldInfo, flag: Flag, default: object) -> str:
    text = info.description or ""
    if flag.choices:
        named = [
            f"{choice} ({'default; ' if choice == default else ''}{words})" for choice, words in flag.choices.items()
        ]
        return f"{text}: {', '.join(named[:-1])} or {named[-1]}"
    if not flag.show_default or default is None or flag.action == "store_true":
        return text
    if flag.in_mib and isinstance(default, int) and default % MIB == 0:
        return f"{text} (default {default // MIB} MiB)"
    return f"{text} (default {default:g})" if isinstance(default, float) else f"{text} (default {default})"
