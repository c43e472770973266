"""The bounded client verifies https as httpx does by default (certifi's CA store), though it loads that store only at
its first https request (plain http, what a loopback check uses, never loads it)."""

from __future__ import annotations

import http.server
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from trtmc_videoqa.serving.bounded_http import BoundedClient, RequestFailed


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the handler's name is http.server's)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_: object) -> None:
        pass


@contextmanager
def _server(tls: ssl.SSLContext | None) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the self-signed certificate")
def test_https_is_verified_and_plain_http_answers(tmp_path: Path) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    headers = {"content-type": "application/json"}
    client = BoundedClient(timeout_s=30)
    with _server(tls) as https_url, _server(None) as http_url:
        assert client.post(http_url, content=b"{}", headers=headers).json() == {}
        with pytest.raises(RequestFailed, match="CERTIFICATE_VERIFY_FAILED"):
            client.post(https_url, content=b"{}", headers=headers)  # a certificate no CA signed: refused
        assert client.post(http_url, content=b"{}", headers=headers).status_code == 200
