"""Run the app under uvicorn: in a background thread (tests, in-process use) or in the foreground (the CLI).

The socket is bound here, before uvicorn starts, so port 0 yields a known port and a non-loopback address is
refused even when the config was built without validation.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import uvicorn

from ..common.atomic_write import write_text_atomic
from .app import create_app
from .config import ReferenceConfig, check_loopback

if TYPE_CHECKING:
    from starlette.types import ASGIApp

STARTUP_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0


def bind_socket(config: ReferenceConfig) -> socket.socket:
    check_loopback(config.host, allow_non_loopback=config.allow_non_loopback)
    family, kind, proto, _, address = socket.getaddrinfo(config.host, config.port, type=socket.SOCK_STREAM)[0]
    # "localhost" could resolve anywhere; what is bound must be loopback too. An IPv4 or IPv6 address is a
    # (host, port, ...) tuple whose host is a str; str() says so to the type checker.
    check_loopback(str(address[0]), allow_non_loopback=config.allow_non_loopback)
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def socket_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    return f"http://{shown}:{port}"


def write_url_file(path: Path, url: str) -> None:
    """Atomically, so a process polling for it never reads half a URL; into a folder that exists, never through a
    link or into a device (a new, unpredictable temporary name each time)."""
    write_text_atomic(path, url + "\n", make_parents=False)


def _uvicorn_server(config: ReferenceConfig, app: ASGIApp | None = None) -> uvicorn.Server:
    # No logging config and no access log: library code prints nothing; warnings reach stderr via logging.
    return uvicorn.Server(
        uvicorn.Config(
            app if app is not None else create_app(config),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="on",
            # A request still open when the run stops the double is cut off after a second: a run stops it
            # only after its requests ended or on its way out (a timeout, Ctrl-C), and nothing waits for the answer.
            timeout_graceful_shutdown=1,
        )
    )


class ReferenceServer:
    """``with ReferenceServer(config) as server: httpx.get(server.url + "/health/live")``.

    Runs in a daemon thread of this process, so the crash knob (os._exit) would end this process too:
    use ``argv_for_subprocess`` for that.
    """

    def __init__(self, config: ReferenceConfig | None = None, app: ASGIApp | None = None) -> None:
        """`app`: another ASGI app to serve the same way (a test double built on this one's); default its own."""
        self.config = config or ReferenceConfig()
        self.app = app
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("the reference server is not running; use it as a context manager")
        return self._url

    def start(self) -> ReferenceServer:
        self._socket = bind_socket(self.config)
        self._server = _uvicorn_server(self.config, self.app)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name="trtmc-videoqa-reference",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the reference server did not start (see the warnings logged on stderr)")
            time.sleep(0.01)
        self._url = socket_url(self._socket)
        if self.config.url_file is not None:
            write_url_file(self.config.url_file, self._url)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None
        self._url = None

    def __enter__(self) -> ReferenceServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()


def serve(
    config: ReferenceConfig, on_listening: Callable[[str], None] | None = None, app: ASGIApp | None = None
) -> int:
    """Serve in the foreground until interrupted (SIGINT/SIGTERM stop it gracefully); returns the exit code.
    `app`: another ASGI app to serve on the config's host and port (a test double built on this one's)."""
    sock = bind_socket(config)
    try:
        url = socket_url(sock)
        server = _uvicorn_server(config, app)
        if config.url_file is not None:
            write_url_file(config.url_file, url)
        if on_listening is not None:
            on_listening(url)
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
