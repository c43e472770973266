"""A loopback static file server for exactly the clips of a run: the http video transport.

Some servers refuse a clip sent as a base64 data URL but fetch an http URL (Hugging Face `transformers serve`
answers a data URL with HTTP 500). AIPerf passes an http URL in a row's `video` field through unchanged, so the run
serves its own clips here and sends their URLs.

What it serves is a fixed mapping of URL path -> file, nothing else: GET and HEAD only (any other method 405),
every other path 404 (`..`, its percent-encoded form, directories, the other files beside a clip), no listing. A
single byte range is honoured (206), since video readers that stream over http seek in the file. It binds
127.0.0.1 on an ephemeral port, writes its access log to a file (or nowhere) and never to stderr, and stops with
its `with` block, also on an exception or SIGINT: the listening socket is closed, open connections are shut down
and every thread joined.
"""

from __future__ import annotations

import contextlib
import re
import socket
import socketserver
import stat
import threading
import traceback
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from ..common.atomic_write import open_for_appending
from ..transports.clips import ServedFile

LOOPBACK = "127.0.0.1"
_CHUNK = 64 * 1024
_ALLOWED = "GET, HEAD"
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_STOP_TIMEOUT_S = 10.0


def byte_range(header: str | None, size: int) -> tuple[int, int] | None | str:
    """(first, last) of a single satisfiable `bytes=` range; None to send the whole file (no header, or one this
    server does not take, such as several ranges: a server may ignore Range); "unsatisfiable" past the end."""
    match = _RANGE.match((header or "").strip())
    if match is None or match.groups() == ("", ""):
        return None
    first_text, last_text = match.groups()
    if not first_text:  # a suffix: the last N bytes
        suffix = int(last_text)
        return (max(size - suffix, 0), size - 1) if suffix and size else "unsatisfiable"
    first = int(first_text)
    last = min(int(last_text), size - 1) if last_text else size - 1
    if first >= size or first > last:
        return "unsatisfiable"
    return first, last


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: nothing idles open after a response
    server_version = "trtmc-videoqa-clips"
    sys_version = ""
    timeout = 30  # seconds a client may stall mid-request before its connection is dropped

    def do_GET(self) -> None:  # noqa: N802 (the handler's naming scheme)
        self._serve(with_body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(with_body=False)

    def __getattr__(self, name: str) -> Any:
        # The base class answers an unknown method 501; every method but GET and HEAD is refused alike, 405.
        if name.startswith("do_"):
            return self._not_allowed
        raise AttributeError(name)

    def _not_allowed(self) -> None:
        self._plain(405, "method not allowed: this server is read-only (GET and HEAD)", {"Allow": _ALLOWED})

    def _plain(self, status: int, text: str, headers: Mapping[str, str] | None = None) -> None:
        body = (text + "\n").encode()
        self.send_response(status)
        for name, value in {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _serve(self, *, with_body: bool) -> None:
        served = self.server.files.get(unquote(urlsplit(self.path).path))
        try:
            info = served.path.stat() if served is not None else None
        except OSError:
            info = None
        if served is None or info is None or not stat.S_ISREG(info.st_mode):
            self._plain(404, "not found")
            return
        size = info.st_size
        wanted = byte_range(self.headers.get("Range"), size)
        if wanted == "unsatisfiable":
            self._plain(416, "range not satisfiable", {"Content-Range": f"bytes */{size}"})
            return
        first, last = wanted if isinstance(wanted, tuple) else (0, size - 1)
        self.send_response(206 if isinstance(wanted, tuple) else 200)
        self.send_header("Content-Type", served.mime)
        self.send_header("Content-Length", str(last - first + 1))
        self.send_header("Accept-Ranges", "bytes")
        if isinstance(wanted, tuple):
            self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.end_headers()
        if with_body:
            self._copy(served.path, first, last - first + 1)

    def _copy(self, path: Path, start: int, length: int) -> None:
        with path.open("rb") as source:
            source.seek(start)
            while length > 0:
                chunk = source.read(min(_CHUNK, length))
                if not chunk:
                    break
                self.wfile.write(chunk)
                length -= len(chunk)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        self.server.log(f"{self.client_address[0]} {format % args}")


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    # Handler threads are joined on close (block_on_close), after stop() has shut their connections down.
    daemon_threads = False
    block_on_close = True

    def __init__(self, files: Mapping[str, ServedFile], log: IO[str] | None) -> None:
        self.files = dict(files)
        self._log = log
        self._log_lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__((LOOPBACK, 0), _Handler)

    def log(self, line: str) -> None:
        if self._log is not None:
            with self._log_lock:
                self._log.write(line.rstrip("\n") + "\n")
                self._log.flush()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._open_lock:
            for connection in list(self._open):
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-transfer is routine; whatever it is goes to the log file, never stderr.
        self.log(f"{client_address[0]} error: {traceback.format_exc(limit=3).strip()}")


class ClipServer:
    """``with ClipServer({"/clips/w/forward.mp4": ServedFile(path, "video/mp4")}) as clips: clips.url_for(...)``."""

    def __init__(self, files: Mapping[str, ServedFile], *, log_path: Path | None = None) -> None:
        for route in files:
            if not route.startswith("/") or ".." in route.split("/"):
                raise ValueError(f"clip route {route!r} must be an absolute URL path without '..'")
        self.files = dict(files)
        self.log_path = log_path
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._log: IO[str] | None = None

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            raise RuntimeError("the clip server is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.address[1]}"  # the only address it binds

    def url_for(self, route: str) -> str:
        if route not in self.files:
            raise KeyError(f"{route!r} is not served here")
        return self.base_url + route

    def start(self) -> ClipServer:
        if self.log_path is not None:
            self._log = open_for_appending(self.log_path)
        try:
            self._server = _Server(self.files, self._log)
        except BaseException:
            self.stop()
            raise
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="trtmc-videoqa-clips", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Idempotent: stop accepting, shut open connections, close the socket, join every thread, close the log."""
        server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is not None:
            if thread is not None:
                server.shutdown()  # returns once serve_forever has left its loop
                thread.join(_STOP_TIMEOUT_S)
            server.drop_connections()
            server.server_close()  # closes the listening socket, then joins the handler threads
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> ClipServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
