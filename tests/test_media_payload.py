"""The chat payload: data URLs, the request body as AIPerf sends it, its exact size and the body limit."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.request import Request, urlopen

import pytest
from media_clips import Clips

from trtmc_videoqa.media import (
    TRTMC_SERVER_BODY_LIMIT,
    ClipError,
    base64_size,
    chat_request_body,
    check_body_limit,
    encode_body,
    encoded_body_size,
    parse_data_url,
    predicted_body_size,
    video_data_url,
)

MIMES = {
    "mp4": "video/mp4",
    "webm": "video/webm",
    "mkv": "video/x-matroska",
    "avi": "video/x-msvideo",
    "mpg": "video/mpeg",
    "gif": "image/gif",
}


@pytest.mark.parametrize("name", sorted(MIMES))
def test_data_url_round_trip_keeps_bytes_and_names_the_container(name: str, clips: Clips) -> None:
    path = getattr(clips, name)
    url = video_data_url(path)
    assert url.startswith(f"data:{MIMES[name]};base64,")
    mime, data = parse_data_url(url)
    assert (mime, data) == (MIMES[name], path.read_bytes())


def test_mime_comes_from_the_content_not_the_name(clips: Clips, tmp_path: Path) -> None:
    disguised = tmp_path / "really-webm.mp4"
    disguised.write_bytes(clips.webm.read_bytes())
    assert video_data_url(disguised).startswith("data:video/webm;base64,")
    assert video_data_url(clips.mp4, mime="video/quicktime").startswith("data:video/quicktime;base64,")


def test_unnameable_container_asks_for_mime(tmp_path: Path) -> None:
    odd = tmp_path / "clip.bin"
    odd.write_bytes(b"\x01\x02\x03 not a known container")
    with pytest.raises(
        ClipError,
        match=r"clip .*clip.bin has a container this tool cannot name a MIME type for; "
        r"pass mime= explicitly",
    ):
        video_data_url(odd)
    assert video_data_url(odd, mime="application/octet-stream").startswith("data:application/octet-stream;")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://example.invalid/clip.mp4", "not a data URL (it must start with 'data:')"),
        ("data:video/mp4;base64", "no ',' separates the header from the payload"),
        ("data:video/mp4,AAAA", "is not base64"),
        ("data:;base64,AAAA", "no MIME type of the form type/subtype"),
        ("data:video;base64,AAAA", "no MIME type of the form type/subtype"),
        ("data:video/mp4;base64,", "empty payload"),
        ("data:video/mp4;base64,AA*A", "not valid base64"),
        ("data:video/mp4;base64,AAA", "not valid base64"),
    ],
)
def test_malformed_data_urls_are_value_errors(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_data_url(url)


def test_non_string_url_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a data URL"):
        parse_data_url(b"data:video/mp4;base64,AAAA")  # type: ignore[arg-type]


def test_body_has_text_first_then_video_as_aiperf_sends_it() -> None:
    body = chat_request_body("some-model", "Which way does it move?", "data:video/mp4;base64,AAAA", max_tokens=16)
    assert body == {
        "model": "some-model",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Which way does it move?"},
                    {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,AAAA"}},
                ],
            }
        ],
        "max_tokens": 16,
        "temperature": 0.0,
    }


def test_extra_is_merged_but_cannot_replace_model_or_messages() -> None:
    body = chat_request_body(
        "m",
        "q",
        "data:video/mp4;base64,AAAA",
        max_tokens=8,
        extra={"stream": False, "media_io_kwargs": {"video": {"num_frames": 8}}},
    )
    assert body["stream"] is False and body["media_io_kwargs"] == {"video": {"num_frames": 8}}
    with pytest.raises(ValueError, match="extra may not set messages, model"):
        chat_request_body("m", "q", "u", max_tokens=8, extra={"model": "x", "messages": []})


@pytest.mark.parametrize("question", ["Which way does the square move?", "Où va le carré ? 四角はどこへ"])
def test_encoded_size_is_the_length_of_the_compact_json(question: str, clips: Clips) -> None:
    body = chat_request_body("m", question, video_data_url(clips.mp4), max_tokens=16)
    sent = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    assert encode_body(body) == sent
    assert encoded_body_size(body) == len(sent)
    assert json.loads(sent) == body


def test_encoded_size_is_what_a_server_receives(clips: Clips) -> None:
    received: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            received.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        body = chat_request_body("m", "Où?", video_data_url(clips.mp4), max_tokens=16)
        request = Request(
            f"http://127.0.0.1:{server.server_port}/v1/chat/completions",
            data=encode_body(body),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urlopen(request, timeout=10) as response:
            assert response.status == 200
    finally:
        server.shutdown()
        server.server_close()
    assert len(received) == 1 and len(received[0]) == encoded_body_size(body)
    mime, data = parse_data_url(json.loads(received[0])["messages"][0]["content"][1]["video_url"]["url"])
    assert (mime, data) == ("video/mp4", clips.mp4.read_bytes())


def test_base64_size_is_predicted_without_encoding() -> None:
    for size in [0, 1, 2, 3, 4, 5, 100, 1_055_736]:
        assert base64_size(size) == len(base64.b64encode(bytes(size)))
    assert base64_size(1_055_736) == 1_407_648  # bigbuckbunny.mp4: 1,055,736 bytes, 1,407,648 in base64


@pytest.mark.parametrize("name", ["mp4", "webm", "gif"])
def test_body_size_is_predicted_exactly_from_the_file_size(name: str, clips: Clips) -> None:
    path = getattr(clips, name)
    url = video_data_url(path)
    mime = url[5 : url.index(";")]
    extra = {"stream": True}
    body = chat_request_body("model-x", "Où va-t-il ?", url, max_tokens=16, extra=extra)
    assert predicted_body_size(
        "model-x", "Où va-t-il ?", path.stat().st_size, mime, max_tokens=16, extra=extra
    ) == encoded_body_size(body)


def test_body_limit_check() -> None:
    assert TRTMC_SERVER_BODY_LIMIT == 1_048_576
    check_body_limit(TRTMC_SERVER_BODY_LIMIT, clip="clips/ok.mp4")  # exactly at the limit is allowed
    with pytest.raises(ClipError) as caught:
        check_body_limit(1_407_800, clip="clips/bigbuckbunny.mp4")
    message = str(caught.value)
    assert message.startswith(
        "clip clips/bigbuckbunny.mp4 is too large for the server's body limit: the request "
        "body would be 1,407,800 bytes, over 1,048,576"
    )
    assert "trtmc-server's default --max-body-bytes is 1,048,576" in message
    assert message.endswith(
        "use a smaller or shorter clip (for example re-encoded at 320x180 without audio), "
        "or start the server with a larger --max-body-bytes"
    )
    with pytest.raises(ClipError, match="over 2,000,000"):
        check_body_limit(2_000_001, limit=2_000_000, clip="c.mp4")
    check_body_limit(2_000_000, limit=2_000_000, clip="c.mp4")
