"""The names that mark everything the reference endpoint produces as a test double, and its response fields."""

from __future__ import annotations

SERVED_BY = "trtmc-videoqa-reference"
TEST_DOUBLE_LABEL = f"{SERVED_BY} (test double)"
NOT_A_MODEL_NOTE = "reference endpoint: a test double that answers the synthetic clip by computation, not a TRTMC model"

DEFAULT_MODEL_NAME = "trtmc-videoqa-reference"

SERVED_BY_HEADER = "X-Served-By"
REQUEST_ID_HEADER = "X-Request-ID"

# The server's own task time, in the shape TRTMC's perf_serving reports it: `trtmc_timing.model_call_ms` in each
# response. The qualification step records which field it read, so the name lives here, once.
TIMING_FIELD = "trtmc_timing"
TASK_TIME_KEY = "model_call_ms"
TASK_TIME_FIELD = f"{TIMING_FIELD}.{TASK_TIME_KEY}"

# What the endpoint saw and did for one request, next to the OpenAI fields of the response; a native Task result
# carries the same keys under the name perf_serving uses.
OBSERVATION_FIELD = "reference_observation"
NATIVE_OBSERVATION_FIELD = "trtmc_observation"

# The routes a record names.
CHAT_ROUTE = "/v1/chat/completions"
NATIVE_ROUTE_PREFIX = "/v1/tasks/"
SERVED_OPERATION = "generate"  # the one native Task operation served, as perf_serving's vision-language generate

RECORD_SCHEMA = "trtmc-videoqa.reference-record/v1"
CANNOT_TELL = "I cannot tell from this clip."
