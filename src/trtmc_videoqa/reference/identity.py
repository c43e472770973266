"""Request identity and the test-double label on every response: an ASGI middleware around the whole app.

An incoming X-Request-ID is kept (AIPerf sends one per request and joins its records on it); without one the
endpoint makes ``req-<uuid4>``. Either way it is echoed, with X-Served-By, on every response.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from .labels import REQUEST_ID_HEADER, SERVED_BY, SERVED_BY_HEADER
from .responses import error_body

# Visible ASCII, bounded: an id that cannot be written back into a header or a record unchanged is refused,
# because silently replacing it would break the join with the client's records.
_VALID_REQUEST_ID = re.compile(r"^[\x21-\x7e]{1,200}$")

Scope = dict[str, Any]


def new_request_id() -> str:
    return f"req-{uuid.uuid4()}"


class IdentityMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = [value for name, value in scope["headers"] if name == REQUEST_ID_HEADER.lower().encode()]
        request_id = incoming[0].decode("latin-1") if incoming else new_request_id()
        valid = bool(_VALID_REQUEST_ID.match(request_id))
        if not valid:
            request_id = new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        identity = [
            (REQUEST_ID_HEADER.lower().encode(), request_id.encode()),
            (SERVED_BY_HEADER.lower().encode(), SERVED_BY.encode()),
        ]

        async def send_with_identity(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *identity]}
            await send(message)

        if not valid:
            await _refuse_request_id(send_with_identity)
            return
        await self.app(scope, receive, send_with_identity)


async def _refuse_request_id(send: Any) -> None:
    body = json.dumps(
        error_body(400, f"{REQUEST_ID_HEADER} must be 1-200 visible ASCII characters", "invalid_request_error")
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
