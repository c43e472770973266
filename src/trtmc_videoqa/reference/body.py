"""Read a request body under a byte limit: the declared Content-Length first, then the bytes really read
(a chunked body, or a client that lies about its length, is stopped at the limit, not buffered whole)."""

from __future__ import annotations

from starlette.requests import Request

from .errors import RequestRejected


def _too_large(size_text: str, limit: int) -> RequestRejected:
    return RequestRejected(
        413,
        f"request body is {size_text} bytes, over the {limit:,}-byte limit (--max-body-bytes)",
        "request_too_large",
    )


async def read_body_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            declared_size = int(declared)
        except ValueError:
            raise RequestRejected(400, f"Content-Length {declared!r} is not a number") from None
        if declared_size > limit:
            raise _too_large(f"{declared_size:,}", limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(f"more than {limit:,}", limit)
        chunks.append(chunk)
    return b"".join(chunks)
