"""Issue 33, items 1 and 2: the loopback guard reads every response with h11 and passes on only what it parsed, so a
server cannot show the guard one head and aiohttp (AIPerf's client) another. A `100 Continue` or `103 Early Hints`
ended by bare line feeds hid a 307 that aiohttp followed; a folded or bare-LF `Content-Encoding` hid a gzip bomb
from the cap. Each hostile server is a loopback socket server whose every byte the test decides (tests/raw_server.py);
the last test runs AIPerf itself through `qualify --endpoint`."""

from __future__ import annotations

import asyncio
import json
import zlib
from pathlib import Path

import pytest
from helpers import QUICK, qualify, row
from raw_server import RawServer, aiohttp_posts, chat, response

from trtmc_videoqa.serving.forward_proxy import ForwardProxy
from trtmc_videoqa.stages.aiperf import GUARD_RAN

MIB = 1 << 20
# Interim heads ended by bare line feeds: a reader that looks for the first CRLF CRLF takes the 307 after one of
# them for part of the same interim head.
INTERIM = {
    "100": b"HTTP/1.1 100 Continue\n\n",
    "103": b"HTTP/1.1 103 Early Hints\nLink: </clip.mp4>; rel=preload\n\n",
}


def _redirect_after(interim: bytes, location: str) -> bytes:
    return interim + response(b"", status="307 Temporary Redirect", headers=(f"Location: {location}",))


def _zeros_gzip(mib: int) -> bytes:
    """`mib` MiB of zeros as one gzip member: about a thousandth of that on the wire."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * MIB
    return b"".join(packer.compress(zeros) for _ in range(mib)) + packer.flush()


async def _inflated(url: str) -> tuple[int, str]:
    """How many bytes aiohttp inflated from one answer, counted as they come (never held), and how it ended."""
    import aiohttp  # here, as raw_server.py does: not at collection, in every worker

    inflated = 0
    async with aiohttp.ClientSession() as session:
        try:
            async with session.post(url + "/v1/chat/completions", json={}) as answer:
                async for piece in answer.content.iter_chunked(MIB):
                    inflated += len(piece)
        except aiohttp.ClientError as error:
            return inflated, type(error).__name__
    return inflated, "whole"


@pytest.mark.parametrize("interim", INTERIM, ids=[f"after-{status}" for status in INTERIM])
def test_a_redirect_behind_a_bare_lf_interim_head_is_refused_and_nothing_reaches_its_target(interim: str) -> None:
    with RawServer(lambda n, request: chat()) as target:
        hostile = _redirect_after(INTERIM[interim], target.url + "/v1/chat/completions")
        with (
            RawServer(lambda n, request: chat() if n == 1 else hostile) as upstream,
            ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=10) as guard,
        ):
            answers = asyncio.run(aiohttp_posts(guard.url, 3))
        assert target.requests == []  # the old guard passed the 307 on inside the interim head: aiohttp followed it
    assert [status for status, _ in answers] == [200, 502, 502], answers
    assert "HTTP 307, a redirect to 'http://127.0.0.1:" in answers[1][1]
    assert guard.tally.redirect == 2 and guard.tally.forwarded == 1
    assert "refused 2 redirect(s)" in guard.tally.cause()


HIDDEN_ENCODING = {
    "folded": b"Content-Type: application/json\r\nContent-Encoding:\r\n gzip\r\n",
    "bare-lf": b"Content-Type: application/json\nContent-Encoding: gzip\r\n",
}


@pytest.mark.parametrize("form", HIDDEN_ENCODING)
def test_a_gzip_bomb_behind_a_folded_or_bare_lf_encoding_is_cut_at_the_cap_once_decoded(form: str) -> None:
    bomb = _zeros_gzip(128)  # 128 MiB inflated, about 128 KB on the wire: far under the cap as it travels
    head = b"HTTP/1.1 200 OK\r\n" + HIDDEN_ENCODING[form] + b"Content-Length: %d\r\n\r\n" % len(bomb)
    with (
        RawServer(lambda n, request: head + bomb if n == 1 else chat()) as upstream,
        ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=10) as guard,
    ):
        inflated, ended = asyncio.run(_inflated(guard.url))
        after = asyncio.run(aiohttp_posts(guard.url, 1))
    # The old guard saw no Content-Encoding, counted the wire bytes and passed the bomb on: aiohttp inflated 128 MiB.
    assert inflated <= MIB, f"aiohttp inflated {inflated / MIB:.1f} MiB through a 1 MiB cap"
    assert ended == "ClientPayloadError"  # cut mid-body: the client sees the answer broken off
    assert guard.tally.over_cap == 1 and "past 1 MiB once decoded" in guard.tally.cause()
    assert after == [(200, after[0][1])]  # the next exchange is answered as usual


def test_the_guard_passes_on_the_head_it_parsed_never_the_servers_bytes() -> None:
    """Folding unfolded, bare line feeds made CRLF, a Content-Length beside chunked framing dropped, the chunks
    framed again; the header names, values and body content as the server sent them."""
    answer = (
        b"HTTP/1.1 200 OK\nX-Folded: one\r\n two\r\nx-NAME-case: Kept\nContent-Length: 99\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-T: t\r\n\r\n"
    )
    with (
        RawServer(lambda n, request: answer) as upstream,
        ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=10) as guard,
    ):
        host, port = guard.url.removeprefix("http://").split(":")
        received = _read_all(host, int(port), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, body = received.partition(b"\r\n\r\n")
    assert head == (
        b"HTTP/1.1 200 OK\r\nX-Folded: one two\r\nx-NAME-case: Kept\r\nTransfer-Encoding: chunked\r\nConnection: close"
    )
    assert _dechunked(body) == (b"hello!", b"X-T: t\r\n")  # framed anew: as it arrived, extensions left out
    assert guard.tally.forwarded == 1


def _dechunked(body: bytes) -> tuple[bytes, bytes]:
    """A chunked body's content and trailers, each chunk-size line nothing but hex digits."""
    content = b""
    while True:
        size, _, body = body.partition(b"\r\n")
        assert size and all(c in b"0123456789abcdef" for c in size), size
        if int(size, 16) == 0:
            assert body.endswith(b"\r\n")
            return content, body[:-2]
        content, body = content + body[: int(size, 16)], body[int(size, 16) :]
        assert body.startswith(b"\r\n")
        body = body[2:]


def _read_all(host: str, port: int, request: bytes) -> bytes:
    import socket

    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(request)
        received = b""
        while data := conn.recv(65536):
            received += data
        return received


@pytest.mark.e2e
def test_aiperf_through_qualify_follows_no_redirect_behind_an_interim_head(tmp_path: Path) -> None:
    """The capability check gets a good answer; then every AIPerf request meets a 100 or a 103 ended by bare line
    feeds and a 307 to another server. Nothing reaches that server, guard.json counts each redirect and the aiperf
    stage does not claim that no redirect was followed."""
    with RawServer(lambda n, request: chat()) as target:
        location = target.url + "/v1/chat/completions"
        moved = [_redirect_after(INTERIM[status], location) for status in ("100", "103")]
        with RawServer(lambda n, request: chat() if n == 1 else moved[n % 2]) as hostile:
            out = tmp_path / "out"
            done = qualify("--endpoint", hostile.url, "--model", "m", "--out", str(out), *QUICK, timeout=150)
            sent = len(hostile.requests) - 1
        assert done.returncode == 3, done.stderr  # the row failed at aiperf
        assert target.requests == []
    failed = row(out, "m")
    assert failed.status == "failed" and failed.failed_stage == "aiperf", failed.status_reason
    assert "refused" in failed.status_reason and "redirect(s)" in failed.status_reason
    tally = json.loads((out / "checkpoints" / "m" / "aiperf" / "guard.json").read_text())
    assert tally["redirect"] == sent >= 2 and tally["forwarded"] == 0, tally
    aiperf = next(stage for stage in failed.stages if stage.name == "aiperf")
    assert GUARD_RAN not in aiperf.detail and "no redirect followed" not in aiperf.detail
