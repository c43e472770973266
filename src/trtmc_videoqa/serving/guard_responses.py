"""The responses the loopback guard reads from an endpoint: parsed by h11, passed on only as re-serialised.

A hand-written reader of response heads and a client's parser can disagree about where a head ends: a `100
Continue` ended by bare line feeds hid a `307` inside what looked like one interim head, and a folded or bare-LF
`Content-Encoding` hid a gzip bomb from the response cap. So every byte the endpoint sends goes through h11, the
field's HTTP/1.1 parser (it takes bare line feeds and unfolds folded headers, as clients do), and the guard passes on
only what h11 parsed, written again:

- each head, interim (1xx) ones one at a time, as `HTTP/<version> <status> <reason>` and one `Name: value` line per
  header as parsed (the name as the server spelled it), CRLF line ends, no folding; a Content-Length beside a
  Transfer-Encoding is dropped, as a proxy must (RFC 9112, section 6.3);
- each body as the content h11 read, in the framing its head says, passed on as it arrives: where chunked, one
  chunk of what each read brought (the server's chunk sizes and extensions left out) and the trailers
  re-serialised; a Content-Length body, or one read to the connection's end, as its content.

So the client reads the same heads, the same header values and the same body as the guard counted, whatever the
server's bytes looked like. `Unreadable` is what h11 refuses (a ValueError: the exchange ends); a connection the
server closed mid-response is an EOFError.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import cast

import h11

READ = 64 * 1024


class Unreadable(ValueError):
    """What h11 will not parse as an HTTP/1.1 response (a head over the cap included)."""


@dataclass(frozen=True)
class Head:
    """One response head as parsed: its status, its fields (lower-case names, repeated ones joined with ', '), the
    bytes the client gets in its place, and whether its body goes on as chunks."""

    status: int
    fields: dict[str, str]
    serialised: bytes
    chunked: bool


def _head(event: h11.InformationalResponse | h11.Response) -> Head:
    items = event.headers.raw_items()
    fields: dict[str, str] = {}
    for raw_name, raw_value in items:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        fields[name] = f"{fields[name]}, {value}" if name in fields else value
    chunked = "transfer-encoding" in fields
    lines = [b"HTTP/%s %d %s" % (event.http_version, event.status_code, event.reason)]
    lines += [name + b": " + value for name, value in items if not (chunked and name.lower() == b"content-length")]
    return Head(event.status_code, fields, b"\r\n".join(lines) + b"\r\n\r\n", chunked)


class UpstreamResponses:
    """The responses on one upstream connection, one exchange at a time: `expect` the request's method, then
    `next_head` until a final one, then `body` (each piece as the client gets it), then `reusable`."""

    def __init__(self, reader: asyncio.StreamReader, *, head_cap: int) -> None:
        self._reader = reader
        self._parser = h11.Connection(h11.CLIENT, max_incomplete_event_size=head_cap)
        self._head_cap = head_cap
        self._method = b"GET"
        self._chunked = False

    def expect(self, method: bytes) -> None:
        """The next response answers a request with this method (h11 frames a response by it: HEAD has no body).
        The request itself goes upstream as it came; h11 is told only what framing needs."""
        if self._parser.our_state is h11.DONE and self._parser.their_state is h11.DONE:
            self._parser.start_next_cycle()
        self._method = method
        try:
            self._parser.send(h11.Request(method=method, target=b"/", headers=[(b"Host", b"endpoint")]))
            self._parser.send(h11.EndOfMessage())
        except h11.LocalProtocolError as error:
            raise Unreadable(f"the request cannot be followed by a response here: {error}") from None

    async def next_head(self) -> Head | None:
        """The next head, interim or final; None when the server closed before sending a byte of it."""
        if not self._parser.trailing_data[0]:
            data = await self._reader.read(READ)
            if not data:
                return None
            self._parser.receive_data(data)
        event = await self._event()
        if not isinstance(event, h11.InformationalResponse | h11.Response):
            raise Unreadable(f"the server sent {type(event).__name__} where a response head was due")
        head = _head(event)
        if len(head.serialised) > self._head_cap:  # h11 holds at most the cap and one read before its head ends
            raise Unreadable(f"the server's response head is over {self._head_cap} bytes")
        self._chunked = head.chunked and head.status not in (204, 304) and self._method != b"HEAD"
        return head

    async def body(self) -> AsyncIterator[tuple[bytes, bytes]]:
        """The body after a final head, in batches: each batch all the content h11 can read from what has arrived,
        as (that content, the bytes the client gets for it: one chunk of it where the body is chunked, then the
        last chunk and the trailers re-serialised). The first batch comes before any wait (it may be empty), so the
        head can go out with the body that came with it, and never waits for a body still to come."""
        while True:
            content, ended, trailers = self._arrived()
            framed = b"%x\r\n%s\r\n" % (len(content), content) if self._chunked and content else content
            if ended and self._chunked:
                framed += b"0\r\n" + trailers + b"\r\n"
            yield content, framed
            if ended:
                return
            self._parser.receive_data(await self._reader.read(READ))  # b"" when the server closed

    def _arrived(self) -> tuple[bytes, bool, bytes]:
        """The content h11 reads from the bytes already received, whether the body ended, and its trailers."""
        pieces = []
        while True:
            event = self._next()
            if isinstance(event, h11.Data):
                pieces.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                trailers = b"".join(name + b": " + value + b"\r\n" for name, value in event.headers.raw_items())
                return b"".join(pieces), True, trailers
            elif event is h11.NEED_DATA:
                return b"".join(pieces), False, b""
            else:
                raise Unreadable(f"the server sent {event!r} inside a response body")

    @property
    def reusable(self) -> bool:
        """Whether the connection can carry the next exchange: the response was whole, the server keeps the
        connection open and sent nothing beyond it."""
        waiting, closed = self._parser.trailing_data
        return self._parser.their_state is h11.DONE and not waiting and not closed

    async def _event(self) -> h11.Event:
        while True:
            event = self._next()
            if isinstance(event, h11.Event):
                return event
            self._parser.receive_data(await self._reader.read(READ))  # b"" when the server closed

    def _next(self) -> h11.Event | type[h11.NEED_DATA]:
        """h11's next event from the bytes received; NEED_DATA when it needs more."""
        try:
            event = self._parser.next_event()
        except h11.RemoteProtocolError as error:
            if error.error_status_hint == 431:
                raise Unreadable(f"the server's response head is over {self._head_cap} bytes") from None
            if self._parser.trailing_data[1]:  # the server closed mid-response: so does the guard, unrefused
                raise EOFError(f"the server closed its connection mid-response: {error}") from None
            raise Unreadable(f"the server's response is not HTTP/1.1: {error}") from None
        if event is h11.PAUSED:  # never between `expect` and the response's end
            raise Unreadable("the server sent more than the response it owed")
        return cast("h11.Event | type[h11.NEED_DATA]", event)
