"""The run's settings, each defined once: its type, default, range and words here, and the command-line option it
comes from (`Flag`), from which `cli/qualify_args.py` derives the option. A value out of range is refused with the
field's name, which the command line maps to its option. The settings that shape a measurement join the cache key
and the row's provenance (`RunSettings.measured`); the others (where to write, which tools, how to report) never
do: a flag marks them `keyed=False`. A flag also says which ways in a setting applies to (`ways`): `--help`
shows an option only where it applies, and a run refuses one given where it does not."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..common.sizes import MIB
from ..results import TransportChoice
from ..transports.table import CHOICES

# The ways into a run: qualify's self-test (neither --trtmc nor --url), qualify --trtmc, qualify --url, and compare.
Way = Literal["self-test", "trtmc", "url", "compare"]
EVERY_WAY: frozenset[Way] = frozenset(get_args(Way))
WAY_NAMES: dict[Way, str] = {
    "self-test": "the self-test (qualify with neither --trtmc nor --url)",
    "trtmc": "qualify --trtmc",
    "url": "qualify --url",
    "compare": "compare",
}
ENDPOINT_LADDER_WAYS: frozenset[Way] = frozenset({"self-test", "url", "compare"})
SERVER_KEY_WAYS: frozenset[Way] = frozenset({"trtmc", "url"})  # the self-test's and compare's servers take no key
STARTED_SERVER_WAYS: frozenset[Way] = frozenset({"trtmc", "compare"})  # a server of the user's we start and wait for
TRTMC_ONLY: frozenset[Way] = frozenset({"trtmc"})
MAX_PROFILE_RUNS = 10  # AIPerf's own limit for --num-profile-runs
MAX_LEVELS = 16  # levels of one sweep: each is an AIPerf run (or --num-profile-runs of them)
GOODPUT_METRIC = "request_latency"  # the one objective checked: every request carries its client latency


@dataclass(frozen=True)
class Flag:
    """The command-line option a setting comes from. Its help is the field's description, followed by the default
    as ``(default N)`` (a ``size``: in its largest whole binary unit, ``4 GiB``) unless ``show_default`` is off; a
    setting with ``choices`` instead lists each choice with its words, the default one marked ``(default; ...)``."""

    name: str
    metavar: str | None = None
    show_default: bool = True
    size: bool = False  # bytes, given as a plain number or with a unit (common/sizes.py), shown in binary units
    ways: frozenset[Way] = EVERY_WAY  # the ways in it applies to (compare's --help lists only compare's)
    choices: dict[str, str] = field(default_factory=dict)
    keyed: bool = True  # shapes the measurement: joins the cache key and the row's provenance
    keyed_when_set: bool = False  # an opt-in: joins them only when given, so rows made before it keep their keys
    action: Literal["store", "store_true"] = "store"
    listed: bool = False  # a comma-separated list, AIPerf's syntax (`--concurrency 1,2,4`): a tuple of its items


class RunSettings(BaseModel):
    """Every run option of `qualify` and `compare`, in the order `--help` lists them. The keyed ones shape a
    measurement and join the cache key (`measured`: field names and values as dumped)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # a time limit of nan or inf: none

    workload: Annotated[str | None, Flag("--workload", metavar="FILE|NAME", keyed=False)] = Field(
        default=None,
        description="a workload file, or a built-in name (default: bigbuckbunny; the self-test uses synthetic and "
        "bigbuckbunny)",
    )
    out: Annotated[Path, Flag("--out", metavar="DIR", keyed=False)] = Field(
        default=Path("artifacts"), validate_default=True, description="artifact directory"
    )
    repeats: Annotated[int, Flag("--repeats")] = Field(
        default=5, ge=1, description="times each (question, clip) is sent"
    )
    warmup: Annotated[int, Flag("--warmup")] = Field(
        default=2, ge=0, description="warmup requests, kept out of the results"
    )
    concurrency: Annotated[
        tuple[int, ...] | None, Flag("--concurrency", metavar="N[,N...]", listed=True, keyed_when_set=True)
    ] = Field(
        default=None,
        description="concurrent requests; a list (1,2,4) sweeps the levels, one AIPerf run each (default 1)",
    )
    request_rate: Annotated[
        tuple[float, ...] | None, Flag("--request-rate", metavar="R[,R...]", listed=True, keyed_when_set=True)
    ] = Field(
        default=None,
        description="requests per second instead of a concurrency; a list (2,4,8) sweeps the rates, one AIPerf run "
        "each (default: off; not with --concurrency)",
    )
    num_profile_runs: Annotated[int, Flag("--num-profile-runs")] = Field(
        default=1,
        ge=1,
        le=MAX_PROFILE_RUNS,
        description=f"AIPerf runs of each level (2 to {MAX_PROFILE_RUNS}: each run's figures and a confidence "
        "interval over them)",
    )
    confidence_level: Annotated[float, Flag("--confidence-level")] = Field(
        default=0.95, gt=0, lt=1, description="the confidence of the intervals over repeated runs"
    )
    goodput: Annotated[str | None, Flag("--goodput", metavar="request_latency:MS", keyed_when_set=True)] = Field(
        default=None,
        description="a latency objective (AIPerf's syntax): the row names the highest level at which every request "
        "met it (default: off)",
    )
    streaming: Annotated[bool, Flag("--streaming", action="store_true", keyed_when_set=True)] = Field(
        default=False,
        description="ask the server to stream its answers (AIPerf's --streaming): the row adds time to first token "
        "and inter-token latency; a TRTMC row streams only where trtmc-server accepts it, else says so",
    )
    request_timeout_s: Annotated[float, Flag("--request-timeout")] = Field(
        default=60.0, gt=0, description="seconds per request"
    )
    max_tokens: Annotated[int | None, Flag("--max-tokens", metavar="N")] = Field(
        default=None, ge=1, description="the answers' token limit (default: the workload's own)"
    )
    aiperf_wall_limit_s: Annotated[float, Flag("--aiperf-wall-limit")] = Field(
        default=900.0, gt=0, description="seconds for one AIPerf run"
    )
    aiperf_memory_limit: Annotated[int, Flag("--aiperf-memory-limit", size=True)] = Field(
        default=4096 * MIB,
        gt=0,
        description="bytes AIPerf's processes may hold together (their proportional set sizes, summed twice a "
        "second); past it AIPerf is ended and the row names the limit",
    )
    body_limit: Annotated[int, Flag("--body-limit", size=True)] = Field(
        default=4 * MIB, gt=0, description="the server's --max-body-bytes, large enough for the clip"
    )
    max_response_bytes: Annotated[int, Flag("--max-response-bytes", size=True)] = Field(
        default=16 * MIB,
        gt=0,
        description="bytes of one response read at most, counted once any Content-Encoding is undone; a longer "
        "answer fails that request",
    )
    video_transport: Annotated[
        TransportChoice,
        Flag("--video-transport", choices={name: choice.help for name, choice in CHOICES.items()}),
    ] = Field(default="data-url", description="how requests carry the clip")
    min_both_right: Annotated[
        float | None, Flag("--min-both-right", metavar="SHARE", keyed_when_set=True, ways=ENDPOINT_LADDER_WAYS)
    ] = Field(
        default=None,
        ge=0,
        le=1,
        description="an opt-in gate for an endpoint or comparison row: fail it at grading when fewer than this share "
        "of the questions are right both forward and reversed (a TRTMC row is judged by its family's criteria; "
        "default: off, accuracy a figure only)",
    )
    max_frames: Annotated[int, Flag("--max-frames", keyed=False, ways=TRTMC_ONLY)] = Field(
        default=3000,
        ge=1,
        description="frames of one clip a video Task's native request may decode (each written as a PNG file); a "
        "clip with more is refused, naming it",
    )
    max_pixels: Annotated[int, Flag("--max-pixels", keyed=False, ways=TRTMC_ONLY)] = Field(
        default=500_000_000,
        ge=1,
        description="pixels over one clip's frames (frames x width x height) a video Task's native request may "
        "decode; a clip with more is refused, naming it",
    )
    aiperf: Annotated[str | None, Flag("--aiperf", metavar="PATH", keyed=False)] = Field(
        default=None, description="the aiperf executable (default: $TRTMC_VIDEOQA_AIPERF, PATH)"
    )
    tokenizer: Annotated[Path | None, Flag("--tokenizer", metavar="DIR", keyed=False)] = Field(
        default=None, description="a local tokenizer directory for AIPerf"
    )
    api_key_env: Annotated[str, Flag("--api-key-env", metavar="NAME", keyed=False, ways=SERVER_KEY_WAYS)] = Field(
        default="TRTMC_SERVE_TOKEN",
        description="environment variable holding the server's API key, if any (never written anywhere)",
    )
    api_key_file: Annotated[Path | None, Flag("--api-key-file", metavar="PATH", keyed=False, ways=SERVER_KEY_WAYS)] = (
        Field(
            default=None,
            description="a file holding the server's API key (first line; never written anywhere); wins over "
            "--api-key-env",
        )
    )
    startup_timeout_s: Annotated[
        float, Flag("--startup-timeout", metavar="S", keyed=False, ways=STARTED_SERVER_WAYS)
    ] = Field(default=600.0, gt=0, description="seconds a server we start may take to get ready")
    bundle_cache: Annotated[Path | None, Flag("--bundle-cache", metavar="DIR", keyed=False, ways=TRTMC_ONLY)] = Field(
        default=None, description="where built bundles are kept"
    )
    force: Annotated[bool, Flag("--force", action="store_true", keyed=False)] = Field(
        default=False, description="measure again even where inputs are unchanged"
    )
    dry_run: Annotated[bool, Flag("--dry-run", action="store_true", keyed=False)] = Field(
        default=False, description="print the plan and run nothing"
    )
    quiet: Annotated[bool, Flag("--quiet", action="store_true", keyed=False)] = Field(
        default=False,
        description="no progress lines (without a terminal they are plain lines, one every 10 s and at each step's "
        "end)",
    )
    exit_zero: Annotated[bool, Flag("--exit-zero", action="store_true", keyed=False)] = Field(
        default=False,
        description="exit 0 whatever the rows' verdict, for a report-only job (bad input still exits 2, a tool "
        "error 1, a public-check hit 3, a signal 128 + its number)",
    )

    @field_validator("concurrency", "request_rate")
    @classmethod
    def _levels(cls, levels: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if levels is None:
            return None
        if not levels or len(levels) > MAX_LEVELS:
            raise ValueError(f"give 1 to {MAX_LEVELS} levels, comma-separated (1,2,4)")
        if any(level <= 0 for level in levels) or len(set(levels)) != len(levels):
            raise ValueError(f"each level is a positive number, each once; got {','.join(f'{v:g}' for v in levels)}")
        return levels

    @field_validator("goodput")
    @classmethod
    def _objective(cls, objective: str | None) -> str | None:
        if objective is not None:
            goodput_ms(objective)  # refused here, naming the syntax
        return objective

    @model_validator(mode="after")
    def _one_axis(self) -> RunSettings:
        if self.concurrency is not None and self.request_rate is not None:
            raise ValueError("--concurrency and --request-rate together: sweep one of them, give only one")
        return self

    @field_validator("out", "tokenizer", "api_key_file", "bundle_cache")
    @classmethod
    def _absolute(cls, path: Path | None) -> Path | None:
        # Absolute from the start (links kept as given): every path a row records is then inside the artifacts,
        # which the publish step writes relative to them, or outside, named by placeholder; a path relative to
        # the folder the run started in (`artifacts/tokenizer`) would be right only there (publish/rewrite.py).
        return Path(os.path.abspath(path)) if path is not None else None

    def measured(self) -> dict[str, Any]:
        """The settings that shape a measurement, as the cache key and the row's provenance record them (an opt-in
        only where it is given)."""
        dumped = self.model_dump(include=set(KEYED_SETTINGS))
        # An opt-in left at its default (None, or False for a switch) is not given.
        given = {k: v for k, v in dumped.items() if v is not None and v is not False}  # `is`: 0.0 is a value
        return {k: v for k, v in dumped.items() if k in given or not setting_flag(k).keyed_when_set}


def goodput_ms(objective: str) -> float:
    """The milliseconds of a `request_latency:MS` objective (AIPerf's `--goodput` syntax, its one metric that every
    request of ours carries); a ValueError naming the syntax otherwise."""
    name, _, value = objective.partition(":")
    try:
        ms = float(value)
    except ValueError:
        ms = math.nan
    if name.strip() != GOODPUT_METRIC or not math.isfinite(ms) or ms <= 0:
        raise ValueError(f"give {GOODPUT_METRIC}:MS with MS a positive number of milliseconds; got {objective!r}")
    return ms


def setting_flag(name: str) -> Flag:
    """The option a RunSettings field comes from (exactly one Flag per field)."""
    flags = [item for item in RunSettings.model_fields[name].metadata if isinstance(item, Flag)]
    if len(flags) != 1:
        raise TypeError(f"the RunSettings field {name} needs exactly one Flag, not {len(flags)}")
    return flags[0]


KEYED_SETTINGS: tuple[str, ...] = tuple(name for name in RunSettings.model_fields if setting_flag(name).keyed)
