"""Responses read under a byte cap and a deadline: every HTTP request the tool makes itself goes through here.

- The cap (`--max-response-bytes`) counts a body as the client ends up holding it: after any Content-Encoding
  (gzip, deflate, br, stacked or concatenated) is undone, one piece of at most `PIECE` bytes at a time, so a gzip
  bomb of 1 MB on the wire never becomes more than the cap plus one piece in memory.
- The deadline (`--request-timeout`) is for the whole request, connecting to last byte: each blocking socket call
  gets only what is left of it, so a server sending one byte at a time still meets it.
- The response is parsed by h11, the field's HTTP/1.1 parser, over a plain blocking socket: one connection per
  request, closed after it. (An httpx client in an event loop of its own thread cost about 70 ms per run to import
  and start, for the one or few requests a row makes.)
- Redirects are never followed: a 3xx is handed back as it came, for the caller to name.
- https is verified against certifi's CA store, as httpx verifies it by default; the store (about 30 ms to load) is
  read once per process, at its first https request (common/net.py), so a check of a plain-http server never loads
  it.

`BodyMeter` is shared with the loopback guard (serving/forward_proxy.py), which meters what AIPerf will inflate.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import socket
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

import h11

from ..common.net import verified_tls

MIB = 1 << 20
DEFAULT_MAX_RESPONSE_BYTES = 16 * MIB  # RunSettings.max_response_bytes's default
CAP_OPTION = "--max-response-bytes"
PIECE = 1 << 20  # the most inflated bytes produced by one decoding step
# The most codings one response may stack: 2 keeps `gzip, br` (what a proxy adds over a server's own) working; a
# longer stack serves no client and only multiplies the work of decoding (issue: 1,200 stacked gzips recursed).
MAX_CODINGS = 2


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
    """A Content-Encoding this module cannot undo under a cap (zstd, compress, anything unknown, too many stacked)."""

    def __init__(self, coding: str, stacked: int = 1) -> None:
        self.coding = coding
        if stacked > MAX_CODINGS:
            words = f"stacks {stacked} codings (at most {MAX_CODINGS} are decoded, as in 'gzip, br')"
        else:
            words = f"{coding[:40]!r} cannot be decoded under {CAP_OPTION} here (gzip, deflate and br can)"
        super().__init__(f"the response's Content-Encoding {words}: the server sent an encoding nobody asked for")


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
        applied = codings(content_encoding)
        if len(applied) > MAX_CODINGS:  # refused from the head, before any byte of the body is decoded
            raise UnboundedEncoding(applied[0], stacked=len(applied))
        self._decoders = [_decoder(coding) for coding in reversed(applied)]

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


class RequestFailed(Exception):
    """No response: the URL cannot be reached as given, the connection failed or was refused (TLS verification
    included), or the server's bytes are not an HTTP/1.1 response. The message names the cause."""


# Everything `BoundedClient` raises for a request that got no usable answer: what a caller catches, in one place.
REQUEST_ERRORS = (RequestFailed, RequestDeadline, ResponseTooLarge, UnboundedEncoding, BadEncoding)
HEAD_CAP = 100 * 1024  # bytes of a response head h11 holds before refusing it (httpcore's own bound)
READ = 64 * 1024
USER_AGENT = "trtmc-videoqa"


@dataclass(frozen=True)
class _Target:
    """Where one request goes, from its URL: the connection's address and the request line's target."""

    tls: bool
    host: str
    port: int
    path: str  # the target of the request line: path and query
    host_header: str
    authorization: str | None  # Basic, from a user:password in the URL

    @classmethod
    def of(cls, url: str) -> _Target:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as error:
            raise RequestFailed(f"the URL cannot be read: {error}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RequestFailed("the URL is not an http:// or https:// URL with a host")
        tls = parts.scheme == "https"
        host = parts.hostname
        shown = f"[{host}]" if ":" in host else host
        authorization = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            authorization = "Basic " + base64.b64encode(pair).decode("ascii")
        return cls(
            tls=tls,
            host=host,
            port=port or (443 if tls else 80),
            path=(parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
            host_header=shown if port is None else f"{shown}:{port}",
            authorization=authorization,
        )


class BoundedClient:
    """A synchronous client whose every POST (or GET) is one request under a deadline for the whole of it and a cap on
    the decoded body; redirects are handed back, never followed. It holds nothing open: each request opens and
    closes its own connection."""

    def __init__(self, *, timeout_s: float, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes

    def post(self, url: str, *, content: bytes, headers: dict[str, str]) -> BoundedResponse:
        """The response, or RequestDeadline, ResponseTooLarge, UnboundedEncoding, BadEncoding, RequestFailed."""
        return self._request("POST", url, content, headers)

    def get(self, url: str, *, headers: dict[str, str]) -> BoundedResponse:
        """The response to a GET with no body, under the same bounds; the same exceptions as `post`."""
        return self._request("GET", url, b"", headers)

    def _request(self, method: str, url: str, content: bytes, headers: dict[str, str]) -> BoundedResponse:
        target = _Target.of(url)
        deadline = time.monotonic() + self.timeout_s
        try:
            with self._connect(target, deadline) as sock:
                return self._exchange(sock, target, (method, content), headers, deadline)
        except RequestDeadline:
            raise
        except TimeoutError as error:  # a socket call outlived what was left of the deadline
            raise RequestDeadline(self.timeout_s) from error
        except h11.LocalProtocolError:  # its message would quote the header value, an API key perhaps
            raise RequestFailed("the request's headers are not valid HTTP/1.1 (a character HTTP forbids)") from None
        except (OSError, UnicodeError, h11.RemoteProtocolError) as error:  # refused, reset, TLS, not HTTP/1.1
            raise RequestFailed(f"{type(error).__name__}: {error}") from error

    def _connect(self, target: _Target, deadline: float) -> socket.socket:
        sock = socket.create_connection((target.host, target.port), timeout=_left(deadline, self.timeout_s))
        if not target.tls:
            return sock
        try:
            sock.settimeout(_left(deadline, self.timeout_s))
            return verified_tls().wrap_socket(sock, server_hostname=target.host)
        except BaseException:
            sock.close()
            raise

    def _exchange(
        self,
        sock: socket.socket,
        target: _Target,
        sending: tuple[str, bytes],
        headers: dict[str, str],
        deadline: float,
    ) -> BoundedResponse:
        method, content = sending
        conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=HEAD_CAP)
        given = {name.lower() for name in headers}
        defaults = {
            "Host": target.host_header,
            "Accept": "*/*",
            "Accept-Encoding": _accepted(),
            "User-Agent": USER_AGENT,
            **({"Authorization": target.authorization} if target.authorization else {}),
        }
        sent = [(name, value) for name, value in defaults.items() if name.lower() not in given]
        sent += [(name, value) for name, value in headers.items() if name.lower() != "content-length"]
        if method != "GET":  # a GET carries no body, so no length
            sent.append(("Content-Length", str(len(content))))
        request = h11.Request(method=method, target=target.path, headers=sent)
        sock.settimeout(_left(deadline, self.timeout_s))
        refused: OSError | None = None
        try:
            head = conn.send(request)
            body = conn.send(h11.Data(data=content)) if content else b""
            sock.sendall(head + body + conn.send(h11.EndOfMessage()))
        except (BrokenPipeError, ConnectionResetError) as error:  # it may have answered (413) before the whole body
            refused = error
        try:
            return self._response(sock, conn, deadline)
        except (OSError, h11.RemoteProtocolError, RequestFailed):
            if refused is not None:
                raise refused from None  # no answer after all: the send's own failure is the one to name
            raise

    def _response(self, sock: socket.socket, conn: h11.Connection, deadline: float) -> BoundedResponse:
        response: h11.Response | None = None
        meter: BodyMeter | None = None
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                sock.settimeout(_left(deadline, self.timeout_s))
                conn.receive_data(sock.recv(READ))  # b"" when the server closed: h11 judges what that means
            elif isinstance(event, h11.Response):
                response = event
                meter = BodyMeter(_joined(event, b"content-encoding"), self.max_response_bytes, keep=True)
            elif isinstance(event, h11.Data) and meter is not None:
                meter.feed(event.data)
            elif isinstance(event, h11.EndOfMessage) and response is not None and meter is not None:
                found = {name.decode("latin-1"): value.decode("latin-1") for name, value in response.headers}
                return BoundedResponse(status_code=response.status_code, headers=found, content=meter.body())
            elif isinstance(event, h11.ConnectionClosed):
                raise RequestFailed("the server closed the connection before its response ended")
            # an interim (1xx) response: the final one follows


def _left(deadline: float, timeout_s: float) -> float:
    """What is left of the request's deadline, for the next blocking call; RequestDeadline when nothing is."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise RequestDeadline(timeout_s)
    return left


def _joined(response: h11.Response, name: bytes) -> str | None:
    """Every value of a header, in order, joined as one list (stacked Content-Encodings read as one)."""
    values = [value.decode("latin-1") for key, value in response.headers if key == name]
    return ", ".join(values) if values else None


@functools.cache
def _accepted() -> str:
    """The codings the meter can undo, asked for as httpx asks: br only where its decoder is installed."""
    return "gzip, deflate" + (", br" if importlib.util.find_spec("brotli") is not None else "")


def redirect_note(response: BoundedResponse) -> str:
    """`a redirect to '<Location>', not followed` for a 3xx, else empty (the Location cut and quoted: server text)."""
    if not 300 <= response.status_code < 400:
        return ""
    location = response.headers.get("location", "")
    where = f" to {location[:200]!r}" if location else ""
    return f"a redirect{where}, not followed: a qualification run sends nothing to an address it was not given"
