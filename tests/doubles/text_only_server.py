"""TEST DOUBLE of a text-only chat server (as trtmc-server's newer source is): any non-text part gets HTTP 400.

Run as `python text_only_server.py PORT`; it binds 127.0.0.1 only.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health/ready":
            self._send(200, {"ready": True})
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "text-only-double", "object": "model"}]})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        for message in body.get("messages", []):
            content = message.get("content")
            for part in content if isinstance(content, list) else []:
                if part.get("type") != "text":
                    self._send(
                        400,
                        {
                            "detail": [
                                {
                                    "type": "literal_error",
                                    "loc": ["body", "messages", 0, "content"],
                                    "msg": "Input should be 'text'",
                                    "input": part.get("type"),
                                }
                            ]
                        },
                    )
                    return
        self._send(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "text only"}, "finish_reason": "stop"}
                ],
            },
        )


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
