"""The native Task route, ``POST /v1/tasks/{operation}``, in the request shape of TRTMC's apps/perf_serving.

It never parses chat messages: the prompt and the inline clip come straight from the Task request, and the answer
is computed by the same task on the same lane as chat's, so the two routes agree unless the identity-drift knob
says otherwise. In order: 401 without the key; 503 before ready; 400 for another operation; the body under the
limit (413); validate it (400); the timed task; then the answer_text and drift knobs; max_new_tokens cuts last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from starlette.requests import Request

from .body import read_body_limited
from .exchange import Exchange
from .faults import DRIFT_MARKER
from .labels import SERVED_OPERATION
from .native_request import check_operation, parse_native_request
from .responses import cut_to_tokens, task_result_body

if TYPE_CHECKING:
    from .answering import TaskResult
    from .clip import RequestClip
    from .config import ReferenceConfig
    from .faults import FaultPlan


class NativeHost(Protocol):
    """What the route needs of the endpoint that serves it (app.Endpoint): its settings, its admission checks, its
    fault plan and its execution lanes."""

    config: ReferenceConfig
    plan: FaultPlan

    def admit(self, request: Request) -> None: ...

    async def run_on_lane(self, clip: RequestClip, prompt: str, sequence: int) -> TaskResult: ...


async def answer_native(endpoint: NativeHost, request: Request, exchange: Exchange, operation: str) -> dict[str, Any]:
    endpoint.admit(request)
    check_operation(operation)
    task = parse_native_request(await read_body_limited(request, endpoint.config.max_body_bytes))
    exchange.clip = task.clip
    exchange.result = await endpoint.run_on_lane(task.clip, task.prompt, exchange.sequence)
    text = endpoint.plan.sent_answer(exchange.result.answer.text)
    if endpoint.plan.drifts(exchange.sequence):
        text = f"{DRIFT_MARKER} {text}"
    exchange.content, exchange.finish_reason = cut_to_tokens(text, task.max_new_tokens)
    timing = exchange.timing()
    assert timing is not None, "the omit-task-time knob counts chat requests only"
    return task_result_body(
        request_id=exchange.request_id,
        operation=SERVED_OPERATION,
        text=exchange.content,
        timing=timing,
        observation=exchange.observation(),
    )
