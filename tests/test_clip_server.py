"""The run's loopback clip server (the http video transport): exactly the workload's clips, read-only, on 127.0.0.1,
gone when its `with` ends, whatever ends it."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import httpx
import pytest
from helpers import HTTP

from trtmc_videoqa.results.layout import CLIP_SERVER_LOG
from trtmc_videoqa.serving.clip_server import ClipServer, byte_range
from trtmc_videoqa.transports.clips import ServedFile, clip_route, clip_routes, clip_urls
from trtmc_videoqa.workloads import builtin_workload

SYNTHETIC = builtin_workload("synthetic")


@pytest.fixture
def clips():
    with ClipServer(clip_routes([SYNTHETIC])) as server:
        yield server


def get(url: str, **kwargs) -> httpx.Response:
    return HTTP.get(url, timeout=10, **kwargs)


def refused(url: str) -> bool:
    try:
        get(url)
    except httpx.ConnectError:
        return True
    return False


def test_each_clip_is_served_with_its_bytes_and_content_type(clips) -> None:
    urls = clip_urls(clips.base_url, SYNTHETIC)
    assert set(urls) == {clip.id for clip in SYNTHETIC.spec.clips}
    for clip in SYNTHETIC.spec.clips:
        assert urls[clip.id] == f"{clips.base_url}/clips/synthetic/{clip.id}.mp4"
        response = get(urls[clip.id])
        assert response.status_code == 200
        assert response.content == SYNTHETIC.clip_path(clip.id).read_bytes()
        assert response.headers["content-type"] == clip.mime == "video/mp4"
        assert int(response.headers["content-length"]) == clip.bytes
        head = HTTP.head(urls[clip.id], timeout=10)
        assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) == clip.bytes


def test_a_single_byte_range_is_honoured_for_readers_that_seek(clips) -> None:
    url = clips.url_for(clip_route(SYNTHETIC, "forward"))
    data = SYNTHETIC.clip_path("forward").read_bytes()
    part = get(url, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206 and part.content == data[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{len(data)}"
    assert get(url, headers={"Range": "bytes=-8"}).content == data[-8:]
    assert get(url, headers={"Range": f"bytes={len(data)}-"}).status_code == 416
    assert get(url, headers={"Range": "bytes=0-1,5-6"}).content == data  # several ranges: the whole file
    assert byte_range("bytes=5-", 10) == (5, 9) and byte_range(None, 10) is None
    assert byte_range("bytes=0-99", 10) == (0, 9) and byte_range("bytes=9-3", 10) == "unsatisfiable"


@pytest.mark.parametrize(
    "path",
    [
        "/../x",
        "/clips/synthetic/../synthetic/forward.mp4",
        "/clips/synthetic/%2e%2e/synthetic/forward.mp4",
        "/clips/%2e%2e/%2e%2e/workload.json",
        "/clips/synthetic/workload.json",  # a file beside the clips
        "/clips/synthetic/synthetic-forward.mp4",  # the clip's own file name: only its route is served
        "/clips/synthetic/ATTRIBUTION.md",
        "/clips/synthetic/",  # directories: no listing
        "/clips/synthetic",
        "/clips/",
        "/",
        "/clips/synthetic/unknown.mp4",
        "/etc/passwd",
    ],
)
def test_everything_but_the_clips_is_not_found(clips, path: str) -> None:
    # Sent as written (httpx would normalise `..` away): a raw request line.
    host, port = clips.address
    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
        answer = b"".join(iter(lambda: conn.recv(65536), b""))
    assert answer.startswith(b"HTTP/1.0 404"), answer[:80]
    assert b"ftyp" not in answer


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "FOO"])
def test_it_is_read_only(clips, method: str) -> None:
    url = clips.url_for(clip_route(SYNTHETIC, "forward"))
    response = HTTP.request(method, url, content=b"x", timeout=10)
    assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD"


def test_it_binds_loopback_only_and_logs_to_its_file_not_stderr(tmp_path: Path, capfd) -> None:
    log = tmp_path / CLIP_SERVER_LOG  # under private/: the server makes the folder
    with ClipServer(clip_routes([SYNTHETIC]), log_path=log) as server:
        host, port = server.address
        assert host == "127.0.0.1" and server.base_url == f"http://127.0.0.1:{port}"
        assert get(server.url_for(clip_route(SYNTHETIC, "forward"))).status_code == 200
        assert get(server.base_url + "/nothing").status_code == 404
        other = _non_loopback_address()
        if other is not None:  # the same port on this machine's other address answers nothing
            with pytest.raises(OSError):
                socket.create_connection((other, port), timeout=2).close()
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
    text = log.read_text()
    assert "GET /clips/synthetic/forward.mp4" in text and " 404 " in text


def _non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # no packet is sent: it only picks the outgoing address
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def test_it_is_gone_after_the_with_block(tmp_path: Path) -> None:
    with ClipServer(clip_routes([SYNTHETIC])) as server:
        url = server.url_for(clip_route(SYNTHETIC, "forward"))
        assert get(url).status_code == 200
    assert refused(url)
    assert not [t for t in threading.enumerate() if t.name == "trtmc-videoqa-clips"]


def test_it_is_gone_after_an_interrupt_too_even_with_a_client_mid_request() -> None:
    before = set(threading.enumerate())
    with pytest.raises(KeyboardInterrupt), ClipServer(clip_routes([SYNTHETIC])) as server:
        url = server.url_for(clip_route(SYNTHETIC, "forward"))
        host, port = server.address
        stalled = socket.create_connection((host, port), timeout=10)  # a request that never finishes
        stalled.sendall(b"GET /clips/synthetic/forward.mp4 HTTP/1.0\r\n")
        assert get(url).status_code == 200
        raise KeyboardInterrupt
    stalled.close()
    assert refused(url)
    assert set(threading.enumerate()) <= before  # every handler and the serving thread joined


def test_routes_are_absolute_paths_without_dot_dot(tmp_path: Path) -> None:
    clip = tmp_path / "a.mp4"
    clip.write_bytes(b"x")
    for bad in ("clips/a.mp4", "/clips/../a.mp4"):
        with pytest.raises(ValueError, match="absolute URL path"):
            ClipServer({bad: ServedFile(clip, "video/mp4")})
