"""`trtmc-videoqa serve-reference`: the reference endpoint, a test double, on loopback."""

from __future__ import annotations

import argparse

from ..common.atomic_write import check_target
from ..common.errors import EXIT_OK
from ..reference import add_reference_arguments, config_from_arguments, serve


def cmd_serve_reference(args: argparse.Namespace) -> int:

    # A setting the config refuses (out of range, a non-loopback host) is a pydantic ValidationError, an unset
    # --api-key-env a UserError: `main` says either in one line.
    config = config_from_arguments(vars(args))
    if config.url_file is not None:  # a --url-file it could never write, refused before the server's imports
        check_target(config.url_file, make_parents=False)

    # The URL on stdout, one line, once the port is bound and listening (a connection waits there until the
    # server takes it): what a user or a script needs to point a client at it.
    serve(config, on_listening=lambda url: print(url, flush=True))
    return EXIT_OK


def add_arguments(serve_reference: argparse.ArgumentParser) -> None:
    """The `serve-reference` command's options; its handler."""

    serve_reference.description = (
        "Serve the reference endpoint on loopback: an OpenAI-compatible video chat server that "
        "decodes the clip and answers the synthetic questions by computation. A test double, never "
        "a TRTMC model. Prints its base URL on stdout once it listens."
    )
    add_reference_arguments(serve_reference)
    serve_reference.set_defaults(handler=cmd_serve_reference)
