"""One JSONL line per request (chat or native), written and flushed as the request finishes, in the style of
trtmc-server's --records: a crash loses at most the request in flight, never the lines before it."""

from __future__ import annotations

import json
import threading
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict

from ..common.atomic_write import open_for_appending
from .labels import RECORD_SCHEMA, SERVED_BY, TEST_DOUBLE_LABEL


class RequestRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_: str = RECORD_SCHEMA
    served_by: str = SERVED_BY
    label: str = TEST_DOUBLE_LABEL
    test_double: bool = True
    request_id: str
    route: str  # "/v1/chat/completions" or "/v1/tasks/<operation>"
    sequence: int  # 1-based arrival position among requests of its kind, chat or native (the fault knobs count these)
    received_at: datetime  # wall clock, UTC
    finished_at: datetime
    status: int
    error: str | None
    model: str
    # All three None where the omit-task-time knob hid them; queue and task time also where no task ran.
    handler_ms: float | None
    queue_ms: float | None
    model_call_ms: float | None  # the task time: decode start to answer, monotonic clock
    sampling_policy: str
    frame_count: int | None
    frame_indices: list[int] | None
    question_id: str | None
    answer: str | None
    finish_reason: str | None
    clip_sha256: str | None
    clip_bytes: int | None
    body_fields: dict[str, Any] | None = None  # chat: the body's top-level fields but model and messages
    video_scheme: str | None = None  # chat: the video_url's scheme ("data", "http", "https")

    def json_line(self) -> str:
        data: dict[str, Any] = self.model_dump(mode="json")
        return json.dumps({"schema": data.pop("schema_"), **data}, separators=(",", ":")) + "\n"


class RecordWriter:
    """Appends records to one file; safe to call from the event loop and worker threads alike."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stream: TextIO | None = None

    def write(self, record: RequestRecord) -> None:
        if self.path is None:
            return
        line = record.json_line()
        with self._lock:
            if self._stream is None:  # opened on the first record, so an app that never serves leaves no handle
                self._stream = open_for_appending(self.path)
            self._stream.write(line)
            # Into the kernel now: an os._exit (the crash knob) or a kill keeps every line written so far.
            self._stream.flush()

    def close(self) -> None:
        with self._lock:
            if self._stream is not None:
                self._stream.close()
                self._stream = None
