"""The reference endpoint: a real OpenAI-compatible video chat server that is a TEST DOUBLE, not a TRTMC model.
It also serves a native Task route, ``POST /v1/tasks/generate``, in the request shape of TRTMC's perf_serving.

It decodes the clip in each request with PyAV, samples frames by its own policy, tracks the synthetic scene's
red and blue squares by colour, and answers the synthetic workload's questions by computation (any other clip or
question: "I cannot tell from this clip."). Every response and record says it is the reference endpoint.

Only ``cli.py`` and tests start it; the step chain never knows it talks to it.

Choices, in brief:
- ``stream: true`` is refused with 400, like trtmc-server, unless the ``stream`` setting is on: then the answer
  is streamed as OpenAI's server-sent events, its ``trtmc_timing`` in the last chunk (streaming.py).
- Task time is ``trtmc_timing.model_call_ms`` (TASK_TIME_FIELD): from the start of decoding the clip to the
  answer, monotonic clock, including ``added_task_ms``; ``queue_ms`` is the wait for an execution lane
  (``capacity``, one by default), ``handler_ms`` the whole route from arrival. The data URL is parsed (and
  refused) before the timed section.
- Fault positions count chat requests from 1 in arrival order, whatever their outcome: the error rate answers
  request n with ``error_status`` (500 unless set) when floor(n*rate) > floor((n-1)*rate) (after the body
  validated); ``crash_after=N`` answers N requests and calls os._exit(CRASH_EXIT_CODE) when request N+1 arrives,
  leaving it unanswered.
- ``slow_after=N`` keeps ``added_task_ms`` off the first N requests of each route (the capability check answers
  at once; the measured requests run slow, so AIPerf's own request timeout can be met).
- Native Task requests (native.py): ``{"request": {"prompt", "video_path": {"$file": {"suffix", "b64"}},
  "max_new_tokens"?, "temperature"?}}``, answered without any chat parsing by the same task on the same lane,
  as ``{"id", "object": "task.result", "operation", "text", "trtmc_timing", "trtmc_observation"}``. They are
  numbered on their own count, so chat's fault positions never move; the error and crash knobs are chat's only.
- Identity faults: ``identity_drift_rate`` makes native answers at its positions differ from chat's (the answer
  behind DRIFT_MARKER), so chat and native disagree on that share of (question, clip) pairs; ``answer_text``
  replaces every answer on both routes; ``omit_task_time_rate`` drops ``trtmc_timing`` (and the record's times)
  from chat responses at its positions.
- Records: one JSONL line per request (RequestRecord) naming its ``route``, flushed as it finishes; a client that
  reuses an X-Request-ID gets one line per request, told apart by ``route`` and ``sequence``. A chat record also
  keeps the body's top-level fields but ``model`` and ``messages`` (``body_fields``) and the video URL's scheme.
- A chat clip comes as a base64 data URL or as an http(s) URL on loopback, downloaded before the timed section
  (video_url.py; any other host is a 400). ``refuse_data_urls`` answers a data URL with HTTP 500 and transformers
  serve's message, a server that takes only video URLs.
"""

from typing import TYPE_CHECKING

from ..common.lazy import lazy_getattr
from .labels import (
    CANNOT_TELL,
    CHAT_ROUTE,
    DEFAULT_MODEL_NAME,
    NATIVE_OBSERVATION_FIELD,
    NATIVE_ROUTE_PREFIX,
    OBSERVATION_FIELD,
    RECORD_SCHEMA,
    REQUEST_ID_HEADER,
    SERVED_BY,
    SERVED_BY_HEADER,
    SERVED_OPERATION,
    TASK_TIME_FIELD,
    TASK_TIME_KEY,
    TEST_DOUBLE_LABEL,
    TIMING_FIELD,
)

if TYPE_CHECKING:
    from .app import create_app
    from .cli_args import (
        add_reference_arguments,
        argv_for_subprocess,
        argv_from_config,
        config_from_arguments,
        serve_command,
    )
    from .config import (
        DEFAULT_MAX_BODY_BYTES,
        DEFAULT_SAMPLING_POLICY,
        FaultKnobs,
        NonLoopbackHostError,
        ReferenceConfig,
    )
    from .faults import CRASH_EXIT_CODE, DRIFT_MARKER, error_positions
    from .records import RequestRecord
    from .server import ReferenceServer, serve

# The app and server bring FastAPI and uvicorn, the config and records pydantic models: loaded on first use, so the
# CLI's parser stays quick and a run that only names the reference endpoint (its model name, labels) loads none.
_LAZY = {
    "create_app": "app",
    "ReferenceServer": "server",
    "argv_for_subprocess": "cli_args",
    "serve": "server",
    "add_reference_arguments": "cli_args",
    "argv_from_config": "cli_args",
    "config_from_arguments": "cli_args",
    "serve_command": "cli_args",
    "DEFAULT_MAX_BODY_BYTES": "config",
    "DEFAULT_SAMPLING_POLICY": "config",
    "FaultKnobs": "config",
    "NonLoopbackHostError": "config",
    "ReferenceConfig": "config",
    "CRASH_EXIT_CODE": "faults",
    "DRIFT_MARKER": "faults",
    "error_positions": "faults",
    "RequestRecord": "records",
}


__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "CANNOT_TELL",
    "CHAT_ROUTE",
    "CRASH_EXIT_CODE",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MODEL_NAME",
    "DEFAULT_SAMPLING_POLICY",
    "DRIFT_MARKER",
    "NATIVE_OBSERVATION_FIELD",
    "NATIVE_ROUTE_PREFIX",
    "OBSERVATION_FIELD",
    "RECORD_SCHEMA",
    "REQUEST_ID_HEADER",
    "SERVED_BY",
    "SERVED_BY_HEADER",
    "SERVED_OPERATION",
    "TASK_TIME_FIELD",
    "TASK_TIME_KEY",
    "TEST_DOUBLE_LABEL",
    "TIMING_FIELD",
    "FaultKnobs",
    "NonLoopbackHostError",
    "ReferenceConfig",
    "ReferenceServer",
    "RequestRecord",
    "add_reference_arguments",
    "argv_for_subprocess",
    "argv_from_config",
    "serve_command",
    "config_from_arguments",
    "create_app",
    "error_positions",
    "serve",
]
