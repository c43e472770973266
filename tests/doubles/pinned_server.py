"""TEST DOUBLE of a chat server pinned to one model, as `transformers serve MODEL` is: any request naming another
model, text or video alike, gets HTTP 400 {"detail": "Server is pinned to 'MODEL'; requested 'OTHER'."}; GET
/v1/models lists MODEL alone. A request for MODEL is answered by what the test asks of the video:

- `video="answer"`: every chat answered "A";
- `video="refuse"`: a chat with a video part gets HTTP 400 (the content refused), plain text is answered;
- `video="fail"`: a chat with a video part gets a bare HTTP 500 "Internal Server Error" (a decoder that cannot load).

Each answer names `answer_model` as its `model`, and /v1/models lists it (default: MODEL, as the pinned server
names it); `pinned=False` takes a request for any model, still answered as `answer_model`. It binds
127.0.0.1 only and runs in a thread of the test's process; `requests` holds each request's (method, path, model).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Video = Literal["answer", "refuse", "fail"]


class PinnedServer:
    def __init__(
        self, model: str, *, video: Video = "answer", answer_model: str | None = None, pinned: bool = True
    ) -> None:
        self.model, self.video, self.answer_model, self.pinned = model, video, answer_model or model, pinned
        self.requests: list[tuple[str, str, Any]] = []
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                double.requests.append(("GET", self.path, None))
                if self.path == "/v1/models":
                    listed = [{"id": double.answer_model, "object": "model"}]
                    _send(self, 200, {"object": "list", "data": listed})
                else:
                    _send(self, 404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                double.requests.append(("POST", self.path, body.get("model")))
                status, answer = double.answer(self.path, body)
                _send(self, status, answer)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        requested = body.get("model")
        if self.pinned and requested is not None and requested != self.model:
            return 400, {"detail": f"Server is pinned to '{self.model}'; requested '{requested}'."}
        content = body["messages"][-1]["content"]
        has_video = isinstance(content, list) and any(part.get("type") == "video_url" for part in content)
        if has_video and self.video == "refuse":
            return 400, {"detail": "this model takes no video_url part"}
        if has_video and self.video == "fail":
            return 500, "Internal Server Error"
        return 200, {
            "id": "chatcmpl-pinned",
            "object": "chat.completion",
            "created": 0,
            "model": self.answer_model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def __enter__(self) -> PinnedServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _send(handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
    data = (body if isinstance(body, str) else json.dumps(body)).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
