"""The typed requests `qualify` and `compare` make of their parsed options, once, at the edge (the models are
`runs/requests.py`'s): below `cli/`, nothing sees the command line. Every run option is a `RunSettings` field,
checked by pydantic; what to qualify or compare is checked here, each refusal naming the option and the fix."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ..common.argv_values import not_an_option
from ..common.errors import BadInput
from ..plan.settings import RunSettings, Way
from ..runs.requests import CompareRequest, QualifyRequest
from .console import say
from .qualify_args import not_applicable, option_ways, settings_from

# The values that reach another program's command line (AIPerf's --model and --tokenizer, trtmc's profile and paths,
# transformers serve's checkpoint, revision, device and dtype) or name a file: none may begin with '-'.
_RUN_VALUES = {"--workload": "a workload file or name", "--tokenizer": "a folder", "--bundle-cache": "a folder"}
_QUALIFY_VALUES = {
    "--trtmc": "the checkout's folder",
    "--model": "the model name the server serves",
    "--server-records": "the records file",
    "--profile": "a profile name",
}
_COMPARE_VALUES = {
    "--trtmc": "the checkout's folder",
    "--checkpoint": "a hub id or a folder",
    "--revision": "a branch, tag or commit",
    "--profile": "a profile name",
    "--device": "a torch device (cuda, cpu)",
    "--dtype": "a torch dtype (auto, bfloat16, ...)",
    "--transformers": "the transformers script",
}


def _no_option_like(args: argparse.Namespace, values: dict[str, str]) -> None:
    """Refuse, naming it, a value that another program would read as an option (common/argv_values.py)."""
    for option, what in values.items():
        given = getattr(args, option.removeprefix("--").replace("-", "_"), None)
        for value in given if isinstance(given, list) else [given]:
            if value is not None:
                not_an_option(str(value), option, what)


def run_settings(args: argparse.Namespace) -> RunSettings:
    """Every run option from the parsed options (a value out of range: a ValidationError of its field)."""
    plain_value("--workload", args.workload)
    _no_option_like(args, _RUN_VALUES)
    if args.out.exists() and not args.out.is_dir():
        raise BadInput(f"--out {args.out} is a file, not a folder; give a new folder or an earlier run's output")
    return settings_from(args)


def qualify_request(args: argparse.Namespace) -> QualifyRequest:
    """The request, or a UserError (or a ValidationError of the settings) naming the option and the fix."""
    url_option = getattr(args, "url_option", "--url")  # --url, or its alias --endpoint: named as the user typed it
    for option in ("url", "model", "native_url"):
        named = url_option if option == "url" else f"--{option.replace('_', '-')}"
        setattr(args, option, _given_once(named, getattr(args, option)))
    if args.trtmc and args.url:
        raise BadInput(f"give --trtmc or {url_option}, not both")
    _refuse_what_does_not_apply(args, "trtmc" if args.trtmc else "url" if args.url else "self-test")
    if args.url and not args.model:
        raise BadInput(f"{url_option} needs --model NAME: the model name the server serves")
    for option, value in (("--model", args.model), *(("--profile", name) for name in args.profile or [])):
        plain_value(option, value)
    _no_option_like(args, _QUALIFY_VALUES)
    _checked_urls({url_option: args.url, "--native-url": args.native_url})
    url = _base_url(url_option, args.url, _CHAT_SUFFIXES)
    native_url = _base_url("--native-url", args.native_url, _NATIVE_SUFFIXES)
    stated = _stated(args.server_setting)
    settings = run_settings(args)
    _check_server_records(args.server_records)
    return QualifyRequest(
        settings=settings,
        trtmc=args.trtmc,
        profiles=args.profile,
        endpoint=url,
        model=args.model,
        server_records=args.server_records,
        native_url=native_url,
        server_settings=stated,
    )


def _refuse_what_does_not_apply(args: argparse.Namespace, way: Way) -> None:
    """The one place an option given to a run it does not apply to is refused (which applies where is data beside
    each option: `option_ways`): silently ignored, `qualify --model foo` would run the self-test."""
    defaults = {name: info.default for name, info in RunSettings.model_fields.items()}
    for dest, (flag, ways) in option_ways().items():
        value = getattr(args, dest, None)
        given = value not in (None, []) if dest not in defaults else value != defaults[dest]
        if given and way not in ways:
            raise BadInput(not_applicable(flag, way, ways))


def compare_request(args: argparse.Namespace) -> CompareRequest:
    """The request, or a UserError (or a ValidationError of the settings) naming the option and the fix."""
    for option in ("checkpoint", "revision", "profile", "device", "dtype"):
        plain_value(f"--{option}", getattr(args, option))
    _no_option_like(args, _COMPARE_VALUES)
    return CompareRequest(
        settings=run_settings(args),
        trtmc=args.trtmc,
        checkpoint=args.checkpoint,
        revision=args.revision,
        profile=args.profile,
        device=args.device,
        dtype=args.dtype,
        transformers=args.transformers,
        media_adaptation=args.media_adaptation,
    )


def _given_once(option: str, values: list[str] | None) -> str | None:
    """The one value of an option a run takes once; given twice, a refusal (a run qualifies one server: the last one
    given would silently be the only one measured)."""
    if values and len(values) > 1:
        raise BadInput(
            f"{option} given {len(values)} times; a run qualifies one server: run qualify once per server, each "
            "with its own --out (then `trtmc-videoqa report DIR1 DIR2` shows them side by side)"
        )
    return values[0] if values else None


def _stated(items: list[str]) -> dict[str, str]:
    stated = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--server-setting {ascii(item)} is not KEY=VALUE")
        plain_value("--server-setting", item)
        stated[key] = value
    return stated


def _check_server_records(records: Path | None) -> None:
    if records is not None and not records.is_file():
        raise BadInput(
            f"--server-records {records}: no such file; give the file the server writes "
            "its per-request records to (trtmc-server --records FILE)"
        )


# The paths a user may copy with the server's base URL (the OpenAI clients' base_url ends in /v1): the request's URL
# is the base, and the tool adds the route. Longest first.
_CHAT_SUFFIXES = ("/v1/chat/completions", "/v1")
_NATIVE_SUFFIXES = ("/v1/tasks/generate", "/v1")


def _base_url(option: str, url: str | None, suffixes: tuple[str, ...]) -> str | None:
    """The server's base URL, in one place for the run and --dry-run alike: a trailing '/' dropped, and a route the
    tool adds itself (`/v1`, `/v1/chat/completions`) taken off, with a note on stderr (sent as given, every request
    would have gone to `.../v1/v1/chat/completions`: a bare 404)."""
    if url is None:
        return None
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if parts.query or parts.fragment:
        return url
    suffix = next((each for each in suffixes if path.endswith(each)), None)
    if suffix is not None:
        path = path.removesuffix(suffix)
        base = urlunsplit(parts._replace(path=path))
        say(f"note: {option} ends in {suffix}: taken as the server's base URL without it (the tool adds the route)")
        return base
    return urlunsplit(parts._replace(path=path))


# What no value given on the command line may hold: it is written into command.txt, the row and every report, where
# a line break (a forged command line, a forged line of output) or a control character has no place.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def plain_value(option: str, value: str | None) -> None:
    """Refuse a value holding a line break or control character, naming the option (the value shown escaped)."""
    if value is not None and _CONTROL.search(value):
        shown = ascii(value)
        raise BadInput(
            f"{option} {shown[:80]}{'...' if len(shown) > 80 else ''} holds a line break or control character; "
            "it is written into command.txt, the row and every report: give it without"
        )


def _checked_urls(urls: dict[str, str | None]) -> None:
    """Each URL given is one a request can go to: http or https, a host, a port that is a number, no white space or
    control character, and no credential. A refusal names the option and never repeats the URL (it may hold a
    key)."""
    for option, url in urls.items():
        if url is None:
            continue
        if _CONTROL.search(url) or any(char.isspace() for char in url):
            raise BadInput(f"{option} holds white space or a control character; give the URL as http://HOST:PORT")
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (a port that is not a number in range raises here)
        except ValueError as error:
            raise BadInput(f"{option} is not a valid URL ({error}); give it as http://HOST:PORT") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadInput(f"{option} is not an http:// or https:// URL with a host; give it as http://HOST:PORT")
        if parts.port is None and parts.netloc.endswith(":"):  # `http://host:` would go to the scheme's port
            raise BadInput(f"{option} names no port after ':'; give it as http://HOST:PORT")
    _no_credential_in_urls(urls)


def _no_credential_in_urls(urls: dict[str, str | None]) -> None:
    """A key inside a URL (http://user:KEY@host) would land in the row, every report, command.txt and `ps`: refused,
    without repeating it."""
    for option, url in urls.items():
        if url and ("@" in (urlsplit(url).netloc or "")):
            raise BadInput(
                f"{option} carries a user name or key before '@': a URL is written to the row, every report and "
                "command.txt; give the server's key with --api-key-env NAME or --api-key-file FILE, and the URL "
                "without it"
            )
