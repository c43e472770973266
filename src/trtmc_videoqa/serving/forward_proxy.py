"""The loopback guard: a small forwarding proxy the run starts between AIPerf and a server it did not start.

AIPerf 0.13.0's HTTP client (aiohttp) follows redirects and inflates any compressed body, with no option to stop
either, and its records show neither. AIPerf is the published client and is never patched, so a row measuring an
`--endpoint` gives AIPerf this proxy's loopback URL instead; the proxy forwards each request to the endpoint and
each response back, and:

- a 3xx is never passed on: AIPerf gets a 502 whose JSON error names the redirect and its Location, nothing is sent
  to that Location, and the upstream connection is dropped unread;
- a response past `--max-response-bytes` once decoded (the same `BodyMeter` the tool's own reads use) is cut: the
  connection closes mid-body, so AIPerf records a failed request and never holds more than the cap; a head that
  says in advance it cannot be bounded (a Content-Encoding nobody can bound, a Content-Length over the cap, a head
  over `HEAD_CAP`) gets a 502 naming why;
- an exchange that outlives `deadline_s` (the request timeout plus a grace) is closed, and one whose client went
  away (AIPerf's own timeout) is closed at once, as a direct connection would be.

Nothing else is altered: the request's line, headers and body go on byte for byte but for `Host` (the endpoint's
own, as AIPerf would have sent it), so `X-Request-ID` and every body digest hold; the response's head and body,
chunk framing included, are forwarded piece by piece as they arrive, never buffered. Each AIPerf connection has one
upstream connection, and each closes with the other. Every refusal is counted, the first few named, in a
`GuardTally` (the row's aiperf/guard.json).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel

from .bounded_http import (
    CAP_OPTION,
    BadEncoding,
    BodyMeter,
    ResponseTooLarge,
    UnboundedEncoding,
    codings,
    shown_size,
)

HEAD_CAP = 64 * 1024  # the longest request or response head passed on (and the longest chunk-size line)
READ = 64 * 1024
GRACE_S = 5.0  # added to the request timeout AIPerf itself keeps
NAMED_KEPT = 10  # refusals named in the tally; the rest are counted
GUARD = "trtmc-videoqa loopback guard"
RefusalKind = Literal["redirect", "over_cap", "refused_head", "upstream_error", "deadline"]
_Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class GuardTally(BaseModel):
    """What the guard saw in one AIPerf run."""

    upstream: str
    max_response_bytes: int
    exchanges: int = 0
    forwarded: int = 0  # responses passed on whole
    redirect: int = 0
    over_cap: int = 0
    refused_head: int = 0  # an encoding nobody can bound, a head over HEAD_CAP or not HTTP
    upstream_error: int = 0
    deadline: int = 0
    named: list[str] = []  # the first NAMED_KEPT refusals, each "<kind>: <words>"

    def refuse(self, kind: RefusalKind, words: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.named) < NAMED_KEPT:
            self.named.append(f"{kind}: {words}")

    def cause(self) -> str:
        """What the guard refused, for the stage's detail; empty when it refused nothing (an exchange it closed at
        its deadline is AIPerf's own timeout, already counted there)."""
        parts = []
        if self.redirect:
            parts.append(f"refused {self.redirect} redirect(s) (nothing was sent to a redirect's address)")
        if self.over_cap:
            size = shown_size(self.max_response_bytes)
            parts.append(f"cut {self.over_cap} response(s) past {size} once decoded ({CAP_OPTION})")
        if self.refused_head:
            parts.append(f"refused {self.refused_head} response(s) it could not bound")
        if self.upstream_error:
            parts.append(f"could not reach the endpoint {self.upstream_error} time(s)")
        if not parts:
            return ""
        kinds = ("redirect", "over_cap", "refused_head", "upstream_error")
        first = next((words for words in self.named if words.split(":", 1)[0] in kinds), "")
        return f"the loopback guard {' and '.join(parts)}" + (f"; first: {first.split(': ', 1)[1]}" if first else "")


@dataclass(frozen=True)
class _Framing:
    kind: Literal["none", "length", "chunked", "eof"]
    length: int = 0


class _Refused(Exception):
    """What the guard will not pass on; `head_sent` when the response's head already went (a body cut short)."""

    def __init__(self, kind: RefusalKind, words: str, *, head_sent: bool = False) -> None:
        self.kind, self.head_sent = kind, head_sent
        super().__init__(words)


class ForwardProxy:
    """`with ForwardProxy(endpoint, ...) as guard:` AIPerf is given `guard.url`; `guard.tally` says what happened."""

    def __init__(self, upstream: str, *, max_response_bytes: int, deadline_s: float) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the loopback guard forwards only to an http(s) URL, not {upstream!r}")
        self._host, self._tls = parts.hostname, parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._authority = parts.netloc.rsplit("@", 1)[-1].encode("ascii", errors="strict")
        self._path = parts.path.rstrip("/")
        self._cap, self._deadline_s = max_response_bytes, deadline_s
        shown = f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"
        self.tally = GuardTally(upstream=shown, max_response_bytes=max_response_bytes)
        self.url = ""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="trtmc-videoqa-guard", daemon=True)

    def __enter__(self) -> ForwardProxy:
        self._thread.start()
        try:
            self._server = self._call(asyncio.start_server(self._connection, "127.0.0.1", 0, limit=HEAD_CAP))
        except BaseException:
            self._end_loop()
            raise
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}{self._path}"
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._call(self._stop())
        finally:
            self._end_loop()

    def _call(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=30)

    def _end_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        if not self._thread.is_alive():
            self._loop.close()

    async def _stop(self) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- one AIPerf connection ---------------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        upstream: _Stream | None = None
        try:
            while True:
                head = await _next_head(reader, upstream)
                if head is None:
                    return
                self.tally.exchanges += 1
                upstream, keep = await self._exchange(head, reader, writer, upstream)
                if not keep:
                    return
        except (OSError, EOFError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return  # either side broke the exchange off: so does the other
        except asyncio.CancelledError:
            return  # the guard is stopping: the connection ends quietly
        finally:
            for stream in (writer, upstream[1] if upstream else None):
                if stream is not None:
                    stream.close()
            if task is not None:
                self._tasks.discard(task)

    async def _exchange(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: _Stream | None
    ) -> tuple[_Stream | None, bool]:
        """One request forwarded and its response passed back, or refused: (the upstream connection, whether both
        connections may carry another exchange)."""
        fields = _fields(head)
        request_id = fields.get("x-request-id", "?")[:80]
        try:
            async with asyncio.timeout(self._deadline_s):
                if upstream is None:
                    upstream = await self._open()
                upstream[1].write(_with_host(head, self._authority))
                await _relay(reader, upstream[1], _request_framing(fields), None)
                keep = await _unless_client_leaves(reader, self._respond(head, upstream[0], writer))
        except _Refused as refusal:
            self.tally.refuse(refusal.kind, f"{refusal} (X-Request-ID {request_id!r})")
            if not refusal.head_sent:  # a body cut short has its head on the wire already: closing is the answer
                await _answer_refusal(writer, refusal)
            return upstream, False
        except TimeoutError:
            words = f"no whole exchange within {self._deadline_s:g} s (X-Request-ID {request_id!r})"
            self.tally.refuse("deadline", words)
            return upstream, False
        return upstream, keep and fields.get("connection", "").lower() != "close"

    async def _open(self) -> _Stream:
        try:
            if self._tls:
                context = ssl.create_default_context()
                return await asyncio.open_connection(
                    self._host, self._port, ssl=context, server_hostname=self._host, limit=HEAD_CAP
                )
            return await asyncio.open_connection(self._host, self._port, limit=HEAD_CAP)
        except OSError as error:
            raise _Refused("upstream_error", f"could not reach {self.tally.upstream}: {error}") from None

    async def _respond(self, request_head: bytes, upstream: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """The response passed on (informational heads first) unless refused; whether the connection carries on."""
        while True:
            head = await _read_head(upstream, "response")
            if head is None:
                return False  # the server closed without answering: so does the guard, as the server would
            status, fields = _status(head), _fields(head)
            if not 100 <= status < 200 or status == 101:
                break
            writer.write(head)
        if 300 <= status < 400:
            location = fields.get("location", "")[:200]
            raise _Refused(
                "redirect",
                f"the server answered HTTP {status}, a redirect to {location!r}; a qualification run follows no "
                "redirect, so nothing was sent there: give --endpoint the address that answers",
            )
        meter, framing = self._bounded(request_head, status, fields)
        writer.write(head)
        try:
            await _relay(upstream, writer, framing, meter)
        except (ResponseTooLarge, BadEncoding) as error:
            kind: RefusalKind = "over_cap" if isinstance(error, ResponseTooLarge) else "refused_head"
            raise _Refused(kind, str(error), head_sent=True) from None
        self.tally.forwarded += 1
        return framing.kind != "eof" and fields.get("connection", "").lower() != "close"

    def _bounded(self, request_head: bytes, status: int, fields: dict[str, str]) -> tuple[BodyMeter, _Framing]:
        if status == 101:
            raise _Refused("refused_head", "the server switched protocols (HTTP 101), which no chat request asks for")
        try:
            meter = BodyMeter(fields.get("content-encoding"), self._cap, keep=False)
        except UnboundedEncoding as error:
            raise _Refused("refused_head", str(error)) from None
        framing = _response_framing(request_head, status, fields)
        if framing.kind == "length" and not codings(fields.get("content-encoding")) and framing.length > self._cap:
            raise _Refused("over_cap", str(ResponseTooLarge(self._cap)))
        return meter, framing


async def _next_head(reader: asyncio.StreamReader, upstream: _Stream | None) -> bytes | None:
    """The client's next request head; None when it closes, or when the idle upstream connection closes (or speaks
    out of turn) first: the client's connection then closes too, as the server's did."""
    if upstream is None:
        return await _read_head(reader, "request")
    head = asyncio.ensure_future(_read_head(reader, "request"))
    idle = asyncio.ensure_future(upstream[0].read(1))
    try:
        done, _ = await asyncio.wait({head, idle}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await _settled(head, idle)
    if idle in done:
        return None
    return head.result()


async def _unless_client_leaves(reader: asyncio.StreamReader, respond: Coroutine[Any, Any, bool]) -> bool:
    """`respond`, ended early (False) when the client closes its connection while waiting (AIPerf's own timeout)."""
    answer = asyncio.ensure_future(respond)
    gone = asyncio.ensure_future(reader.read(1))
    try:
        done, _ = await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await _settled(gone, answer)
    return answer.result() if answer in done else False


async def _settled(*tasks: asyncio.Future[Any]) -> None:
    """Each task cancelled unless done and waited for (a cancellation of the caller still reaches it), and every
    exception retrieved, so none is logged as lost; the caller reads the result it wants."""
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
    for task in tasks:
        if not task.cancelled():
            task.exception()


async def _read_head(reader: asyncio.StreamReader, what: str) -> bytes | None:
    """A head up to its blank line; None at a clean end of the connection before any byte."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial:
            raise
        return None
    except asyncio.LimitOverrunError:
        if what == "request":
            raise
        raise _Refused("refused_head", f"the server's response head is over {HEAD_CAP} bytes") from None


def _fields(head: bytes) -> dict[str, str]:
    """Header names (lower case) to values, repeated ones joined with ', '."""
    found: dict[str, str] = {}
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if colon:
            key = name.strip().decode("latin-1").lower()
            text = value.strip().decode("latin-1")
            found[key] = f"{found[key]}, {text}" if key in found else text
    return found


def _status(head: bytes) -> int:
    parts = head.split(b"\r\n", 1)[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise _Refused("refused_head", f"not an HTTP response: {head[:80]!r}")
    return int(parts[1])


def _with_host(head: bytes, authority: bytes) -> bytes:
    """The request head with its Host header (the guard's address) as the endpoint's own; nothing else changed."""
    lines = head.split(b"\r\n")
    for index, line in enumerate(lines[1:], 1):
        if line.partition(b":")[0].strip().lower() == b"host":
            lines[index] = b"Host: " + authority
    return b"\r\n".join(lines)


def _length(fields: dict[str, str]) -> int:
    values = {value.strip() for value in fields.get("content-length", "").split(",")}
    if len(values) != 1 or not next(iter(values)).isdigit():
        raise ValueError("an unreadable Content-Length")
    return int(next(iter(values)))


def _request_framing(fields: dict[str, str]) -> _Framing:
    if codings(fields.get("transfer-encoding"))[-1:] == ["chunked"]:
        return _Framing("chunked")
    return _Framing("length", _length(fields)) if "content-length" in fields else _Framing("none")


def _response_framing(request_head: bytes, status: int, fields: dict[str, str]) -> _Framing:
    if request_head.startswith(b"HEAD ") or status in (204, 304):
        return _Framing("none")
    if "transfer-encoding" in fields:
        return _Framing("chunked" if codings(fields["transfer-encoding"])[-1:] == ["chunked"] else "eof")
    if "content-length" not in fields:
        return _Framing("eof")
    try:
        return _Framing("length", _length(fields))
    except ValueError:
        raise _Refused("refused_head", f"an unreadable Content-Length: {fields['content-length'][:40]!r}") from None


async def _relay(
    source: asyncio.StreamReader, sink: asyncio.StreamWriter, framing: _Framing, meter: BodyMeter | None
) -> None:
    """A body passed on as it arrives, its framing bytes as they came; `meter` counts the content."""
    if framing.kind == "chunked":
        await _relay_chunked(source, sink, meter)
    elif framing.kind != "none":
        await _relay_bytes(source, sink, framing.length if framing.kind == "length" else None, meter)
    await sink.drain()


async def _relay_bytes(
    source: asyncio.StreamReader, sink: asyncio.StreamWriter, length: int | None, meter: BodyMeter | None
) -> None:
    remaining = length
    while remaining is None or remaining > 0:
        data = await source.read(READ if remaining is None else min(READ, remaining))
        if not data:
            if remaining is None:
                return
            raise EOFError("the body ended early")
        if meter is not None:
            meter.feed(data)
        sink.write(data)
        await sink.drain()
        if remaining is not None:
            remaining -= len(data)


async def _relay_chunked(source: asyncio.StreamReader, sink: asyncio.StreamWriter, meter: BodyMeter | None) -> None:
    while True:
        line = await source.readuntil(b"\r\n")
        size = int(line.split(b";", 1)[0].strip(), 16)  # ValueError on a malformed line: the exchange ends
        sink.write(line)
        if size == 0:
            break
        await _relay_bytes(source, sink, size, meter)
        sink.write(await source.readexactly(2))
    while True:  # trailers, up to the blank line
        line = await source.readuntil(b"\r\n")
        sink.write(line)
        if line == b"\r\n":
            return


async def _answer_refusal(writer: asyncio.StreamWriter, refusal: _Refused) -> None:
    """A 502 whose JSON error names what the guard refused; the connection then closes."""
    error = {"message": f"{GUARD}: {refusal}", "type": f"guard_{refusal.kind}", "code": 502}
    body = json.dumps({"error": error}).encode("utf-8")
    head = (
        b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\n"
        + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    )
    with contextlib.suppress(OSError):
        writer.write(head + body)
        await writer.drain()
