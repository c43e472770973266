"""The FastAPI app: health, models and the video chat route, on one execution lane, with records and faults.

Chat requests, in order: number it (the fault knobs count arrivals); crash here if the crash knob says so;
503 before ready; read the body under the limit (413); validate it (400); 404 for another model; parse the data
URL (400); the error knob's status (500 by default); then the timed task on the lane. Every outcome but the crash
writes a record.
"""

from __future__ import annotations

import hmac
import os
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.requests import Request

from .answering import TaskResult, run_task
from .body import read_body_limited
from .chat_request import ChatRequest, parse_chat_request
from .clip import RequestClip, clip_from_data_url
from .config import ReferenceConfig
from .errors import ApiKeyEnvUnset, RequestRejected
from .faults import FaultPlan
from .identity import IdentityMiddleware
from .labels import TEST_DOUBLE_LABEL
from .records import RecordWriter, RequestRecord
from .responses import (
    Timing,
    chat_completion_body,
    cut_to_tokens,
    error_body,
    label_fields,
    models_body,
    readiness_body,
)


@dataclass
class _Exchange:
    """What one chat request has gathered so far, for its response and its record."""

    request_id: str
    sequence: int
    received_at: datetime
    started: float
    chat: ChatRequest | None = None
    clip: RequestClip | None = None
    result: TaskResult | None = None
    content: str | None = None
    finish_reason: str | None = None

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000


class _Endpoint:
    def __init__(self, config: ReferenceConfig) -> None:
        self.config = config
        self.policy = config.sampling
        self.plan = FaultPlan(config.faults)
        self.records = RecordWriter(config.records_path)
        # One lane, like perf_serving: concurrent requests queue, and the wait is reported as queue_ms.
        self.lane = anyio.CapacityLimiter(1)
        self.created = int(time.time())
        self.api_key = _api_key(config)

    async def chat(self, request: Request) -> JSONResponse:
        exchange = _Exchange(
            request_id=request.state.request_id,
            sequence=self.plan.next_sequence(),
            received_at=datetime.now(UTC),
            started=time.monotonic(),
        )
        if self.plan.crashes_at(exchange.sequence):
            self.plan.crash()
        try:
            body = await self._answer(request, exchange)
            status = 200
            response = JSONResponse(body)
            error = None
        except RequestRejected as rejected:
            status, error = rejected.status, rejected.message
            response = JSONResponse(error_body(status, error, rejected.error_type), status_code=status)
        except Exception as failure:  # a bug must still be a recorded 500, not a lost request
            status, error = 500, f"internal error: {type(failure).__name__}: {failure}"
            response = JSONResponse(error_body(status, error, "server_error"), status_code=status)
        self.records.write(self._record(exchange, status, error))
        return response

    def check_key(self, request: Request) -> None:
        """401 unless the request carries the configured key (compared in constant time); the key is never
        echoed, logged or recorded."""
        if self.api_key is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {self.api_key}".encode()):
            raise RequestRejected(
                401, "missing or wrong API key (send 'Authorization: Bearer <key>')", "authentication_error"
            )

    async def _answer(self, request: Request, exchange: _Exchange) -> dict[str, Any]:
        self.check_key(request)
        if not self.plan.is_ready():
            raise RequestRejected(503, "the reference endpoint is not ready yet", "service_unavailable")
        exchange.chat = parse_chat_request(await read_body_limited(request, self.config.max_body_bytes))
        if exchange.chat.model is not None and exchange.chat.model != self.config.model_name:
            raise RequestRejected(
                404,
                f"model {exchange.chat.model!r} is not served here; this endpoint serves {self.config.model_name!r}",
                "model_not_found",
            )
        exchange.clip = clip_from_data_url(exchange.chat.video_url)
        if self.plan.injects_error(exchange.sequence):
            raise RequestRejected(
                self.config.faults.error_status,
                f"injected fault: chat request #{exchange.sequence} fails by the "
                f"error-rate knob ({self.config.faults.error_rate})",
                self.plan.error_type,
            )
        task = partial(
            run_task,
            exchange.clip,
            exchange.chat.question_text,
            self.policy,
            added_task_ms=self.config.faults.added_task_ms,
            submitted=time.monotonic(),
        )
        exchange.result = result = await anyio.to_thread.run_sync(task, limiter=self.lane)
        exchange.content, exchange.finish_reason = cut_to_tokens(result.answer.text, exchange.chat.max_tokens)
        return chat_completion_body(
            request_id=exchange.request_id,
            model=self.config.model_name,
            content=exchange.content,
            finish_reason=exchange.finish_reason,
            prompt_text=exchange.chat.question_text,
            timing=Timing(
                queue_ms=result.queue_ms, model_call_ms=result.model_call_ms, handler_ms=exchange.elapsed_ms()
            ),
            observation={
                "sampling_policy": result.sampling.spec,
                "frame_count": result.sampling.frame_count,
                "frame_indices": result.sampling.indices,
                "question_id": result.answer.question_id,
                "outcome": result.answer.outcome,
                "cannot_tell_because": result.answer.reason,
                "clip_sha256": exchange.clip.sha256,
            },
        )

    def _record(self, exchange: _Exchange, status: int, error: str | None) -> RequestRecord:
        result, clip = exchange.result, exchange.clip
        return RequestRecord(
            request_id=exchange.request_id,
            sequence=exchange.sequence,
            received_at=exchange.received_at,
            finished_at=datetime.now(UTC),
            status=status,
            error=error,
            model=self.config.model_name,
            handler_ms=round(exchange.elapsed_ms(), 3),
            queue_ms=round(result.queue_ms, 3) if result else None,
            model_call_ms=round(result.model_call_ms, 3) if result else None,
            sampling_policy=result.sampling.spec if result else self.policy.spec,
            frame_count=result.sampling.frame_count if result else None,
            frame_indices=result.sampling.indices if result else None,
            question_id=result.answer.question_id if result else None,
            answer=exchange.content,
            finish_reason=exchange.finish_reason,
            clip_sha256=clip.sha256 if clip else None,
            clip_bytes=len(clip.data) if clip else None,
        )


def _api_key(config: ReferenceConfig) -> str | None:
    if config.api_key_env is None:
        return None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise ApiKeyEnvUnset(f"--api-key-env {config.api_key_env}: that environment variable is empty or unset")
    return key


def create_app(config: ReferenceConfig) -> FastAPI:
    endpoint = _Endpoint(config)

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        endpoint.plan.restart_clock()
        # Start the lane's worker thread now, so the first request's queue_ms is not thread start-up.
        await anyio.to_thread.run_sync(lambda: None, limiter=endpoint.lane)
        try:
            yield
        finally:
            endpoint.records.close()

    app = FastAPI(
        title=TEST_DOUBLE_LABEL,
        description="A test double for a video-capable trtmc-server; not a TRTMC model.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.add_middleware(IdentityMiddleware)

    @app.get("/health/live")
    async def live() -> JSONResponse:
        return JSONResponse({"status": "live", **label_fields()})

    @app.get("/health/ready")
    async def ready() -> JSONResponse:
        is_ready = endpoint.plan.is_ready()
        body = readiness_body(ready=is_ready, model=config.model_name)
        return JSONResponse(body, status_code=200 if is_ready else 503)

    @app.get("/v1/models")
    async def models(request: Request) -> JSONResponse:
        try:
            endpoint.check_key(request)
        except RequestRejected as rejected:
            return JSONResponse(
                error_body(rejected.status, rejected.message, rejected.error_type), status_code=rejected.status
            )
        return JSONResponse(models_body(config.model_name, endpoint.created))

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        return await endpoint.chat(request)

    return app
