"""The throughput-latency curve of a row's sweep, drawn as inline SVG by our own code (no plotting library, no
script): requests per second achieved across, client latency up; a point per load level at its p50, labelled with
its level, a bar up to its p90 and a tick at its p99 where the level has them. Several rows overlay on one pair of
axes with a legend (`report A B`). Every text from outside goes through `html_text`; a figure that is not a finite
number from zero up is refused (ValueError), never drawn somewhere arbitrary."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from ..common.text_escape import cut_middle
from ..common.text_escape import html_text as escape
from ..results import LoadLevel, ResultRow, Sweep

# A line per series, told apart by colour and by dash (for a reader who cannot tell the colours apart).
_STYLES: Final = (
    ("#0969da", ""),
    ("#bf3989", "6 3"),
    ("#1a7f37", "2 3"),
    ("#bc4c00", "8 3 2 3"),
    ("#6639ba", "4 4"),
    ("#57606a", "1 2"),
)
_AXIS: Final = "#8c959f"
_LEGEND_LINE: Final = 16
_CHAR_PX: Final = 6.4  # a generous width of one 11 px character, to keep a legend line inside the picture
X_TITLE: Final = "requests per second achieved (clips per second alike: one clip a request)"
Y_TITLE: Final = "client latency, ms (p50; bar to p90, tick at p99)"


@dataclass(frozen=True)
class CurvePoint:
    """One load level: its label (`c4`, `2/s`), requests per second achieved, client latency p50 (p90, p99 where the
    level has enough samples for them)."""

    level: str
    x: float
    p50: float
    p90: float | None = None
    p99: float | None = None


@dataclass(frozen=True)
class CurveSeries:
    """One row's levels in the order measured, and the levels with no figure to draw (nothing completed)."""

    name: str
    points: tuple[CurvePoint, ...]
    missing: tuple[str, ...] = ()


def level_label(level: LoadLevel) -> str:
    """`c4` for concurrency 4, `2.5/s` for a request rate of 2.5 per second."""
    if level.request_rate is not None:
        return f"{level.request_rate:g}/s"
    return f"c{level.concurrency}"


def series_of(sweep: Sweep, name: str) -> CurveSeries:
    """A row's sweep as a series: a point per level with requests per second and a client p50."""
    points, missing = [], []
    for level in sweep.levels:
        c = level.client_latency
        if level.requests_per_s is None or c is None or c.p50_ms is None:
            missing.append(level_label(level))
            continue
        points.append(CurvePoint(level_label(level), level.requests_per_s, c.p50_ms, c.p90_ms, c.p99_ms))
    return CurveSeries(name, tuple(points), tuple(missing))


def _checked(series: list[CurveSeries]) -> None:
    for one in series:
        for point in one.points:
            for what, value in (("x", point.x), ("p50", point.p50), ("p90", point.p90), ("p99", point.p99)):
                if value is not None and not (math.isfinite(value) and value >= 0):
                    raise ValueError(f"{one.name} {point.level}: {what} is {value}, not a finite number >= 0")


def scale(largest: float) -> tuple[float, int]:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) and the number of ticks, at most five, that reach
    past `largest` with a tenth to spare: the axis runs from zero to step * ticks."""
    reach = min(max(largest * 1.1, 1e-9), 1e300)  # a figure past this range is drawn at the axis' end
    power = 10.0 ** math.floor(math.log10(reach / 5))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if math.ceil(reach / (m * power)) <= 5)
    return step, math.ceil(reach / step)


class _Frame:
    """The plot's area and its two linear scales, each from zero to a round top."""

    def __init__(self, width: int, height: int, legend_lines: int, x: tuple[float, int], y: tuple[float, int]) -> None:
        self.left, self.right = 56, width - 18
        self.top, self.bottom = 24 + _LEGEND_LINE * legend_lines, height - 42
        (self.step_x, self.ticks_x), (self.step_y, self.ticks_y) = x, y
        self.top_x, self.top_y = self.step_x * self.ticks_x, self.step_y * self.ticks_y

    def x(self, value: float) -> float:
        return self.left + (self.right - self.left) * min(value / self.top_x, 1.0)

    def y(self, value: float) -> float:
        return self.bottom - (self.bottom - self.top) * min(value / self.top_y, 1.0)


def _axes(frame: _Frame) -> list[str]:
    parts = [
        f'<line x1="{frame.left}" y1="{frame.bottom}" x2="{frame.right}" y2="{frame.bottom}" stroke="{_AXIS}"/>',
        f'<line x1="{frame.left}" y1="{frame.top}" x2="{frame.left}" y2="{frame.bottom}" stroke="{_AXIS}"/>',
    ]
    for tick in range(frame.ticks_x + 1):
        vx = round(frame.step_x * tick, 9)
        x = frame.x(vx)
        parts.append(
            f'<line x1="{x:.1f}" y1="{frame.bottom}" x2="{x:.1f}" y2="{frame.bottom + 4}" stroke="{_AXIS}"/>'
            f'<text x="{x:.1f}" y="{frame.bottom + 16}" font-size="10" text-anchor="middle">{vx:g}</text>'
        )
    for tick in range(1, frame.ticks_y + 1):
        vy = round(frame.step_y * tick, 9)
        y = frame.y(vy)
        parts.append(
            f'<line x1="{frame.left}" y1="{y:.1f}" x2="{frame.right}" y2="{y:.1f}" stroke="#eaeef2"/>'
            f'<text x="{frame.left - 4}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{vy:g}</text>'
        )
    parts.append(f'<text x="{frame.left - 4}" y="{frame.bottom + 3}" font-size="10" text-anchor="end">0</text>')
    parts.append(f'<text x="{frame.right}" y="{frame.bottom + 32}" font-size="11" text-anchor="end">{X_TITLE}</text>')
    parts.append(f'<text x="{frame.left}" y="{frame.top - 8}" font-size="11">{Y_TITLE}</text>')
    return parts


def _point(frame: _Frame, point: CurvePoint, name: str, colour: str) -> str:
    """The level's dot at its p50 with its label, a bar to its p90 and a tick at its p99 where it has them."""
    x, y = frame.x(point.x), frame.y(point.p50)
    parts = []
    if point.p90 is not None:
        parts.append(
            f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{frame.y(point.p90):.1f}" stroke="{colour}" '
            'stroke-width="1.2"/>'
        )
    if point.p99 is not None:
        y99 = frame.y(point.p99)
        parts.append(
            f'<line x1="{x - 4:.1f}" y1="{y99:.1f}" x2="{x + 4:.1f}" y2="{y99:.1f}" stroke="{colour}" '
            'stroke-width="1.2"/>'
        )
    shown = ", ".join(
        f"{what} {value:.1f} ms"
        for what, value in (("p50", point.p50), ("p90", point.p90), ("p99", point.p99))
        if value is not None
    )
    title = escape(f"{name}, {point.level}: {point.x:g} requests/s, client {shown}")
    parts.append(
        f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}" data-level="{escape(point.level)}">'
        f"<title>{title}</title></circle>"
        f'<text x="{x + 6:.1f}" y="{y - 6:.1f}" font-size="10" fill="{colour}">{escape(point.level)}</text>'
    )
    return "".join(parts)


def _series(frame: _Frame, one: CurveSeries, style: tuple[str, str]) -> list[str]:
    colour, dash = style
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    coords = " ".join(f"{frame.x(p.x):.1f},{frame.y(p.p50):.1f}" for p in one.points)
    line = f'<polyline fill="none" stroke="{colour}" stroke-width="1.8"{dashed} points="{coords}"/>'
    return [line, *(_point(frame, point, one.name, colour) for point in one.points)]


def _legend(frame: _Frame, series: list[CurveSeries]) -> list[str]:
    parts = []
    for index, one in enumerate(series):
        colour, dash = _STYLES[index % len(_STYLES)]
        y = 14 + _LEGEND_LINE * index
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        missing = f" (not drawn, nothing completed: {', '.join(one.missing)})" if one.missing else ""
        said = one.name + missing
        # cut in the middle (rows of one profile differ at their end, where they were served); whole on hover
        room = int((frame.right - frame.left - 30) / _CHAR_PX)
        shown = cut_middle(said, room, head=(room - 1) * 3 // 5)
        parts.append(
            f'<line x1="{frame.left}" y1="{y - 4}" x2="{frame.left + 24}" y2="{y - 4}" stroke="{colour}" '
            f'stroke-width="2"{dashed}/><text class="series" x="{frame.left + 30}" y="{y}" font-size="11">'
            f"<title>{escape(said)}</title>{escape(shown)}</text>"
        )
    return parts


def curve_svg(series: list[CurveSeries], width: int = 560, height: int = 300) -> str | None:
    """The series on one pair of axes, a legend line each; None when no series has a point to draw. Raises
    ValueError for a figure that is not a finite number from zero up."""
    _checked(series)
    drawn = [one for one in series if one.points]
    if not drawn:
        return None
    points = [p for one in drawn for p in one.points]
    x_scale = scale(max(p.x for p in points))
    y_scale = scale(max(max(p.p50, p.p90 or 0.0, p.p99 or 0.0) for p in points))
    frame = _Frame(width, height + _LEGEND_LINE * (len(series) - 1), len(series), x_scale, y_scale)
    parts = _axes(frame)
    for index, one in enumerate(series):
        if one.points:
            parts += _series(frame, one, _STYLES[index % len(_STYLES)])
    parts += _legend(frame, series)
    full = height + _LEGEND_LINE * (len(series) - 1)
    names = escape(", ".join(one.name for one in series))
    return (
        f'<svg class="throughput-curve" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{full}" '
        f'viewBox="0 0 {width} {full}" role="img" aria-label="throughput against latency: {names}">'
        f"<title>client latency against requests per second achieved, a point per load level</title>"
        f"{''.join(parts)}</svg>"
    )


def row_curve(row: ResultRow, name: str | None = None) -> str | None:
    """The curve of one row's sweep; None for a row without a sweep of two levels or more."""
    if row.sweep is None or len(row.sweep.levels) < 2:
        return None
    return curve_svg([series_of(row.sweep, name or row.profile)])
