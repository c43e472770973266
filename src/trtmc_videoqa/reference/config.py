"""The reference endpoint's settings, checked once at the boundary: where it listens, how it samples, its faults."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..common.errors import UserError
from ..common.net import is_loopback_host
from ..media import SamplingPolicy
from .labels import DEFAULT_MODEL_NAME

DEFAULT_HOST = "127.0.0.1"
DEFAULT_SAMPLING_POLICY = "uniform:16"
# trtmc-server's --max-body-bytes default.
DEFAULT_MAX_BODY_BYTES = 1 << 20
# Requests whose task runs at once: perf_serving's one lane by default; a bound, since each lane is a worker thread.
DEFAULT_CAPACITY = 1
MAX_CAPACITY = 64


class NonLoopbackHostError(UserError, ValueError):
    """The endpoint was asked to listen beyond this machine without saying so explicitly."""


def check_loopback(host: str, *, allow_non_loopback: bool) -> None:
    if not allow_non_loopback and not is_loopback_host(host):
        raise NonLoopbackHostError(
            f"host {host!r} is not a loopback address; the reference endpoint listens on 127.0.0.1 or ::1 only, "
            "unless allow_non_loopback=True (--allow-non-loopback) is given on purpose"
        )


class FaultKnobs(BaseModel):
    """Faults for tests. Chat requests are numbered 1, 2, 3, ... in arrival order, and native Task requests
    (/v1/tasks/...) 1, 2, 3, ... on their own count, so one route's traffic never moves the other's positions;
    every position counts, whatever the request's own outcome. A rate picks request n of its route when
    floor(n*rate) > floor((n-1)*rate) (0.5 -> 2, 4, 6, ...; 0.25 -> 4, 8, ...; 1 -> all)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    added_task_ms: float = Field(default=0.0, ge=0.0, description="slept inside the timed section of each answer")
    error_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="fraction of chat requests answered with error_status, at fixed positions: request n fails "
        "when floor(n*rate) > floor((n-1)*rate) (0.5 -> 2, 4, 6, ...; 0.25 -> 4, 8, ...; 1 -> all)",
    )
    error_status: int = Field(
        default=500,
        ge=400,
        le=599,
        description="the HTTP status (any 4xx or 5xx, e.g. 400, 500, 503) of the errors error_rate injects",
    )
    crash_after: int | None = Field(
        default=None,
        ge=0,
        description="answer this many chat requests, then exit the process hard (os._exit) when the next arrives, "
        "without answering it",
    )
    slow_after: int | None = Field(
        default=None,
        ge=0,
        description="added_task_ms applies only after this many requests of a route (the capability check and the "
        "warmup answer at once, the measured requests run slow)",
    )
    ready_after_s: float = Field(default=0.0, ge=0.0, description="/health/ready says 503 until this long after start")
    ready_when_file: Path | None = Field(
        default=None,
        description="/health/ready says 503 until this file exists (a test makes the server ready when it chooses, "
        "with no clock to race)",
    )
    identity_drift_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="fraction of native Task answers, at fixed positions among native requests, that differ from "
        "what chat answers for the same (question, clip): the computed answer behind a marker word, so chat and "
        "native disagree on that share of pairs",
    )
    answer_text: str | None = Field(
        default=None,
        description="every chat and native answer is this text instead of the computed one (a model that answers "
        "garbage, or always 'I cannot tell from this clip.'); records keep what was sent",
    )
    omit_task_time_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="fraction of chat requests, at fixed positions, whose response has no trtmc_timing and whose "
        "record has no queue_ms, model_call_ms or handler_ms: a server that does not report every task time",
    )
    refuse_data_urls: bool = Field(
        default=False,
        description="answer a chat video_url that is a data URL with HTTP 500 and transformers serve's message "
        "('Incorrect format used for video. ...'), while http(s) URLs on loopback are fetched: a server that "
        "takes only video URLs",
    )


class ReferenceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = DEFAULT_HOST
    port: int = Field(default=0, ge=0, le=65535, description="0 picks a free port")
    allow_non_loopback: bool = False
    model_name: str = DEFAULT_MODEL_NAME
    sampling_policy: str = DEFAULT_SAMPLING_POLICY
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, gt=0)
    records_path: Path | None = None
    url_file: Path | None = Field(default=None, description="the base URL is written here once the port is bound")
    api_key_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="name of an environment variable holding an API key: when given, /v1/* answers 401 unless "
        "the request carries 'Authorization: Bearer <key>' (the key itself is never in the config or the argv)",
    )
    capacity: int = Field(
        default=DEFAULT_CAPACITY,
        ge=1,
        le=MAX_CAPACITY,
        description="requests whose task runs at once (execution lanes); the others wait, their wait reported as "
        "queue_ms: with added_task_ms T, throughput saturates near capacity / T",
    )
    stream: bool = Field(
        default=False,
        description="accept stream=true and answer in OpenAI's server-sent events (one chunk a word, the usage and "
        "trtmc_timing in the last chunk, then [DONE]); off, stream=true is refused with HTTP 400, as trtmc-server's "
        "text schema does",
    )
    faults: FaultKnobs = FaultKnobs()

    @field_validator("model_name")
    @classmethod
    def _name_says_reference(cls, name: str) -> str:
        # A test double must not be mistaken for a served checkpoint in anyone's records.
        if "reference" not in name.lower():
            raise ValueError(f"model name {name!r} must contain 'reference' (the endpoint is a test double)")
        return name

    @field_validator("sampling_policy")
    @classmethod
    def _policy_parses(cls, spec: str) -> str:
        SamplingPolicy.parse(spec)  # ValueError names what is wrong with it
        return spec

    @property
    def sampling(self) -> SamplingPolicy:
        return SamplingPolicy.parse(self.sampling_policy)

    @model_validator(mode="after")
    def _loopback_unless_allowed(self) -> ReferenceConfig:
        check_loopback(self.host, allow_non_loopback=self.allow_non_loopback)
        return self
