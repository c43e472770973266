"""The one exception the reference endpoint raises for a request it refuses, carrying the HTTP answer."""

from __future__ import annotations


class RequestRejected(Exception):
    """A request answered with ``status`` and an OpenAI-style error whose message says what was wrong."""

    def __init__(self, status: int, message: str, error_type: str = "invalid_request_error") -> None:
        self.status = status
        self.message = message
        self.error_type = error_type
        super().__init__(message)
