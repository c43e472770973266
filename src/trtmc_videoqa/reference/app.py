"""The FastAPI app: health, models, the video chat route and the native Task route, on its execution lanes (one by
default: `capacity`), with records and faults; a chat answer streamed where the stream setting allows it.

Chat requests, in order: number it (the fault knobs count arrivals); crash here if the crash knob says so;
401 without the key; 503 before ready; read the body under the limit (413); validate it (400); 404 for another
model; a chat with no video part is answered at once (TEXT_ONLY_ANSWER: no task, no timing); take the clip from
its data URL (400; the refuse-data-urls knob's 500) or fetch its loopback http(s) URL
(400 when it cannot be had); the error knob's status (500 by default); then the timed task on the lane.
Native Task requests (native.py) are numbered on their own count and take the same key, readiness, body limit and
lane. Every outcome but the crash writes a record naming its route.
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .answering import TaskResult, run_task
from .body import read_body_limited
from .chat_request import parse_chat_request
from .clip import RequestClip
from .config import ReferenceConfig
from .errors import ApiKeyEnvUnset, RequestRejected
from .exchange import Exchange
from .faults import FaultPlan
from .identity import IdentityMiddleware
from .labels import CHAT_ROUTE, NATIVE_ROUTE_PREFIX, TEST_DOUBLE_LABEL
from .native import answer_native
from .records import RecordWriter
from .responses import (
    chat_completion_body,
    cut_to_tokens,
    error_body,
    label_fields,
    models_body,
    readiness_body,
)
from .streaming import SSE_MEDIA_TYPE, stream_events
from .video_url import clip_from_video_url

# What a chat with no clip is answered: no task runs, nothing is sampled or timed.
TEXT_ONLY_ANSWER = "no clip in this request: the reference endpoint (a test double) answers questions about a clip"


class Endpoint:
    def __init__(self, config: ReferenceConfig) -> None:
        self.config = config
        self.policy = config.sampling
        self.plan = FaultPlan(config.faults)
        self.records = RecordWriter(config.records_path)
        # One lane by default, like perf_serving: concurrent requests past the capacity queue, and the wait is
        # reported as queue_ms.
        self.lane = anyio.CapacityLimiter(config.capacity)
        self.created = int(time.time())
        self.api_key = _api_key(config)

    async def chat(self, request: Request) -> Response:
        sequence = self.plan.next_sequence()
        exchange = Exchange.arriving(request.state.request_id, CHAT_ROUTE, sequence)
        exchange.reports_task_time = not self.plan.omits_task_time(sequence)
        if self.plan.crashes_at(sequence):
            self.plan.crash()
        return await self.answered(exchange, partial(self._answer_chat, request, exchange))

    async def native(self, request: Request, operation: str) -> Response:
        exchange = Exchange.arriving(
            request.state.request_id, NATIVE_ROUTE_PREFIX + operation, self.plan.next_native_sequence()
        )
        return await self.answered(exchange, partial(answer_native, self, request, exchange, operation))

    async def answered(self, exchange: Exchange, answer: Callable[[], Awaitable[dict[str, Any]]]) -> Response:
        """The response to one request, and its record, whatever the outcome; a streamed answer as server-sent
        events (an error before it is a plain JSON error, as OpenAI servers answer)."""
        response: Response
        try:
            body = await answer()
            status = 200
            if exchange.streamed:
                response = StreamingResponse(stream_events(body), media_type=SSE_MEDIA_TYPE)
            else:
                response = JSONResponse(body)
            error = None
        except RequestRejected as rejected:
            status, error = rejected.status, rejected.message
            response = JSONResponse(error_body(status, error, rejected.error_type), status_code=status)
        except Exception as failure:  # a bug must still be a recorded 500, not a lost request
            status, error = 500, f"internal error: {type(failure).__name__}: {failure}"
            response = JSONResponse(error_body(status, error, "server_error"), status_code=status)
        model, spec = self.config.model_name, self.policy.spec
        self.records.write(exchange.record(status=status, error=error, model=model, sampling_spec=spec))
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

    def admit(self, request: Request) -> None:
        """The checks every task request passes first, on either route: its key, then readiness."""
        self.check_key(request)
        if not self.plan.is_ready():
            raise RequestRejected(503, "the reference endpoint is not ready yet", "service_unavailable")

    async def run_on_lane(self, clip: RequestClip, prompt: str, sequence: int) -> TaskResult:
        """The timed task, on the lanes both routes share, so both compute their answers the same way."""
        task = partial(
            run_task,
            clip,
            prompt,
            self.policy,
            added_task_ms=self.plan.added_task_ms(sequence),
            submitted=time.monotonic(),
        )
        return await anyio.to_thread.run_sync(task, limiter=self.lane)

    async def _answer_chat(self, request: Request, exchange: Exchange) -> dict[str, Any]:
        self.admit(request)
        body = await read_body_limited(request, self.config.max_body_bytes)
        chat = parse_chat_request(body, stream_allowed=self.config.stream)
        if chat.model is not None and chat.model != self.config.model_name:
            raise RequestRejected(
                404,
                f"model {chat.model!r} is not served here; this endpoint serves {self.config.model_name!r}",
                "model_not_found",
            )
        exchange.body_fields, exchange.streamed = chat.body_fields, chat.stream
        if chat.video_url is None:  # no clip, no task: answered as a video chat server answers plain text
            return self._text_only(chat.question_text, chat.max_tokens, exchange)
        exchange.video_scheme = chat.video_url.partition(":")[0].lower()
        exchange.clip = await clip_from_video_url(chat.video_url, refuse_data_urls=self.config.faults.refuse_data_urls)
        if self.plan.injects_error(exchange.sequence):
            raise RequestRejected(
                self.config.faults.error_status,
                f"injected fault: chat request #{exchange.sequence} fails by the "
                f"error-rate knob ({self.config.faults.error_rate})",
                self.plan.error_type,
            )
        exchange.result = await self.run_on_lane(exchange.clip, chat.question_text, exchange.sequence)
        sent = self.plan.sent_answer(exchange.result.answer.text)
        exchange.content, exchange.finish_reason = cut_to_tokens(sent, chat.max_tokens)
        return chat_completion_body(
            request_id=exchange.request_id,
            model=self.config.model_name,
            content=exchange.content,
            finish_reason=exchange.finish_reason,
            prompt_text=chat.question_text,
            timing=exchange.timing(),
            observation=exchange.observation(),
        )

    def _text_only(self, question: str, max_tokens: int | None, exchange: Exchange) -> dict[str, Any]:
        exchange.content, exchange.finish_reason = cut_to_tokens(TEXT_ONLY_ANSWER, max_tokens)
        return chat_completion_body(
            request_id=exchange.request_id,
            model=self.config.model_name,
            content=exchange.content,
            finish_reason=exchange.finish_reason,
            prompt_text=question,
            timing=None,
            observation={"text_only": True},
        )


def _api_key(config: ReferenceConfig) -> str | None:
    if config.api_key_env is None:
        return None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise ApiKeyEnvUnset(f"--api-key-env {config.api_key_env}: that environment variable is empty or unset")
    return key


def create_app(config: ReferenceConfig) -> FastAPI:
    endpoint = Endpoint(config)

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

    @app.post(CHAT_ROUTE)
    async def chat(request: Request) -> Response:
        return await endpoint.chat(request)

    @app.post(NATIVE_ROUTE_PREFIX + "{operation}")
    async def task(operation: str, request: Request) -> Response:
        return await endpoint.native(request, operation)

    return app
