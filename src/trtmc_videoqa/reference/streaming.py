"""A chat completion as OpenAI servers stream it: server-sent events, one `chat.completion.chunk` a word.

The answer is computed whole first (the task runs on its lane as for a plain answer), then sent as: a chunk with
the assistant's role, one chunk per word (whitespace-separated, as the endpoint counts tokens), a chunk with the
finish reason, and a last chunk with no choices that carries the usage (as `stream_options.include_usage` asks),
the server's task time (`trtmc_timing`) and its observation; then `data: [DONE]`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .labels import OBSERVATION_FIELD, TIMING_FIELD

SSE_MEDIA_TYPE = "text/event-stream"
DONE = b"data: [DONE]\n\n"


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def stream_events(body: dict[str, Any]) -> Iterator[bytes]:
    """The events of one streamed answer, from the whole chat completion `body` the endpoint would have sent."""
    head = {key: body[key] for key in ("id", "created", "model", "system_fingerprint")}
    head["object"] = "chat.completion.chunk"
    choice = body["choices"][0]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        return _event({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})

    yield chunk({"role": "assistant", "content": ""})
    for position, word in enumerate(choice["message"]["content"].split()):
        yield chunk({"content": word if position == 0 else " " + word})
    yield chunk({}, choice["finish_reason"])
    last = {**head, "choices": [], "usage": body["usage"], OBSERVATION_FIELD: body[OBSERVATION_FIELD]}
    if TIMING_FIELD in body:
        last[TIMING_FIELD] = body[TIMING_FIELD]
    yield _event(last)
    yield DONE
