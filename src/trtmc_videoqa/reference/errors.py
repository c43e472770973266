"""The exceptions of the reference endpoint: a request it refuses (carrying the HTTP answer), and a setting it cannot
start with."""

from __future__ import annotations

import json
from typing import Any

from ..common.errors import UserError


class RequestRejected(Exception):
    """A request answered with ``status`` and an OpenAI-style error whose message says what was wrong."""

    def __init__(self, status: int, message: str, error_type: str = "invalid_request_error") -> None:
        self.status = status
        self.message = message
        self.error_type = error_type
        super().__init__(message)


class ApiKeyEnvUnset(UserError, ValueError):
    """--api-key-env names an environment variable that is empty or unset."""


def json_body(body: bytes) -> Any:
    """The request body as JSON, or a 400 naming why: not UTF-8 JSON, or nested deeper than the parser goes (a
    client's fault, never a 500 of ours)."""
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RequestRejected(400, f"request body is not valid JSON: {error}") from error
    except RecursionError:
        raise RequestRejected(400, "request body is JSON nested too deeply to read; send a chat request") from None
