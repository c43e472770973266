"""Each run setting is defined once, on its `RunSettings` field: the options of `qualify` and `compare` are derived
from it (flag, default, help), and the typed requests are what the commands run on. In process, no subprocess."""

from __future__ import annotations

import argparse

import pytest
from pydantic import ValidationError

from trtmc_videoqa.cli.main import build_parser
from trtmc_videoqa.cli.qualify_args import settings_from, settings_options
from trtmc_videoqa.cli.requests import compare_request, qualify_request
from trtmc_videoqa.common.errors import BadInput
from trtmc_videoqa.plan.settings import MIB, RunSettings


def _subparser(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = commands.choices[name]
    return parser


@pytest.mark.parametrize("command", ["qualify", "compare"])
def test_every_setting_is_an_option_with_the_field_s_default(command: str) -> None:
    actions = {action.dest: action for action in _subparser(command)._actions}
    overrides = {"video_transport": "http"} if command == "compare" else {}
    for name, info in RunSettings.model_fields.items():
        action = actions[name]
        assert action.option_strings == [settings_options()[name]]
        assert action.default == overrides.get(name, info.default)


def test_the_help_shows_each_setting_s_own_default() -> None:
    help_text = " ".join(_subparser("qualify").format_help().split())
    assert "(default 5)" in help_text and "(default 2)" in help_text and "(default 60)" in help_text
    assert RunSettings().body_limit == 4 * MIB and "clip (default 4 MiB)" in help_text
    assert "data-url (default; base64" in help_text
    compare_help = " ".join(_subparser("compare").format_help().split())
    assert "http (default; an http://127.0.0.1 URL" in compare_help and "data-url (base64" in compare_help


def test_a_request_carries_the_parsed_settings_and_options() -> None:
    args = build_parser().parse_args(
        [
            "qualify",
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--request-timeout",
            "5",
            "--server-setting",
            "a=b",
        ]
    )
    request = qualify_request(args)
    assert request.settings == RunSettings(request_timeout_s=5.0)
    assert request.server_settings == {"a": "b"} and not request.self_test
    assert request.server_urls() == ["http://127.0.0.1:9"]
    assert settings_from(build_parser().parse_args(["qualify"])) == RunSettings()


def test_a_setting_out_of_range_is_a_validation_error_of_its_field() -> None:
    with pytest.raises(ValidationError) as caught:
        qualify_request(build_parser().parse_args(["qualify", "--body-limit", "0"]))
    assert caught.value.errors()[0]["loc"] == ("body_limit",) and settings_options()["body_limit"] == "--body-limit"


def test_compare_makes_its_own_request() -> None:
    request = compare_request(build_parser().parse_args(["compare", "--checkpoint", "org/m"]))
    assert request.settings.video_transport == "http" and request.checkpoint == "org/m"
    assert request.server_urls() == []
    with pytest.raises(ValidationError) as caught:
        compare_request(build_parser().parse_args(["compare", "--startup-timeout", "0"]))
    assert caught.value.errors()[0]["loc"] == ("startup_timeout_s",)
    assert settings_options()["startup_timeout_s"] == "--startup-timeout"


@pytest.mark.parametrize("option", ["--endpoint", "--model", "--native-url"])
def test_a_server_option_given_twice_is_refused_by_name(option: str) -> None:
    """argparse keeps the last of a repeated option: `--endpoint A --endpoint B` measured B alone and said nothing."""
    values = {"--endpoint": "http://127.0.0.1:1", "--model": "m", "--native-url": "http://127.0.0.1:2"}
    argv = ["qualify", *(arg for name, value in values.items() for arg in (name, value)), option, values[option]]
    with pytest.raises(BadInput, match=f"^{option} given 2 times; a run qualifies one server"):
        qualify_request(build_parser().parse_args(argv))


@pytest.mark.parametrize("url", ["http://127.0.0.1:", "http://127.0.0.1:/v1", "http://[::1]:"])
def test_an_endpoint_with_an_empty_port_is_refused(url: str) -> None:
    """`http://127.0.0.1:` parses with no port and went to port 80."""
    with pytest.raises(BadInput, match="^--endpoint names no port after ':'"):
        qualify_request(build_parser().parse_args(["qualify", "--endpoint", url, "--model", "m"]))
