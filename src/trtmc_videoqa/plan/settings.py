"""The settings that shape a measurement, checked once where they are made: a value out of range is refused with the
field's name (the command line maps it to its option)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..results import TransportChoice


class RunSettings(BaseModel):
    """Everything that shapes a measurement; all of it joins the cache key."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # a time limit of nan or inf: none

    repeats: int = Field(default=5, ge=1, description="times each (question, clip) is sent")
    warmup: int = Field(default=2, ge=0, description="warmup requests, kept out of the results")
    concurrency: int = Field(default=1, ge=1, description="concurrent requests")
    request_timeout_s: float = Field(default=60.0, gt=0, description="seconds per request")
    aiperf_wall_limit_s: float = Field(default=900.0, gt=0, description="seconds for one AIPerf run")
    body_limit: int = Field(default=1_048_576, gt=0, description="the server's request body limit, in bytes")
    max_tokens: int | None = Field(default=None, ge=1, description="None: the workload's own")
    video_transport: TransportChoice = Field(
        default="data-url",
        description="how requests carry the clip: a data URL, an http URL of our loopback clip server, or auto "
        "(data-url first, http when the server refuses it)",
    )
