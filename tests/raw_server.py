"""A loopback HTTP server whose every byte a test decides: for the hostile servers of test_bounded_reads.py,
test_guard_parser.py and test_faults_server_text.py; and AIPerf's own HTTP client asking one."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

Answer = Callable[[int, bytes], "bytes | Callable[[socket.socket], None]"]


class RawServer:
    """HTTP/1.1 on a socket: `answer(n, request)` gives the n-th request's (from 1) response bytes, or a function
    that sends them itself; connections are kept alive unless a response says `Connection: close`."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[bytes] = []
        self.connections = 0
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(30)
        buffer = b""
        with conn:
            try:
                while not self._stop.is_set():
                    while b"\r\n\r\n" not in buffer:
                        data = conn.recv(65536)
                        if not data:
                            return
                        buffer += data
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    length = next(
                        (
                            int(line.split(b":")[1])
                            for line in head.split(b"\r\n")
                            if line.lower().startswith(b"content-length:")
                        ),
                        0,
                    )
                    while len(buffer) < length:
                        buffer += conn.recv(65536)
                    request, buffer = head + b"\r\n\r\n" + buffer[:length], buffer[length:]
                    with self._lock:
                        self.requests.append(request)
                        number = len(self.requests)
                    response = self.answer(number, request)
                    if callable(response):
                        response(conn)
                        return
                    conn.sendall(response)
                    if b"connection: close" in response.split(b"\r\n\r\n")[0].lower():
                        return
            except OSError:
                return


def response(body: bytes, *, status: str = "200 OK", headers: tuple[str, ...] = ()) -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def chat(answer: str = "A", **extra: Any) -> bytes:
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        **extra,
    }
    return response(json.dumps(body).encode(), headers=("Content-Type: application/json",))


async def aiohttp_posts(url: str, count: int) -> list[tuple[int, str]]:
    """What AIPerf's HTTP client (aiohttp, redirects followed, bodies inflated by default) gets, `count` times."""
    import aiohttp

    found = []
    async with aiohttp.ClientSession() as session:
        for index in range(count):
            try:
                async with session.post(url + "/v1/chat/completions", json={"n": index}) as answer:
                    found.append((answer.status, await answer.text()))
            except aiohttp.ClientError as error:
                found.append((0, f"{type(error).__name__}: {error}"))
    return found
