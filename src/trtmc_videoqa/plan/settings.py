"""The settings that shape a measurement, each defined once: its type, default, range and words here, and the
command-line option it comes from (`Flag`), from which `cli/qualify_args.py` derives the option. A value out of
range is refused with the field's name, which the command line maps to its option."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ..results import TransportChoice
from ..results.transports import CHOICES

MIB = 1 << 20


@dataclass(frozen=True)
class Flag:
    """The command-line option a setting comes from. Its help is the field's description, followed by the default
    as ``(default N)`` (``in_mib``: as ``N MiB``) unless ``show_default`` is off; a setting with ``choices`` instead
    lists each choice with its words, the default one marked ``(default; ...)``."""

    name: str
    metavar: str | None = None
    show_default: bool = True
    in_mib: bool = False
    choices: dict[str, str] = field(default_factory=dict)


class RunSettings(BaseModel):
    """Everything that shapes a measurement; all of it joins the cache key (field names and values as dumped)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # a time limit of nan or inf: none

    repeats: Annotated[int, Flag("--repeats")] = Field(
        default=5, ge=1, description="times each (question, clip) is sent"
    )
    warmup: Annotated[int, Flag("--warmup")] = Field(
        default=2, ge=0, description="warmup requests, kept out of the results"
    )
    concurrency: Annotated[int, Flag("--concurrency")] = Field(default=1, ge=1, description="concurrent requests")
    request_timeout_s: Annotated[float, Flag("--request-timeout")] = Field(
        default=60.0, gt=0, description="seconds per request"
    )
    max_tokens: Annotated[int | None, Flag("--max-tokens", metavar="N")] = Field(
        default=None, ge=1, description="the answers' token limit (default: the workload's own)"
    )
    aiperf_wall_limit_s: Annotated[float, Flag("--aiperf-wall-limit", show_default=False)] = Field(
        default=900.0, gt=0, description="seconds for one AIPerf run"
    )
    aiperf_memory_limit: Annotated[int, Flag("--aiperf-memory-limit", in_mib=True)] = Field(
        default=4096 * MIB,
        gt=0,
        description="bytes AIPerf's processes may hold together (their proportional set sizes, summed twice a "
        "second); past it AIPerf is ended and the row names the limit",
    )
    body_limit: Annotated[int, Flag("--body-limit", in_mib=True)] = Field(
        default=4 * MIB, gt=0, description="the server's --max-body-bytes, large enough for the clip"
    )
    max_response_bytes: Annotated[int, Flag("--max-response-bytes", in_mib=True)] = Field(
        default=16 * MIB,
        gt=0,
        description="bytes of one response read at most, counted once any Content-Encoding is undone; a longer "
        "answer fails that request",
    )
    video_transport: Annotated[
        TransportChoice,
        Flag("--video-transport", choices={name: choice.help for name, choice in CHOICES.items()}),
    ] = Field(default="data-url", description="how requests carry the clip")
