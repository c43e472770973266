"""The reference endpoint's command-line flags, both ways: flags -> ReferenceConfig, and config -> flags.

``cli/main.py`` (serve-reference) adds these flags to its own parser; ``__main__`` and ``argv_for_subprocess`` use
them too, so a config survives the trip to a separate process unchanged. The parsed flags reach the config as a
plain mapping (``vars()`` of what was parsed): nothing past the parser takes the parsed arguments themselves.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..common.sizes import shown_size, size_argument
from .config import (
    DEFAULT_CAPACITY,
    DEFAULT_HOST,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_SAMPLING_POLICY,
    MAX_CAPACITY,
    FaultKnobs,
    ReferenceConfig,
)
from .labels import DEFAULT_MODEL_NAME


def add_reference_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    listen = parser.add_argument_group("listening (loopback only unless --allow-non-loopback)")
    listen.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    listen.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default)")
    listen.add_argument("--allow-non-loopback", action="store_true", help="allow a host beyond this machine")
    listen.add_argument("--url-file", type=Path, help="write the base URL here once the port is bound")
    serving = parser.add_argument_group("serving")
    serving.add_argument(
        "--model-name",
        default=DEFAULT_MODEL_NAME,
        help=f"model id to serve (must say 'reference'; default {DEFAULT_MODEL_NAME})",
    )
    serving.add_argument(
        "--sampling-policy",
        default=DEFAULT_SAMPLING_POLICY,
        help=f"frames the endpoint samples, a media.sampling spec (default {DEFAULT_SAMPLING_POLICY})",
    )
    serving.add_argument(
        "--max-body-bytes",
        type=size_argument,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="SIZE",
        help=f"larger request bodies get HTTP 413 (default {shown_size(DEFAULT_MAX_BODY_BYTES)}; a size: 512MiB, "
        "4GiB or bytes)",
    )
    serving.add_argument(
        "--capacity",
        type=int,
        default=DEFAULT_CAPACITY,
        metavar="N",
        help=f"requests whose task runs at once, 1 to {MAX_CAPACITY}; the others queue (default {DEFAULT_CAPACITY}, "
        "one lane like perf_serving)",
    )
    serving.add_argument(
        "--stream",
        action="store_true",
        help="accept stream=true and answer in server-sent events, the timing in the last chunk (default: refused "
        "with 400, as trtmc-server does)",
    )
    serving.add_argument("--records", type=Path, help="append one JSONL record per chat or native request here")
    serving.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="require 'Authorization: Bearer <key>' on /v1/*, the key read from this variable",
    )
    _add_fault_arguments(parser)
    return parser


def _add_fault_arguments(parser: argparse.ArgumentParser) -> None:
    faults = parser.add_argument_group("fault knobs (tests)")
    faults.add_argument("--added-task-ms", type=float, default=0.0, help="sleep this long inside the timed task")
    faults.add_argument(
        "--error-rate",
        type=float,
        default=0.0,
        help="answer --error-status to chat request n when floor(n*rate) > floor((n-1)*rate)",
    )
    faults.add_argument(
        "--error-status",
        type=int,
        default=500,
        help="HTTP status (4xx or 5xx) of the errors --error-rate injects (default 500)",
    )
    faults.add_argument("--crash-after", type=int, help="answer N chat requests, then exit hard on the next")
    faults.add_argument(
        "--slow-after",
        type=int,
        metavar="N",
        help="--added-task-ms only from request N+1 of each route on (the first N answer at once)",
    )
    faults.add_argument("--ready-after-s", type=float, default=0.0, help="/health/ready says 503 until then")
    faults.add_argument("--ready-when-file", type=Path, help="/health/ready says 503 until this file exists")
    faults.add_argument(
        "--identity-drift-rate",
        type=float,
        default=0.0,
        help="native Task request n answers other than chat would (the answer behind a marker word) when "
        "floor(n*rate) > floor((n-1)*rate): chat and native disagree on that share of (question, clip) pairs",
    )
    faults.add_argument(
        "--answer-text",
        metavar="TEXT",
        help="answer every chat and native request with TEXT instead of the computed answer",
    )
    faults.add_argument(
        "--omit-task-time-rate",
        type=float,
        default=0.0,
        help="chat request n carries no trtmc_timing (and its record no task times) when "
        "floor(n*rate) > floor((n-1)*rate)",
    )
    faults.add_argument(
        "--refuse-data-urls",
        action="store_true",
        help="answer a data-URL video with HTTP 500 'Incorrect format used for video...' (as transformers serve "
        "does); loopback http(s) video URLs are fetched and answered",
    )


def build_parser() -> argparse.ArgumentParser:
    return add_reference_arguments(
        argparse.ArgumentParser(
            prog="python -m trtmc_videoqa.reference",
            description="The reference endpoint: a test double for a video-capable trtmc-server (not a TRTMC model).",
        )
    )


def config_from_arguments(options: Mapping[str, Any]) -> ReferenceConfig:
    """The config from the parsed flags by their destination names (`vars()` of what `build_parser` or
    `add_reference_arguments` parsed; other keys are ignored). Raises pydantic.ValidationError (a ValueError) naming
    the bad flag's field."""
    return ReferenceConfig(
        host=options["host"],
        port=options["port"],
        allow_non_loopback=options["allow_non_loopback"],
        url_file=options["url_file"],
        model_name=options["model_name"],
        sampling_policy=options["sampling_policy"],
        max_body_bytes=options["max_body_bytes"],
        records_path=options["records"],
        api_key_env=options["api_key_env"],
        capacity=options["capacity"],
        stream=options["stream"],
        faults=FaultKnobs(
            added_task_ms=options["added_task_ms"],
            error_rate=options["error_rate"],
            error_status=options["error_status"],
            crash_after=options["crash_after"],
            slow_after=options["slow_after"],
            ready_after_s=options["ready_after_s"],
            ready_when_file=options["ready_when_file"],
            identity_drift_rate=options["identity_drift_rate"],
            answer_text=options["answer_text"],
            omit_task_time_rate=options["omit_task_time_rate"],
            refuse_data_urls=options["refuse_data_urls"],
        ),
    )


def argv_from_config(config: ReferenceConfig) -> list[str]:
    argv = [
        "--host",
        config.host,
        "--port",
        str(config.port),
        "--model-name",
        config.model_name,
        "--sampling-policy",
        config.sampling_policy,
        "--max-body-bytes",
        str(config.max_body_bytes),
        "--added-task-ms",
        repr(config.faults.added_task_ms),
        "--error-rate",
        repr(config.faults.error_rate),
        "--error-status",
        str(config.faults.error_status),
        "--ready-after-s",
        repr(config.faults.ready_after_s),
        "--identity-drift-rate",
        repr(config.faults.identity_drift_rate),
        "--omit-task-time-rate",
        repr(config.faults.omit_task_time_rate),
    ]
    if config.allow_non_loopback:
        argv.append("--allow-non-loopback")
    if config.capacity != DEFAULT_CAPACITY:  # the default left out: the commands rows recorded stay as they were
        argv += ["--capacity", str(config.capacity)]
    if config.stream:
        argv.append("--stream")
    if config.faults.refuse_data_urls:
        argv.append("--refuse-data-urls")
    if config.url_file is not None:
        argv += ["--url-file", str(config.url_file)]
    if config.records_path is not None:
        argv += ["--records", str(config.records_path)]
    if config.api_key_env is not None:
        argv += ["--api-key-env", config.api_key_env]
    if config.faults.crash_after is not None:
        argv += ["--crash-after", str(config.faults.crash_after)]
    if config.faults.slow_after is not None:
        argv += ["--slow-after", str(config.faults.slow_after)]
    if config.faults.ready_when_file is not None:
        argv += ["--ready-when-file", str(config.faults.ready_when_file)]
    if config.faults.answer_text is not None:
        argv += [f"--answer-text={config.faults.answer_text}"]  # one token, even for a text that starts with '-'
    return argv


def serve_command(config: ReferenceConfig) -> list[str]:
    """The command a user types to serve this config (its records file, a raw log, left out)."""
    return ["trtmc-videoqa", "serve-reference", *argv_from_config(config.model_copy(update={"records_path": None}))]


def argv_for_subprocess(config: ReferenceConfig) -> list[str]:
    """The argv that runs this config as a separate process: ``[python, -m, trtmc_videoqa.reference, ...]``. Here,
    not beside the server: the process that starts one loads neither FastAPI nor the clip decoding."""
    return [sys.executable, "-m", "trtmc_videoqa.reference", *argv_from_config(config)]
