"""The loopback guard: a small forwarding proxy the run starts between AIPerf and a server it did not start.

AIPerf 0.13.0's HTTP client (aiohttp) follows redirects and inflates any compressed body, with no option to stop
either, and its records show neither. AIPerf is the published client and is never patched, so a row measuring an
`--endpoint` gives AIPerf this proxy's loopback URL instead; the proxy forwards each request to the endpoint and
each response back, and:

- every response is read by h11 (serving/guard_responses.py), and AIPerf gets only its heads and body as h11
  parsed them, written again: a server's bytes cannot say one thing to the guard and another to aiohttp;
- a 3xx is never passed on, after any number of interim (1xx) heads too: AIPerf gets a 502 whose JSON error names
  the redirect and its Location, nothing is sent to that Location, and the upstream connection is dropped unread;
- a response past `--max-response-bytes` once decoded (the same `BodyMeter` the tool's own reads use) is cut: the
  connection closes mid-body, so AIPerf records a failed request and never holds more than the cap; a head that
  says in advance it cannot be bounded (a Content-Encoding nobody can bound, a Content-Length over the cap, a head
  over `HEAD_CAP`, more than `INTERIM_CAP` interim heads, anything h11 will not parse) gets a 502 naming why;
- an exchange that outlives `deadline_s` (the request timeout plus a grace) is closed, and one whose client went
  away (AIPerf's own timeout) is closed at once, as a direct connection would be.

Nothing else is altered: the request's line, headers and body go on byte for byte but for `Host` (the endpoint's
own, as AIPerf would have sent it), so `X-Request-ID` and every body digest hold; the response's header values and
body content are the server's, forwarded piece by piece as they arrive, never buffered (only the line ends, folding
and chunk framing are the guard's own). Each AIPerf connection has one upstream connection, and each closes with
the other. Every refusal is counted, the first few named, in a `GuardTally` (the row's aiperf/guard.json).
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
from .guard_responses import READ, Head, Unreadable, UpstreamResponses

HEAD_CAP = 64 * 1024  # the longest request or response head passed on (and the longest chunk-size line)
INTERIM_CAP = 16  # interim (1xx) heads passed on before one response's final head
GRACE_S = 5.0  # added to the request timeout AIPerf itself keeps
NAMED_KEPT = 10  # refusals named in the tally; the rest are counted
GUARD = "trtmc-videoqa loopback guard"
RefusalKind = Literal["redirect", "over_cap", "refused_head", "upstream_error", "deadline"]


class GuardTally(BaseModel):
    """What the guard saw in one AIPerf run."""

    upstream: str
    max_response_bytes: int
    exchanges: int = 0
    forwarded: int = 0  # responses passed on whole
    redirect: int = 0
    over_cap: int = 0
    refused_head: int = 0  # an encoding nobody can bound, a head over HEAD_CAP, not HTTP h11 reads
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
class _Upstream:
    """One upstream connection and the parser of its responses."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    responses: UpstreamResponses


@dataclass(frozen=True)
class _Framing:
    kind: Literal["none", "length", "chunked"]
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
        upstream: _Upstream | None = None
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
            for stream in (writer, upstream.writer if upstream else None):
                if stream is not None:
                    stream.close()
            if task is not None:
                self._tasks.discard(task)

    async def _exchange(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: _Upstream | None
    ) -> tuple[_Upstream | None, bool]:
        """One request forwarded and its response passed back, or refused: (the upstream connection, whether both
        connections may carry another exchange)."""
        fields = _fields(head)
        request_id = fields.get("x-request-id", "?")[:80]
        try:
            async with asyncio.timeout(self._deadline_s):
                if upstream is None:
                    upstream = await self._open()
                upstream.writer.write(_with_host(head, self._authority))
                await _relay(reader, upstream.writer, _request_framing(fields))
                keep = await _unless_client_leaves(reader, self._respond(head, upstream.responses, writer))
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

    async def _open(self) -> _Upstream:
        try:
            if self._tls:
                context = ssl.create_default_context()
                opened = await asyncio.open_connection(self._host, self._port, ssl=context, server_hostname=self._host)
            else:
                opened = await asyncio.open_connection(self._host, self._port)
        except OSError as error:
            raise _Refused("upstream_error", f"could not reach {self.tally.upstream}: {error}") from None
        return _Upstream(*opened, UpstreamResponses(opened[0], head_cap=HEAD_CAP))

    async def _respond(self, request_head: bytes, responses: UpstreamResponses, writer: asyncio.StreamWriter) -> bool:
        """The response passed on (interim heads first, one at a time) unless refused, each head as h11 parsed it and
        written again, never the server's bytes; whether the connection carries on."""
        try:
            responses.expect(request_head.split(b" ", 1)[0])
            head = await _final_head(responses, writer)
        except Unreadable as error:
            raise _Refused("refused_head", str(error)) from None
        if head is None:
            return False  # the server closed without answering: so does the guard, as the server would
        if 300 <= head.status < 400:
            location = head.fields.get("location", "")[:200]
            raise _Refused(
                "redirect",
                f"the server answered HTTP {head.status}, a redirect to {location!r}; a qualification run follows no "
                "redirect, so nothing was sent there: give --endpoint the address that answers",
            )
        meter, unsent = self._meter(request_head, head), head.serialised
        try:
            async for content, framed in responses.body():  # the first batch (what came with the head) at once
                if content:
                    meter.feed(content)
                writer.write(unsent + framed)
                unsent = b""
                await writer.drain()
        except (ResponseTooLarge, BadEncoding) as error:
            writer.write(unsent)  # the head alone, where the first batch was already too much: then the cut
            kind: RefusalKind = "over_cap" if isinstance(error, ResponseTooLarge) else "refused_head"
            raise _Refused(kind, str(error), head_sent=True) from None
        self.tally.forwarded += 1
        return responses.reusable

    def _meter(self, request_head: bytes, head: Head) -> BodyMeter:
        """What counts the body as the client will hold it, against the cap: the meter undoes gzip, deflate and br
        (all that aiohttp 3.14 undoes here; zstd only with a zstd module, which it lacks) and refuses any other
        coding, zstd included, as one it cannot bound. A Content-Length over the cap is refused first."""
        encoding = head.fields.get("content-encoding")
        try:
            meter = BodyMeter(encoding, self._cap, keep=False)
        except UnboundedEncoding as error:
            raise _Refused("refused_head", str(error)) from None
        has_body = not request_head.startswith(b"HEAD ") and head.status not in (204, 304)
        length = head.fields.get("content-length", "") if has_body and not head.chunked else ""
        if length.isdigit() and not codings(encoding) and int(length) > self._cap:
            raise _Refused("over_cap", str(ResponseTooLarge(self._cap)))
        return meter


async def _final_head(responses: UpstreamResponses, writer: asyncio.StreamWriter) -> Head | None:
    """The response's final head, each interim (1xx) one before it passed on as parsed; None when the server closed
    first. A 101 is h11's to refuse: no request the guard forwards asks to switch protocols."""
    for _ in range(INTERIM_CAP + 1):
        head = await responses.next_head()
        if head is None or not 100 <= head.status < 200:
            return head
        writer.write(head.serialised)
    raise Unreadable(f"the server sent more than {INTERIM_CAP} interim (1xx) heads before its answer")


async def _next_head(reader: asyncio.StreamReader, upstream: _Upstream | None) -> bytes | None:
    """The client's next request head; None when it closes, or when the idle upstream connection closes (or speaks
    out of turn) first: the client's connection then closes too, as the server's did."""
    if upstream is None:
        return await _read_head(reader)
    head = asyncio.ensure_future(_read_head(reader))
    idle = asyncio.ensure_future(upstream.reader.read(1))
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


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    """AIPerf's next request head up to its blank line (aiohttp ends every line with CRLF); None at a clean end of
    the connection before any byte."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial:
            raise
        return None


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


async def _relay(source: asyncio.StreamReader, sink: asyncio.StreamWriter, framing: _Framing) -> None:
    """A request body passed on as it arrives, its framing bytes as they came."""
    if framing.kind == "chunked":
        await _relay_chunked(source, sink)
    elif framing.kind == "length":
        await _relay_bytes(source, sink, framing.length)
    await sink.drain()


async def _relay_bytes(source: asyncio.StreamReader, sink: asyncio.StreamWriter, length: int) -> None:
    remaining = length
    while remaining > 0:
        data = await source.read(min(READ, remaining))
        if not data:
            raise EOFError("the body ended early")
        sink.write(data)
        await sink.drain()
        remaining -= len(data)


async def _relay_chunked(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while True:
        line = await source.readuntil(b"\r\n")
        size = int(line.split(b";", 1)[0].strip(), 16)  # ValueError on a malformed line: the exchange ends
        sink.write(line)
        if size == 0:
            break
        await _relay_bytes(source, sink, size)
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
