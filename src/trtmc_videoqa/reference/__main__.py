"""``python -m trtmc_videoqa.reference [flags]``: serve the reference endpoint as its own process.

Writes one line to stderr, "<label> listening on URL", once the port is bound.
"""

from __future__ import annotations

import signal
import sys

from pydantic import ValidationError

from .cli_args import build_parser, config_from_arguments
from .labels import TEST_DOUBLE_LABEL
from .server import serve


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    try:
        config = config_from_arguments(vars(arguments))
    except (ValidationError, ValueError) as error:
        parser.error(str(error))
    try:
        return serve(
            config,
            on_listening=lambda url: print(f"{TEST_DOUBLE_LABEL} listening on {url}", file=sys.stderr, flush=True),
        )
    except ValueError as error:  # e.g. --api-key-env naming an unset variable
        parser.error(str(error))
    except KeyboardInterrupt:  # uvicorn re-raises SIGINT after its graceful shutdown; no traceback for Ctrl-C
        return 128 + signal.SIGINT


if __name__ == "__main__":
    raise SystemExit(main())
