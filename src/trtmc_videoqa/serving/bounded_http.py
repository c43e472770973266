"""Responses read under a byte cap and a deadline: every HTTP request the tool makes itself goes through here.

- The cap (`--max-response-bytes`) counts a body as the client ends up holding it: after any Content-Encoding
  (gzip, deflate, br, stacked or concatenated) is undone, one piece of at most `PIECE` bytes at a time, so a gzip
  bomb of 1 MB on the wire never becomes more than the cap plus one piece in memory. httpx's own decoders inflate a
  whole network read at once (64 KiB can become 64 MiB), so the body is read raw and decoded here.
- The deadline (`--request-timeout`) is for the whole request, connecting to last byte: httpx's timeout applies to
  each read, so a server sending one byte at a time would never meet it. Each request runs in an event loop of its
  own thread (an anyio blocking portal) under `anyio.fail_after`.
- Redirects are never followed: a 3xx is handed back as it came, for the caller to name.
- https is verified as httpx verifies it by default; that transport (and its CA store, about 30 ms to load) is made
  at the client's first https request, so a check of a plain-http server never loads it.

`BodyMeter` is shared with the loopback guard (serving/forward_proxy.py), which meters what AIPerf will inflate.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import httpx

MIB = 1 << 20
DEFAULT_MAX_RESPONSE_BYTES = 16 * MIB  # RunSettings.max_response_bytes's default
CAP_OPTION = "--max-response-bytes"
PIECE = 1 << 20  # the most inflated bytes produced by one decoding step


def shown_size(size: int) -> str:
    return f"{size // MIB} MiB" if size % MIB == 0 else f"{size} bytes"


class ResponseTooLarge(Exception):
    """A body past the cap, once decoded: the rest is never read."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        super().__init__(
            f"the response grew past {shown_size(cap)} once decoded ({CAP_OPTION} {cap}) and was not read further; "
            f"raise {CAP_OPTION} if the server's answers are that long"
        )


class UnboundedEncoding(Exception):
    """A Content-Encoding this module cannot undo under a cap (zstd, compress, anything unknown)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        super().__init__(
            f"the response's Content-Encoding {coding[:40]!r} cannot be decoded under {CAP_OPTION} here "
            "(gzip, deflate and br can): the server sent an encoding nobody asked for"
        )


class BadEncoding(Exception):
    """A body that does not decode as its Content-Encoding says."""


class RequestDeadline(TimeoutError):
    """No complete response (connecting to last byte) within the request's deadline."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        super().__init__(f"no complete answer within {timeout_s:g} s (--request-timeout), connecting to last byte")


class _Decoder(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]: ...


class _Zlib:
    """gzip or zlib-wrapped deflate (a header says which), concatenated members included, as aiohttp reads them;
    deflate without a header falls back to raw deflate."""

    def __init__(self, *, raw_fallback: bool) -> None:
        self._wbits = 32 + zlib.MAX_WBITS
        self._raw_fallback = raw_fallback
        self._started = False
        self._obj = zlib.decompressobj(self._wbits)

    def feed(self, data: bytes) -> Iterator[bytes]:
        while True:
            if self._obj.eof:  # the next member of a concatenated stream, if any bytes follow
                data = self._obj.unused_data + data
                if not data:
                    return
                self._obj = zlib.decompressobj(self._wbits)
            out = self._step(data)
            data = self._obj.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < PIECE and not self._obj.eof:
                return

    def _step(self, data: bytes) -> bytes:
        try:
            out = self._obj.decompress(data, PIECE)
        except zlib.error as error:
            if self._started or not self._raw_fallback:
                raise BadEncoding(f"the body does not decode: {error}") from None
            self._wbits = -zlib.MAX_WBITS  # deflate as raw deflate, without the zlib header
            self._obj = zlib.decompressobj(self._wbits)
            return self._step(data)
        self._started = True
        return out


class _Brotli:
    def __init__(self) -> None:
        try:
            import brotli  # type: ignore[import-untyped]
        except ImportError:
            raise UnboundedEncoding("br") from None
        self._error = brotli.error
        self._obj = brotli.Decompressor()

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            while True:
                out = self._obj.process(data, output_buffer_limit=PIECE)
                data = b""
                if out:
                    yield out
                elif self._obj.can_accept_more_data():
                    return
        except self._error as error:
            raise BadEncoding(f"the body does not decode: {error}") from None


def _decoder(coding: str) -> _Decoder:
    if coding in ("gzip", "x-gzip"):
        return _Zlib(raw_fallback=False)
    if coding == "deflate":
        return _Zlib(raw_fallback=True)
    if coding == "br":
        return _Brotli()
    raise UnboundedEncoding(coding)


def codings(content_encoding: str | None) -> list[str]:
    """The codings a Content-Encoding header names, in the order they were applied (identity left out)."""
    named = [part.strip().lower() for part in (content_encoding or "").split(",")]
    return [coding for coding in named if coding and coding != "identity"]


class BodyMeter:
    """A response body counted as the client will hold it, every Content-Encoding undone one bounded piece at a time;
    `ResponseTooLarge` as soon as it passes `cap`. With `keep`, the decoded body is kept (it is at most `cap`)."""

    def __init__(self, content_encoding: str | None, cap: int, *, keep: bool) -> None:
        self.cap = cap
        self.decoded = 0
        self._keep = keep
        self._parts: list[bytes] = []
        self._decoders = [_decoder(coding) for coding in reversed(codings(content_encoding))]

    def feed(self, raw: bytes) -> None:
        for piece in self._through(raw, 0):
            self.decoded += len(piece)
            if self.decoded > self.cap:
                self._parts.clear()
                raise ResponseTooLarge(self.cap)
            if self._keep:
                self._parts.append(piece)

    def _through(self, data: bytes, index: int) -> Iterator[bytes]:
        if index == len(self._decoders):
            if data:
                yield data
            return
        for piece in self._decoders[index].feed(data):
            yield from self._through(piece, index + 1)

    def body(self) -> bytes:
        return b"".join(self._parts)


@dataclass(frozen=True)
class BoundedResponse:
    """A whole response, read under the cap and the deadline; `content` is the decoded body."""

    status_code: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


class BoundedClient:
    """A synchronous client whose every POST is one request under a deadline for the whole of it and a cap on the
    decoded body; redirects are handed back, never followed. Use it as a context manager (one event loop thread,
    one connection pool, for its whole life)."""

    def __init__(self, *, timeout_s: float, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self._stack = ExitStack()

    def __enter__(self) -> BoundedClient:
        import httpx
        from anyio.from_thread import start_blocking_portal

        self._portal = self._stack.enter_context(start_blocking_portal())
        self._client = httpx.AsyncClient(
            timeout=self.timeout_s,
            trust_env=False,
            follow_redirects=False,
            # Plain http negotiates no TLS, so its transport needs no CA store; https gets httpx's default transport.
            transport=httpx.AsyncHTTPTransport(verify=False, trust_env=False),
            mounts={"https://": _verified_on_first_use()},
        )
        self._stack.callback(self._portal.call, self._client.aclose)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.__exit__(*exc)

    def post(self, url: str, *, content: bytes, headers: dict[str, str]) -> BoundedResponse:
        """The response, or RequestDeadline, ResponseTooLarge, UnboundedEncoding, BadEncoding, httpx.HTTPError."""
        return self._portal.call(self._post, url, content, headers)

    async def _post(self, url: str, content: bytes, headers: dict[str, str]) -> BoundedResponse:
        import anyio
        import httpx

        try:
            with anyio.fail_after(self.timeout_s):
                async with self._client.stream("POST", url, content=content, headers=headers) as response:
                    meter = BodyMeter(response.headers.get("content-encoding"), self.max_response_bytes, keep=True)
                    async for raw in response.aiter_raw():
                        meter.feed(raw)
        except (TimeoutError, httpx.TimeoutException) as error:
            raise RequestDeadline(self.timeout_s) from error
        found = {name.lower(): value for name, value in response.headers.items()}
        return BoundedResponse(status_code=response.status_code, headers=found, content=meter.body())


def _verified_on_first_use() -> httpx.AsyncBaseTransport:
    """httpx's default transport (TLS verified against its CA store, as AsyncClient(trust_env=False) makes it), made
    at its first request."""
    import httpx

    class VerifiedOnFirstUse(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self._transport: httpx.AsyncHTTPTransport | None = None

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if self._transport is None:
                self._transport = httpx.AsyncHTTPTransport(trust_env=False)
            return await self._transport.handle_async_request(request)

        async def aclose(self) -> None:
            if self._transport is not None:
                await self._transport.aclose()

    return VerifiedOnFirstUse()


def redirect_note(response: BoundedResponse) -> str:
    """`a redirect to '<Location>', not followed` for a 3xx, else empty (the Location cut and quoted: server text)."""
    if not 300 <= response.status_code < 400:
        return ""
    location = response.headers.get("location", "")
    where = f" to {location[:200]!r}" if location else ""
    return f"a redirect{where}, not followed: a qualification run sends nothing to an address it was not given"
