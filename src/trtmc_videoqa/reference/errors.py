"""The exceptions of the reference endpoint: a request it refuses (carrying the HTTP answer), and a setting it cannot
start with."""

from __future__ import annotations

from ..errors import UserError


class RequestRejected(Exception):
    """A request answered with ``status`` and an OpenAI-style error whose message says what was wrong."""

    def __init__(self, status: int, message: str, error_type: str = "invalid_request_error") -> None:
        self.status = status
        self.message = message
        self.error_type = error_type
        super().__init__(message)


class ApiKeyEnvUnset(UserError, ValueError):
    """--api-key-env names an environment variable that is empty or unset."""
