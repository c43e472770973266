"""Frame-sampling policies as data, and the pure planning that turns one into exact frame indices.

"Uniform 8" is not one definition: Qwen rounds linspace positions to the nearest frame, vLLM's
OpenCV loader truncates them, so every policy names its rounding rule and who applies it.

Spec syntax (what ``SamplingPolicy.parse`` reads and ``SamplingPolicy.spec`` writes)::

    all[,where=client|server]
    uniform:N[,round|floor][,even][,where=client|server]
    fps:F[,round|floor][,min=N][,max=N][,even][,where=client|server]

- ``uniform:N``: N frames spread evenly, first and last frame included.
- ``fps:F``: ``frame_count / source_fps * F`` frames, clamped to [min, max] and to the clip, then floored to a
  whole number (to an even one with ``even``); spread like uniform. Qwen's defaults read
  ``fps:2,round,min=4,max=768,even``.
- ``round`` (default): nearest frame, halves to even, as Qwen does; ``floor``: truncate, as vLLM's OpenCV loader does.
- ``even``: the count is a multiple of 2 because the vision encoder packs two frames per temporal patch
  (frame_factor 2). For ``uniform`` an odd N is rounded to an even one the way Qwen rounds an explicit count.
- ``where``: who applies it: ``server`` (the clip is sent whole; the server samples, this only predicts what
  it picks) or ``client`` (the tool sends the picked frames). Default ``server``.

Positions are computed as numpy float64 linspace, as the servers compute them, not in exact arithmetic: the two
differ by one frame at rare exact-half or exact-integer positions. The same float64 operations run here in plain
Python, without loading NumPy (tests/test_media_sampling.py holds them equal to numpy.linspace, rint and trunc).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Mode = Literal["all", "uniform", "fps"]
Rounding = Literal["round", "floor"]
Where = Literal["client", "server"]

_ROUNDING_TEXT = {
    "round": "rounded to the nearest frame, halves to even (as Qwen does)",
    "floor": "truncated toward zero (as vLLM's OpenCV loader does)",
}
_OPTIONS_HELP = "expected round, floor, even, min=N, max=N (fps only) or where=client|server"


class SamplingPolicy(BaseModel):
    """One sampling policy. Build it from a spec string with ``SamplingPolicy.parse`` (or pass the string to a
    pydantic field of this type)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Mode
    frames: int | None = Field(default=None, ge=1)  # uniform: how many
    fps: float | None = Field(default=None, gt=0)  # fps: target frames per second
    rounding: Rounding = "round"
    min_frames: int = Field(default=1, ge=1)  # fps only
    max_frames: int | None = Field(default=None, ge=1)  # fps only; None: up to the clip's frame count
    frame_factor: Literal[1, 2] = 1  # 2 = "even"
    where: Where = "server"

    @model_validator(mode="before")
    @classmethod
    def _from_spec_string(cls, value: Any) -> Any:
        return _parse_fields(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _fields_fit_the_mode(self) -> SamplingPolicy:
        fps_only = self.min_frames != 1 or self.max_frames is not None
        if self.mode == "uniform" and (self.frames is None or self.fps is not None or fps_only):
            raise ValueError("uniform sampling takes a frame count (uniform:N) and no fps, min or max")
        if self.mode == "fps" and (self.fps is None or self.frames is not None):
            raise ValueError("fps sampling takes a target rate (fps:F) and no frame count")
        if self.mode == "all" and (
            self.frames is not None
            or self.fps is not None
            or fps_only
            or self.frame_factor != 1
            or self.rounding != "round"
        ):
            raise ValueError("'all' takes no count, rate, rounding, min, max or even; only where=")
        if self.max_frames is not None and self.max_frames < self.min_frames:
            raise ValueError(f"max={self.max_frames} is below min={self.min_frames}")
        if self.mode == "uniform" and self.frame_factor == 2 and (self.frames or 0) < 2:
            raise ValueError("uniform:1 cannot be even; ask for at least 2 frames or drop 'even'")
        return self

    @classmethod
    def parse(cls, spec: str) -> SamplingPolicy:
        """``uniform:8``, ``uniform:8,floor``, ``fps:2,min=4,max=768,even``, ``all,where=client`` (module doc)."""
        try:
            return cls.model_validate(_parse_fields(spec))
        except ValidationError as error:
            reasons = "; ".join(detail["msg"].removeprefix("Value error, ") for detail in error.errors())
            raise ValueError(f"invalid sampling spec {spec!r}: {reasons}") from None

    @property
    def spec(self) -> str:
        """The canonical spec string; ``SamplingPolicy.parse(policy.spec) == policy``."""
        if self.mode == "all":
            return f"all,where={self.where}"
        head = f"uniform:{self.frames}" if self.mode == "uniform" else f"fps:{_number_text(self.fps or 0)}"
        parts = [head, self.rounding]
        if self.mode == "fps":
            parts.append(f"min={self.min_frames}")
            if self.max_frames is not None:
                parts.append(f"max={self.max_frames}")
        if self.frame_factor == 2:
            parts.append("even")
        parts.append(f"where={self.where}")
        return ",".join(parts)

    def resolve(self, frame_count: int, fps: Fraction | int | str, start_time_s: float = 0.0) -> ResolvedSampling:
        """The exact frame indices (0-based, presentation order) and timestamps this policy picks from a clip."""
        if frame_count < 1:
            raise ValueError(
                f"cannot sample {self.spec} from a clip with {frame_count} frames; "
                "probe the clip and check it has frames"
            )
        source_fps = _as_fraction(fps)
        if source_fps <= 0:
            raise ValueError(f"the clip's frame rate must be positive, got {fps!r}")
        if self.mode == "all":
            indices = list(range(frame_count))
            rule = f"all {frame_count} frames"
        else:
            count, count_rule = (
                self._uniform_count(frame_count) if self.mode == "uniform" else self._fps_count(frame_count, source_fps)
            )
            indices = _spread(frame_count, count, self.rounding)
            rule = f"{count_rule}; indices = linspace(0, {frame_count - 1}, {count}) {_ROUNDING_TEXT[self.rounding]}"
        return ResolvedSampling(
            policy=self,
            spec=self.spec,
            where=self.where,
            frame_count=frame_count,
            source_fps=f"{source_fps.numerator}/{source_fps.denominator}",
            start_time_s=start_time_s,
            indices=indices,
            timestamps_s=[round(start_time_s + float(index / source_fps), 6) for index in indices],
            rule=rule,
        )

    def _uniform_count(self, frame_count: int) -> tuple[int, str]:
        asked = self.frames or 0
        factor = self.frame_factor
        count = asked
        text = f"uniform {asked} of {frame_count} frames"
        if factor == 2 and asked % 2:
            count = round(asked / 2) * 2  # Qwen rounds an explicit count to even with Python's round()
            text += f", rounded to an even count: {count}"
        if count > frame_count:
            count = _floor_to(frame_count, factor)
            text += f", clamped to the clip's {frame_count} frames" + (f" (even: {count})" if factor == 2 else "")
        if count < 1:
            raise ValueError(f"cannot take an even number of frames from a clip with {frame_count} frame")
        return count, text

    def _fps_count(self, frame_count: int, source_fps: Fraction) -> tuple[int, str]:
        target = _as_fraction(self.fps or 0)
        factor = self.frame_factor
        raw = Fraction(frame_count) / source_fps * target
        low = _ceil_to(self.min_frames, factor)
        high = _floor_to(min(self.max_frames or frame_count, frame_count), factor)
        count = _floor_to(min(max(raw, Fraction(low)), Fraction(high)), factor)
        if count < 1:
            raise ValueError(f"{self.spec} picks no frames from a clip with {frame_count} frame(s)")
        text = (
            f"fps {_number_text(self.fps or 0)} on {frame_count} frames at {_fraction_text(source_fps)} fps: "
            f"{frame_count} / {_fraction_text(source_fps)} x {_number_text(self.fps or 0)} = "
            f"{float(raw):.4g}; clamped to [{low}, {high}]; "
            f"{'floored to a multiple of 2' if factor == 2 else 'floored'} -> {count} frames"
        )
        return count, text


class ResolvedSampling(BaseModel):
    """What a policy picks from one clip, for the report to say "the model saw frames 0,16,31,47"."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: SamplingPolicy
    spec: str
    where: Where
    frame_count: int
    source_fps: str
    start_time_s: float
    indices: list[int]
    timestamps_s: list[float]
    rule: str


def _parse_fields(spec: str) -> dict[str, Any]:
    text = spec.strip()
    head, *options = [part.strip() for part in text.split(",")]
    mode, _, argument = head.partition(":")
    fields: dict[str, Any] = {"mode": mode.strip()}
    if fields["mode"] not in ("all", "uniform", "fps"):
        raise ValueError(f"unknown sampling mode in {spec!r}; expected all, uniform:N or fps:F")
    argument = argument.strip()
    if fields["mode"] == "all" and argument:
        raise ValueError(f"'all' takes no argument, got {spec!r}")
    if fields["mode"] != "all" and not argument:
        raise ValueError(f"{fields['mode']} needs a value after the colon, e.g. uniform:8 or fps:2; got {spec!r}")
    if fields["mode"] == "uniform":
        fields["frames"] = _integer(argument, spec)
    elif fields["mode"] == "fps":
        try:
            fields["fps"] = float(Fraction(argument))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"fps needs a number such as fps:2 or fps:0.5; got {spec!r}") from None
    for option in options:
        key, has_value, value = (piece.strip() for piece in option.partition("="))
        if not has_value and key in ("round", "floor"):
            fields["rounding"] = key
        elif not has_value and key == "even":
            fields["frame_factor"] = 2
        elif has_value and key in ("min", "max"):
            fields[f"{key}_frames"] = _integer(value, spec)
        elif has_value and key == "where" and value in ("client", "server"):
            fields["where"] = value
        else:
            raise ValueError(f"unknown sampling option {option!r} in {spec!r}; {_OPTIONS_HELP}")
    return fields


def _integer(text: str, spec: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"expected a whole number, got {text!r} in {spec!r}") from None


def _spread(frame_count: int, count: int, rounding: Rounding) -> list[int]:
    if count == 1:
        return [0]
    return [round(p) if rounding == "round" else math.trunc(p) for p in linspace(frame_count - 1, count)]


def linspace(stop: int, count: int) -> list[float]:
    """numpy.linspace(0, stop, count) (count >= 2), float64 as numpy-based loaders compute it, operation for
    operation: each position is i x step, step = stop / (count - 1), and the last is `stop` itself. Python's round()
    on a float is numpy.rint (halves to even), math.trunc numpy.trunc."""
    delta = float(stop)
    div = count - 1
    step = delta / div
    # numpy's path for a zero step (a one-frame clip) is i / div x delta
    positions = [i / div * delta for i in range(count)] if step == 0 else [i * step for i in range(count)]
    positions[-1] = delta
    return positions


def _as_fraction(value: Fraction | int | float | str) -> Fraction:
    if isinstance(value, float):
        return Fraction(repr(value))  # the decimal the user wrote, not the binary float
    return Fraction(value)


def _floor_to(value: Fraction | int, factor: int) -> int:
    return math.floor(value / factor) * factor


def _ceil_to(value: int, factor: int) -> int:
    return math.ceil(value / factor) * factor


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _fraction_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
