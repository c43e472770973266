"""Issue 26, items 3 and 4: every response the tool reads is read under a byte cap after decoding and a deadline for
the whole request; AIPerf's requests to a server this run did not start go through the loopback guard, which
follows no redirect and cuts a response past the cap; AIPerf's exports are scrubbed as a stream and cut only
between whole records. Each hostile server here is a loopback socket server whose every byte the test decides.
Only the last test launches AIPerf."""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import resource
import socket
import struct
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import brotli  # type: ignore[import-untyped]
import pytest
from helpers import QUICK, qualify, row
from raw_server import RawServer, aiohttp_posts, chat, response

from trtmc_videoqa.aiperf.exports import read_client_records
from trtmc_videoqa.aiperf.scrub import CUT_KEY, scrub_export_file
from trtmc_videoqa.climb.protocol import EndpointRow, RowJob
from trtmc_videoqa.plan.settings import RunSettings
from trtmc_videoqa.results import StageResult
from trtmc_videoqa.serving.bounded_http import BodyMeter, ResponseTooLarge, UnboundedEncoding
from trtmc_videoqa.serving.capability import FIELDS_KEPT, check_capability
from trtmc_videoqa.serving.forward_proxy import ForwardProxy, GuardTally
from trtmc_videoqa.stages.aiperf import GUARD_RAN, _guarded_stage, guarded
from trtmc_videoqa.workloads import builtin_workload

MIB = 1 << 20
CLIP = builtin_workload("synthetic").clip_path("forward")


def redirect(location: str) -> bytes:
    return response(b"", status="307 Temporary Redirect", headers=(f"Location: {location}",))


_MEMBER = gzip.compress(b"\0" * MIB, compresslevel=9)  # about 1 KB; members concatenated are one gzip body


@functools.cache
def _zeros_gzip(mib: int) -> bytes:
    """One gzip member of `mib` MiB of zeros, about 1 KB per MiB: a byte-aligned deflate block of 1 MiB of zeros
    (after a full flush it depends on nothing before it) repeated, with a true CRC and size at the end."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = deflate.compress(b"\0" * MIB) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc, zeros = 0, b"\0" * MIB
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    trailer = struct.pack("<II", crc, (mib * MIB) & 0xFFFFFFFF)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + block * mib + deflate.flush() + trailer


def gzip_bomb(inflated_mib: int) -> bytes:
    """`inflated_mib` MiB of zeros once inflated, one gzip member, about a thousandth of that on the wire."""
    return response(_zeros_gzip(inflated_mib), headers=("Content-Type: application/json", "Content-Encoding: gzip"))


def drip(every_s: float, for_s: float) -> Callable[[socket.socket], None]:
    """A head promising 100,000 bytes, then one byte every `every_s` for `for_s` seconds."""

    def send(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        ends = time.monotonic() + for_s
        while time.monotonic() < ends:
            conn.sendall(b" ")
            time.sleep(every_s)

    return send


def capability(url: str, **options: Any) -> Any:
    options.setdefault("timeout_s", 10.0)
    return check_capability(url, "m", CLIP, "Which way?", max_tokens=4, body_limit=4 * MIB, **options)


def _peak_mib(call: Callable[[], Any]) -> tuple[Any, float]:
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()


# --- the tool's own reads: the capability check and the identity clients ----------------------------------------


def test_a_gzip_bomb_stops_at_the_cap_and_the_failure_names_it() -> None:
    with RawServer(lambda n, request: gzip_bomb(1024)) as bomb:  # 1 GiB inflated, about 1 MB on the wire
        result, peak = _peak_mib(lambda: capability(bomb.url))
    assert not result.accepted and result.http_status is None
    assert "16 MiB once decoded (--max-response-bytes" in result.detail, result.detail
    assert peak < 64, f"{peak:.0f} MiB held for a 16 MiB cap"  # stopped at the cap, never inflated it all


def test_a_plain_answer_longer_than_the_cap_is_refused_naming_the_option() -> None:
    with RawServer(lambda n, request: chat("A" * (3 * MIB))) as long:
        result = capability(long.url, max_response_bytes=MIB)
    assert not result.accepted and "past 1 MiB once decoded (--max-response-bytes 1048576)" in result.detail


def test_request_timeout_is_a_deadline_for_the_whole_answer_not_for_each_read() -> None:
    with RawServer(lambda n, request: drip(0.1, 60)) as slow:  # one byte per 100 ms: every read is quick
        started = time.monotonic()
        result = capability(slow.url, timeout_s=1.0)
        waited = time.monotonic() - started
    # A hang guard, ten times the deadline: a per-read timeout would wait out the whole minute of drip.
    assert not result.accepted and waited < 10, f"waited {waited:.1f} s for a 1 s deadline"
    assert "within 1 s (--request-timeout), connecting to last byte" in result.detail


def test_the_identity_clients_read_under_the_same_deadline_and_cap() -> None:
    from trtmc_videoqa.climb.prompts import workload_prompts
    from trtmc_videoqa.stages.identity.compare import ENDPOINT_NATIVE_REQUEST, chat_answers, native_answers

    prompts = workload_prompts(builtin_workload("synthetic"))[:1]
    with RawServer(lambda n, request: drip(0.1, 60)) as slow, RawServer(lambda n, r: gzip_bomb(256)) as bomb:
        started = time.monotonic()
        chat = chat_answers(slow.url, "m", prompts, max_tokens=4, timeout_s=1, body_limit=4 * MIB, api_key=None)
        native = native_answers(bomb.url, ENDPOINT_NATIVE_REQUEST, prompts, max_tokens=4, timeout_s=10)
        waited = time.monotonic() - started
    assert chat[0].error is not None and "within 1 s (--request-timeout)" in chat[0].error
    assert native[0].error is not None and "--max-response-bytes" in native[0].error
    assert waited < 30  # a hang guard: a per-read timeout would wait out the whole minute of drip


def test_an_answer_sent_before_the_whole_body_was_read_is_the_response() -> None:
    """A server that refuses a body by its declared length answers 413 and closes without reading it: the send fails
    half way (a broken pipe or a reset), and the answer is still read, as httpx reads it."""
    from trtmc_videoqa.serving.bounded_http import BoundedClient

    listener = socket.create_server(("127.0.0.1", 0))
    answer = b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 9\r\nconnection: close\r\n\r\ntoo large"

    def refuse() -> None:
        conn, _ = listener.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(4096)
            conn.sendall(answer)
            conn.shutdown(socket.SHUT_WR)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # a reset for the rest

    server = threading.Thread(target=refuse, daemon=True)
    server.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"
    with listener:
        response = BoundedClient(timeout_s=30).post(
            url, content=b"x" * (64 << 20), headers={"Content-Type": "application/json"}
        )
    server.join(timeout=30)
    assert (response.status_code, response.content) == (413, b"too large")


def test_a_redirect_is_named_and_never_followed() -> None:
    with RawServer(lambda n, request: chat()) as target:
        with RawServer(lambda n, request: redirect(target.url + "/v1/chat/completions")) as moved:
            result = capability(moved.url)
        assert target.requests == []
    assert not result.accepted and result.http_status == 307
    assert "a redirect to 'http://127.0.0.1:" in result.detail and "not followed" in result.detail


def test_the_server_fields_kept_in_capability_json_are_bounded() -> None:
    many = {f"small_{i}": "s" * 100 for i in range(400)}  # about 50 KB in all: only the first ones fit
    extra = {"huge": "x" * (8 * MIB), "k" * 5000: 1, "timing": {"ms": 3}, **many}
    with RawServer(lambda n, request: chat(system_fingerprint="f" * 100_000, **extra)) as chatty:
        result = capability(chatty.url)
    assert result.accepted
    kept = json.dumps(result.response_fields)
    assert len(kept) < FIELDS_KEPT + 4096, len(kept)
    assert result.response_fields["timing"] == {"ms": 3} and "small_0" in result.response_fields
    assert "'huge' (8388" in kept and "'kkkk" in kept and "more" in kept and "k" * 100 not in kept
    assert result.served_by is not None and len(result.served_by) <= 64


def test_the_meter_undoes_stacked_and_concatenated_encodings_and_refuses_the_unknown() -> None:
    text = b"answer " * 10_000
    stacked = brotli.compress(gzip.compress(text[:30_000]) + b"")  # gzip first, then br: "gzip, br"
    meter = BodyMeter("gzip, br", 1 << 30, keep=True)
    for index in range(0, len(stacked), 7):
        meter.feed(stacked[index : index + 7])
    assert meter.body() == text[:30_000]
    raw_deflate = zlib.compressobj(wbits=-15)
    body = raw_deflate.compress(text) + raw_deflate.flush()
    meter = BodyMeter("deflate", 1 << 30, keep=True)
    meter.feed(body)
    assert meter.body() == text
    meter = BodyMeter("gzip", 1 << 30, keep=True)
    meter.feed(gzip.compress(b"one ") + gzip.compress(b"two"))
    assert meter.body() == b"one two"
    bomb = BodyMeter("gzip", 16 * MIB, keep=False)
    with pytest.raises(ResponseTooLarge):
        bomb.feed(_MEMBER * 1024)  # 1 GiB: stops one piece past the cap
    assert bomb.decoded <= 17 * MIB
    with pytest.raises(UnboundedEncoding):
        BodyMeter("zstd", MIB, keep=False)


# --- the loopback guard between AIPerf and a server this run did not start ---------------------------------------


def _exchange(url: str, request: bytes, *, read_s: float = 5.0) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as conn:
        conn.sendall(request)
        conn.settimeout(read_s)
        received = b""
        try:
            while data := conn.recv(65536):
                received += data
        except TimeoutError:
            pass
        return received


def test_the_guard_passes_request_bytes_unchanged_but_host_and_the_response_as_parsed() -> None:
    answer = (
        b"HTTP/1.1 200 OK\r\nX-Odd-Header:  kept   as is\r\ncontent-type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    with RawServer(lambda n, request: answer) as upstream:
        with ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=10) as guard:
            port = guard.url.rsplit(":", 1)[1]
            body = b'{"model": "m", "messages": []}'
            request = (
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nX-Request-ID: abc-1\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (port.encode(), len(body), body)
            )
            received = _exchange(guard.url, request)
        upstream_port = upstream.url.rsplit(":", 1)[1].encode()
        assert upstream.requests == [request.replace(b"127.0.0.1:" + port.encode(), b"127.0.0.1:" + upstream_port)]
    # The response as h11 parsed it, written again (tests/test_guard_parser.py): values trimmed, chunks framed anew.
    assert received == answer.replace(b":  kept", b": kept").replace(b"5;ext=1", b"5")
    assert guard.tally.forwarded == 1 and guard.tally.cause() == ""


def test_the_guard_forwards_each_streamed_chunk_as_it_arrives() -> None:
    client_saw_first = threading.Event()

    def stream(conn: socket.socket) -> None:
        # The second chunk is sent only once the client has the first: a guard that held chunks back until it had
        # more would leave the client waiting until this gives up (a hang guard of 60 s), and the test fails.
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        conn.sendall(b"6\r\ndata:1\r\n")
        client_saw_first.wait(60)
        conn.sendall(b"6\r\ndata:2\r\n0\r\n\r\n")

    with (
        RawServer(lambda n, request: stream) as upstream,
        ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=10) as guard,
    ):
        host, port = guard.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as conn:
            conn.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
            conn.settimeout(90)
            seen = b""
            while b"data:1" not in seen:
                seen += conn.recv(65536)
            first_alone = b"data:2" not in seen  # it came before the upstream had sent the second
            client_saw_first.set()
            while not seen.endswith(b"0\r\n\r\n"):
                seen += conn.recv(65536)
    assert first_alone, "the first chunk was held back until the second came"
    assert b"data:1" in seen and b"data:2" in seen


def test_the_guard_refuses_a_redirect_after_the_first_answer_and_sends_nothing_there() -> None:
    with RawServer(lambda n, request: chat()) as target:
        moved = redirect(target.url + "/v1/chat/completions")
        with (
            RawServer(lambda n, request: chat() if n == 1 else moved) as upstream,
            ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=10) as guard,
        ):
            answers = asyncio.run(aiohttp_posts(guard.url, 3))
        assert target.requests == []
    assert [status for status, _ in answers] == [200, 502, 502]
    assert "redirect to 'http://127.0.0.1:" in answers[1][1] and "follows no redirect" in answers[1][1]
    assert guard.tally.redirect == 2 and "refused 2 redirect(s)" in guard.tally.cause()


def test_the_guard_cuts_a_gzip_bomb_and_refuses_what_it_cannot_bound() -> None:
    answers = {
        1: gzip_bomb(1024),
        2: response(b"x" * (2 * MIB)),
        3: response(b"x", headers=("Content-Encoding: zstd",)),
    }
    with (
        RawServer(lambda n, request: answers.get(n, chat())) as upstream,
        ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=10) as guard,
    ):
        found, peak = _peak_mib(lambda: asyncio.run(aiohttp_posts(guard.url, 4)))
    assert found[0][0] == 0 and "Payload" in found[0][1], found[0]  # cut mid-body: the client sees it broken off
    assert found[1][0] == 502 and "--max-response-bytes" in found[1][1]  # a Content-Length over the cap, up front
    assert found[2][0] == 502 and "zstd" in found[2][1]
    assert found[3][0] == 200
    assert guard.tally.over_cap == 2 and guard.tally.refused_head == 1
    assert "past 1 MiB once decoded (--max-response-bytes)" in guard.tally.cause()
    assert peak < 64, f"{peak:.0f} MiB held through a 1 MiB cap"


def test_the_guard_keeps_one_upstream_connection_per_client_connection() -> None:
    with RawServer(lambda n, request: chat()) as upstream:
        with ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=10) as guard:
            answers = asyncio.run(aiohttp_posts(guard.url, 5))
        assert [status for status, _ in answers] == [200] * 5
        assert upstream.connections == 1 and guard.tally.forwarded == 5


def test_the_guard_ends_an_exchange_at_its_deadline() -> None:
    with (
        RawServer(lambda n, request: drip(0.1, 60)) as upstream,
        ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=0.5) as guard,
    ):
        started = time.monotonic()
        _exchange(guard.url, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", read_s=30)
        waited = time.monotonic() - started
    # The guard closed the exchange (a hang guard of 20 s: without the deadline the read waits its 30 s out).
    assert waited < 20 and guard.tally.deadline == 1


# --- AIPerf's exports: streamed, cut only between whole records, saying where ------------------------------------


def test_the_scrub_cuts_only_between_whole_records_and_says_where(tmp_path: Path) -> None:
    export = tmp_path / "profile_export_raw.jsonl"
    lines = [json.dumps({"metadata": {"x_request_id": f"r{i}"}, "text": "y" * 300}) + "\n" for i in range(50)]
    export.write_text("".join(lines))
    scrub_export_file(export, [], cap=4000)
    kept = export.read_text().splitlines()
    records = [json.loads(line) for line in kept]
    cut = records[-1][CUT_KEY]
    assert [json.dumps(r) + "\n" for r in records[:-1]] == lines[: len(records) - 1]
    assert cut["cut_before_line"] == len(records) and cut["dropped_lines"] == 50 - len(records) + 1
    assert cut["kept_bytes"] <= 4000 and cut["cap_bytes"] == 4000


def test_the_scrub_streams_a_record_far_over_its_cap_without_holding_it(tmp_path: Path) -> None:
    export = tmp_path / "profile_export_raw.jsonl"
    with export.open("wb") as handle:
        handle.write(b'{"first": 1}\n')
        handle.write(b'{"answer": "' + b"z" * (40 * MIB) + b'"}\n')
        handle.write(b'{"last": 1}\n')
    _, peak = _peak_mib(lambda: scrub_export_file(export, [], cap=MIB))
    kept = export.read_text().splitlines()
    assert kept[0] == '{"first": 1}' and json.loads(kept[1])[CUT_KEY]["dropped_lines"] == 2
    assert peak < 8, f"{peak:.0f} MiB held to scrub with a 1 MiB cap"


def test_the_scrub_keeps_undecodable_bytes_and_still_redacts(tmp_path: Path) -> None:
    export = tmp_path / "aiperf.log"
    export.write_bytes(b"key s3cret-value \xff\xfe kept\n" + b"plain \xc3\x28 line\n")
    scrub_export_file(export, ["s3cret-value"])
    assert export.read_bytes() == b"key <redacted> \xff\xfe kept\n" + b"plain \xc3\x28 line\n"


def test_reading_records_skips_a_line_over_the_cap_without_holding_it(tmp_path: Path, monkeypatch) -> None:
    import trtmc_videoqa.aiperf.exports as exports

    monkeypatch.setattr(exports, "EVIDENCE_CAP", MIB)
    export = tmp_path / "profile_export_raw.jsonl"
    record = {"metadata": {"conversation_id": "s1", "x_request_id": "r1", "benchmark_phase": "profiling"}}
    with export.open("wb") as handle:
        handle.write(json.dumps(record).encode() + b"\n")
        handle.write(b'{"metadata": {"conversation_id": "s2"}, "pad": "' + b"p" * (30 * MIB) + b'"}\n')
    records, peak = _peak_mib(lambda: read_client_records(tmp_path))
    assert [r.session_id for r in records] == ["s1"] and peak < 8


# --- the run: the setting, which rows get the guard, what the row says ---------------------------------------


def test_max_response_bytes_is_a_run_setting_with_its_option_and_default() -> None:
    from trtmc_videoqa.cli.main import build_parser
    from trtmc_videoqa.cli.qualify_args import settings_from, settings_options

    assert RunSettings().max_response_bytes == 16 * MIB and "max_response_bytes" in RunSettings().model_dump()
    assert settings_options()["max_response_bytes"] == "--max-response-bytes"
    parsed = build_parser().parse_args(["qualify", "--max-response-bytes", "1024"])
    assert settings_from(parsed).max_response_bytes == 1024


def test_the_guard_is_for_servers_this_run_did_not_start() -> None:
    def climb(**row: Any) -> Any:
        return SimpleNamespace(row=SimpleNamespace(**({"reference_self_test": False, "comparison": None} | row)))

    endpoint = EndpointRow(job=None, profile="p", tokenizer=Path("."))  # type: ignore[arg-type]
    trtmc = RowJob(job=None, profile="p", tokenizer=Path("."))  # type: ignore[arg-type]
    assert guarded(endpoint, climb())
    assert not guarded(trtmc, climb())  # trtmc-server, started by this run
    assert not guarded(endpoint, climb(reference_self_test=True))
    assert not guarded(endpoint, climb(comparison=object()))  # compare's transformers serve


def test_the_row_says_the_guard_ran_and_names_what_it_refused(tmp_path: Path) -> None:
    passed = StageResult(name="aiperf", status="passed", detail="every one accounted for", evidence=["x"])
    quiet = GuardTally(upstream="http://h", max_response_bytes=MIB)
    stage = _guarded_stage(passed, quiet, tmp_path)
    assert stage.status == "passed" and stage.detail.endswith(GUARD_RAN) and "aiperf/guard.json" in stage.evidence
    refused = GuardTally(upstream="http://h", max_response_bytes=MIB)
    refused.refuse("redirect", "the server answered HTTP 307, a redirect to 'http://elsewhere'")
    stage = _guarded_stage(passed, refused, tmp_path)
    assert stage.status == "failed" and stage.detail.startswith("the loopback guard refused 1 redirect(s)")
    assert json.loads((tmp_path / "aiperf" / "guard.json").read_text())["redirect"] == 1


# --- one run through AIPerf ------------------------------------------------------------------------------------------


@pytest.mark.e2e
def test_a_server_that_turns_hostile_after_its_first_answer_gets_nothing_through(tmp_path: Path) -> None:
    """The capability check gets a good answer; then every AIPerf request meets a 307 to another server or a gzip
    bomb of 1 GiB. Nothing reaches the redirect's target, the row fails at aiperf naming both causes, and no
    process of the run grows past 2 GB."""
    with RawServer(lambda n, request: chat()) as target:
        moved = redirect(target.url + "/v1/chat/completions")
        hostile = RawServer(lambda n, request: chat() if n == 1 else (moved if n % 2 == 0 else gzip_bomb(1024)))
        with hostile:
            out = tmp_path / "out"
            started = time.monotonic()
            done = qualify("--endpoint", hostile.url, "--model", "m", "--out", str(out), *QUICK, timeout=150)
            took = time.monotonic() - started
        assert done.returncode == 3, done.stderr  # the row failed at aiperf
        assert target.requests == []
    failed = row(out, "m")
    assert failed.status == "failed" and failed.failed_stage == "aiperf", failed.status_reason
    assert "refused 4 redirect(s)" in failed.status_reason and "--max-response-bytes" in failed.status_reason
    tally = json.loads((out / "checkpoints" / "m" / "aiperf" / "guard.json").read_text())
    assert tally["redirect"] == 4 and tally["over_cap"] == 3
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 2 * 1024 * 1024  # KiB: the largest process
    assert took < 600  # a hang guard only: the run takes 20-140 s on two cores, more under load


# --- stacked encodings: a cap on their number --------------------------------------------------------------------

_STACKED = ("Content-Type: application/json", "Content-Encoding: " + ", ".join(["gzip"] * 1200))


def test_more_stacked_codings_than_the_cap_are_refused_from_the_head() -> None:
    meter = BodyMeter("gzip, br", MIB, keep=False)  # two still work (the meter test above decodes them)
    assert meter.decoded == 0
    with pytest.raises(UnboundedEncoding, match=r"Content-Encoding stacks 3 codings \(at most 2 are decoded"):
        BodyMeter("gzip, gzip, gzip", MIB, keep=False)
    with pytest.raises(UnboundedEncoding, match="stacks 1200 codings"):
        BodyMeter(", ".join(["gzip"] * 1200), MIB, keep=False)


def test_the_capability_check_reports_stacked_codings_as_a_refused_answer() -> None:
    body = b'{"choices": []}'
    for _ in range(1200):
        body = gzip.compress(body, compresslevel=1)
    with RawServer(lambda n, request: response(body, headers=_STACKED)) as stacked:
        result = capability(stacked.url)  # returns: no RecursionError reaches the caller
    assert not result.accepted and result.http_status is None
    assert "Content-Encoding stacks 1200 codings" in result.detail, result.detail


def test_the_guard_refuses_stacked_codings_and_counts_them() -> None:
    answers = {1: response(b"x", headers=_STACKED)}
    with (
        RawServer(lambda n, request: answers.get(n, chat())) as upstream,
        ForwardProxy(upstream.url, max_response_bytes=MIB, deadline_s=10) as guard,
    ):
        found = asyncio.run(aiohttp_posts(guard.url, 2))
    assert found[0][0] == 502 and "stacks 1200 codings" in found[0][1], found[0]
    assert found[1][0] == 200
    assert guard.tally.refused_head == 1 and "could not bound" in guard.tally.cause()
