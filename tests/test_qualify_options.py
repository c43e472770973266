"""Each run setting is defined once, on its `RunSettings` field: the options of `qualify` and `compare` are derived
from it (flag, default, help), and the typed requests are what the commands run on. In process, no subprocess."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from helpers import row, run_main
from pydantic import ValidationError
from shared_runs import SharedRun

from trtmc_videoqa.cli.main import build_parser
from trtmc_videoqa.cli.qualify_args import settings_from, settings_options
from trtmc_videoqa.cli.requests import compare_request, qualify_request
from trtmc_videoqa.common.errors import BadInput
from trtmc_videoqa.common.sizes import parse_size, shown_size
from trtmc_videoqa.plan.settings import MIB, RunSettings, setting_flag

FIXTURES = Path(__file__).parent / "fixtures"


def _subparser(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = commands.choices[name]
    return parser


@pytest.mark.parametrize("command", ["qualify", "compare"])
def test_every_setting_is_an_option_with_the_field_s_default(command: str) -> None:
    """Every setting on qualify; on compare, those that apply to it (the others are refused by name, out of help)."""
    actions = {action.dest: action for action in _subparser(command)._actions}
    overrides = {"video_transport": "http"} if command == "compare" else {}
    for name, info in RunSettings.model_fields.items():
        action = actions[name]
        assert action.option_strings == [settings_options()[name]]
        if command == "qualify" or "compare" in setting_flag(name).ways:
            assert action.default == overrides.get(name, info.default)
        else:
            assert action.help == argparse.SUPPRESS and action.default == argparse.SUPPRESS


def test_the_help_shows_each_setting_s_own_default() -> None:
    help_text = " ".join(_subparser("qualify").format_help().split())
    assert "(default 5)" in help_text and "(default 2)" in help_text and "(default 60)" in help_text
    assert RunSettings().body_limit == 4 * MIB and "clip (default 4 MiB; a size" in help_text
    assert "(default 4 GiB; a size" in help_text and "(default TRTMC_SERVE_TOKEN)" in help_text
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


@pytest.mark.parametrize(
    ("option", "named"), [("--url", "--url"), ("--endpoint", "--endpoint"), ("--model", "--model")]
)
def test_a_server_option_given_twice_is_refused_by_name(option: str, named: str) -> None:
    """argparse keeps the last of a repeated option: `--endpoint A --endpoint B` measured B alone and said nothing.
    `--url` and its alias `--endpoint` are one option: given once each, that is twice (named as last typed)."""
    values = {"--url": "http://127.0.0.1:1", "--model": "m", "--native-url": "http://127.0.0.1:2"}
    argv = ["qualify", *(arg for name, value in values.items() for arg in (name, value))]
    argv += [option, values.get(option, "http://127.0.0.1:3")]
    with pytest.raises(BadInput, match=f"^{named} given 2 times; a run qualifies one server"):
        qualify_request(build_parser().parse_args(argv))


@pytest.mark.parametrize("url", ["http://127.0.0.1:", "http://127.0.0.1:/v1", "http://[::1]:"])
def test_an_endpoint_with_an_empty_port_is_refused(url: str) -> None:
    """`http://127.0.0.1:` parses with no port and went to port 80."""
    with pytest.raises(BadInput, match="^--endpoint names no port after ':'"):
        qualify_request(build_parser().parse_args(["qualify", "--endpoint", url, "--model", "m"]))
    with pytest.raises(BadInput, match="^--url names no port after ':'"):  # each named as the user typed it
        qualify_request(build_parser().parse_args(["qualify", "--url", url, "--model", "m"]))


# --- the conventions users bring (issue 40) --------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["--url", "--endpoint"])
def test_url_is_the_server_s_option_and_endpoint_its_alias(option: str) -> None:
    """AIPerf, GenAI-Perf and vLLM's benchmark name the server --url; --endpoint (this tool's first name) still works,
    the same setting."""
    request = qualify_request(build_parser().parse_args(["qualify", option, "http://127.0.0.1:9", "--model", "m"]))
    assert request.endpoint == "http://127.0.0.1:9" and not request.self_test


@pytest.mark.parametrize(
    ("given", "suffix"),
    [
        ("http://127.0.0.1:9/v1", "/v1"),
        ("http://127.0.0.1:9/v1/", "/v1"),
        ("http://127.0.0.1:9/v1/chat/completions", "/v1/chat/completions"),
        ("http://127.0.0.1:9/", None),
        ("http://127.0.0.1:9", None),
    ],
)
def test_a_url_with_the_route_is_taken_as_its_base_with_a_note(
    given: str, suffix: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--endpoint .../v1` sent every request to .../v1/v1/chat/completions: a bare 404."""
    native = given.replace("/chat/completions", "/tasks/generate")  # the native route's own base, alike
    args = build_parser().parse_args(["qualify", "--url", given, "--model", "m", "--native-url", native])
    request = qualify_request(args)
    assert request.endpoint == "http://127.0.0.1:9" and request.native_url == "http://127.0.0.1:9"
    err = capsys.readouterr().err
    if suffix is None:
        assert err == ""
    else:
        assert f"note: --url ends in {suffix}: taken as the server's base URL" in err


def test_dry_run_plans_the_base_url_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--dry-run accepted `.../v1/chat/completions` and planned it as the server; the run then got a bare 404."""
    url = "http://127.0.0.1:9/v1/chat/completions"
    done = run_main(capsys, "qualify", "--url", url, "--model", "m", "--dry-run", "--out", str(tmp_path / "o"))
    assert done.returncode == 0, done.stderr
    assert "target: http://127.0.0.1:9 model m;" in done.stdout and "/v1" not in done.stdout.split("target:")[1]
    assert done.stderr.count("note: --url ends in /v1/chat/completions") == 1


@pytest.mark.e2e
def test_a_run_given_the_v1_url_measures_the_server(sweep_run: SharedRun) -> None:
    """The run itself (with AIPerf; shared_runs.endpoint_sweep): `--endpoint URL/v1` was a bare 404 at the
    capability check."""
    done = sweep_run.done()
    assert done.returncode == 0, done.stderr
    assert "note: --endpoint ends in /v1" in done.stderr
    measured = row(sweep_run.out, "trtmc-videoqa-reference")
    assert measured.status == "endpoint-qualified" and measured.sweep is not None
    assert all(level.completed == 6 for level in measured.sweep.levels)


def test_a_base_url_under_a_prefix_keeps_it() -> None:
    request = qualify_request(build_parser().parse_args(["qualify", "--url", "http://h:9/proxy/v1", "--model", "m"]))
    assert request.endpoint == "http://h:9/proxy"


@pytest.mark.parametrize(
    ("argv", "option", "words"),
    [
        (["--model", "foo"], "--model", "the self-test"),
        (["--profile", "foo"], "--profile", "the self-test"),
        (["--server-setting", "a=b"], "--server-setting", "the self-test"),
        (["--bundle-cache", "x"], "--bundle-cache", "the self-test"),
        (["--url", "http://127.0.0.1:9", "--model", "m", "--profile", "p"], "--profile", "qualify --url"),
        (["--url", "http://127.0.0.1:9", "--model", "m", "--max-frames", "9"], "--max-frames", "qualify --url"),
        (
            ["--url", "http://127.0.0.1:9", "--model", "m", "--startup-timeout", "9"],
            "--startup-timeout",
            "qualify --url",
        ),
        (["--trtmc", ".", "--model", "m"], "--model", "qualify --trtmc"),
        (["--trtmc", ".", "--native-url", "http://127.0.0.1:9"], "--native-url", "qualify --trtmc"),
        (["--trtmc", ".", "--min-both-right", "0.5"], "--min-both-right", "qualify --trtmc"),
        (["--api-key-file", "k"], "--api-key-file", "the self-test"),
    ],
)
def test_an_option_that_does_not_apply_is_refused_naming_it(
    argv: list[str], option: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`qualify --model foo` and `qualify --profile foo` ran the self-test, the option silently dropped."""
    done = run_main(capsys, "qualify", "--out", str(tmp_path / "out"), *argv)
    assert done.returncode == 2, done.stdout
    assert f"qualify: {option} does not apply to {words}" in done.stderr and "drop it" in done.stderr
    assert not (tmp_path / "out").exists()


def test_an_option_applies_where_it_is_for() -> None:
    parse = build_parser().parse_args
    assert qualify_request(parse(["qualify", "--trtmc", ".", "--profile", "p", "--bundle-cache", "b"])).profiles == [
        "p"
    ]
    with_url = ["qualify", "--url", "http://127.0.0.1:9", "--model", "m", "--min-both-right", "0.5"]
    assert qualify_request(parse(with_url)).settings.min_both_right == 0.5
    assert qualify_request(
        parse(["qualify", "--min-both-right", "0.5", "--api-key-env", "TRTMC_SERVE_TOKEN"])
    ).self_test


@pytest.mark.parametrize("option", ["--bundle-cache", "--max-frames", "--api-key-file"])
def test_compare_refuses_and_hides_the_options_of_qualify_trtmc(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`compare --help` listed TRTMC-only options, and compare took them, to no effect."""
    assert option not in run_main(capsys, "compare", "--help").stdout
    done = run_main(capsys, "compare", "--checkpoint", "org/m", option, "9", "--dry-run")
    assert done.returncode == 2 and f"{option} does not apply to compare" in done.stderr


@pytest.mark.parametrize(
    ("option", "value", "field", "size"),
    [
        ("--aiperf-memory-limit", "4GiB", "aiperf_memory_limit", 4 << 30),
        ("--aiperf-memory-limit", "4096 MiB", "aiperf_memory_limit", 4 << 30),
        ("--body-limit", "512MiB", "body_limit", 512 << 20),
        ("--body-limit", "1000", "body_limit", 1000),
        ("--max-response-bytes", "2.5kib", "max_response_bytes", 2560),
        ("--max-response-bytes", "3MB", "max_response_bytes", 3_000_000),
    ],
)
def test_sizes_take_units(option: str, value: str, field: str, size: int) -> None:
    """--help showed the default as "4096 MiB"; `--aiperf-memory-limit 4GiB` was refused."""
    settings = qualify_request(build_parser().parse_args(["qualify", option, value])).settings
    assert getattr(settings, field) == size


@pytest.mark.parametrize(
    "argv",
    [
        ("qualify", "--aiperf-memory-limit", "4GB?"),
        ("qualify", "--body-limit", "4 gigs"),
        ("compare", "--max-response-bytes=-1MiB", "x"),
        ("probe", "clip.mp4", "--max-bytes", "1e6"),
        ("serve-reference", "--max-body-bytes", "1 PiB"),
    ],
)
def test_a_size_that_is_not_one_is_refused_naming_the_option_and_the_forms(
    argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_main(capsys, *argv)
    assert done.returncode == 2
    option = next(arg for arg in argv if arg.startswith("--")).partition("=")[0]
    assert f"argument {option}: " in done.stderr and "512MiB, 4GiB" in done.stderr


def test_every_size_is_parsed_alike() -> None:
    assert parse_size("4GiB") == parse_size("4096 MiB") == parse_size("4 gib") == parse_size(str(4 << 30))
    assert shown_size(4 << 30) == "4 GiB" and parse_size(shown_size(16 << 20)) == 16 << 20
    assert shown_size(1000) == "1000 bytes"


def test_out_that_is_a_file_is_named_as_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--out FILE` said "File exists; choose a writable location with free space"."""
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    for argv in (("qualify", "--dry-run"), ("qualify",), ("inventory", "--trtmc", str(FIXTURES / "trtmc_e2e"))):
        done = run_main(capsys, *argv, "--out", str(afile))
        assert done.returncode == 2 and f"{afile} is a file, not a folder" in done.stderr, done.stderr
    assert afile.read_text() == "mine\n"


def test_an_unknown_workload_lists_the_built_ins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = run_main(capsys, "qualify", "--workload", "bigbunny", "--dry-run", "--out", str(tmp_path))
    assert done.returncode == 2
    assert "bigbunny: no such workload file, and no built-in workload of that name" in done.stderr
    assert "(bigbuckbunny, synthetic)" in done.stderr


# --- no value becomes another program's option ----------------------------------------------------------------

OPTION_LIKE = "--upload-pack=touch SMUGGLED"


@pytest.mark.parametrize(
    "args",
    [
        ("qualify", "--url", "http://127.0.0.1:9", "--model"),  # AIPerf's --model
        ("qualify", "--trtmc"),  # trtmc build and the server: the checkout
        ("qualify", "--trtmc", "tests/fixtures/trtmc_e2e", "--profile"),
        ("qualify", "--tokenizer"),  # AIPerf's --tokenizer
        ("qualify", "--workload"),
        ("compare", "--checkpoint"),  # transformers serve
        ("compare", "--checkpoint", "org/model", "--revision"),
        ("compare", "--checkpoint", "org/model", "--device"),
        ("compare", "--checkpoint", "org/model", "--dtype"),
    ],
)
def test_a_value_that_another_program_would_read_as_an_option_is_refused(
    args: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    option = args[-1]
    done = run_main(capsys, *args[:-1], f"{option}={OPTION_LIKE}", "--out", str(tmp_path / "o"))
    assert done.returncode == 2, done.stderr
    assert f"{option} '{OPTION_LIKE}' begins with '-'" in done.stderr
    assert not (tmp_path / "o").exists()


def test_streaming_joins_the_cache_key_only_when_given() -> None:
    """--streaming is parsed into the settings; rows measured before it (streaming off) keep their keys, and an
    opt-in given as zero is still given."""
    settings = settings_from(build_parser().parse_args(["qualify", "--streaming"]))
    assert settings.streaming and settings.measured()["streaming"] is True
    assert "streaming" not in RunSettings().measured()
    assert RunSettings(min_both_right=0).measured()["min_both_right"] == 0
