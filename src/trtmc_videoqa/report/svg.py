"""The HTML page's pictures, drawn as inline SVG from a row's own requests (no script, no file): the latency
distribution (client end-to-end beside server task time, as empirical CDFs with the row's p50/p90/p99 marked) and,
secondary, the latency of each profiling request in order. Every text from outside goes through `html_text`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ..common.text_escape import html_text as escape
from ..results import LatencyStats, ResultRow

CLIENT_COLOUR: Final = "#0969da"
TASK_COLOUR: Final = "#bf8700"
_QUANTILES: Final = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))
_AXIS: Final = "#8c959f"


def samples(row: ResultRow) -> tuple[list[float], list[float]]:
    """(client end-to-end ms, server task ms) of the row's completed profiling requests, each sorted."""
    profiling = [r for r in row.requests if r.phase == "profiling"]
    client = sorted(r.client_latency_ms for r in profiling if r.client_latency_ms is not None)
    task = sorted(r.server_task_ms for r in profiling if r.server_task_ms is not None)
    return client, task


def _nice_top(value: float) -> float:
    """The axis' end: the first of 1, 2, 2.5, 5 times a power of ten at or above `value`."""
    power = 1.0
    while power * 10 <= value:
        power *= 10
    while power > value and power > 1e-3:
        power /= 10
    return next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value)


class _Frame:
    """The plot's area and its two scales: milliseconds across, a fraction of requests up."""

    def __init__(self, width: int, height: int, top_ms: float) -> None:
        self.left, self.right, self.top, self.bottom = 44, width - 14, 30, height - 34
        self.top_ms = top_ms

    def x(self, value_ms: float) -> float:
        return self.left + (self.right - self.left) * min(value_ms / self.top_ms, 1.0)

    def y(self, fraction: float) -> float:
        return self.bottom - (self.bottom - self.top) * fraction


def _axes(frame: _Frame) -> list[str]:
    parts = [
        f'<line x1="{frame.left}" y1="{frame.bottom}" x2="{frame.right}" y2="{frame.bottom}" stroke="{_AXIS}"/>',
        f'<line x1="{frame.left}" y1="{frame.top}" x2="{frame.left}" y2="{frame.bottom}" stroke="{_AXIS}"/>',
    ]
    for step in range(5):
        value = frame.top_ms * step / 4
        x = frame.x(value)
        parts.append(f'<line x1="{x:.1f}" y1="{frame.bottom}" x2="{x:.1f}" y2="{frame.bottom + 4}" stroke="{_AXIS}"/>')
        parts.append(f'<text x="{x:.1f}" y="{frame.bottom + 16}" font-size="10" text-anchor="middle">{value:g}</text>')
    parts.append(f'<text x="{frame.right}" y="{frame.bottom + 30}" font-size="10" text-anchor="end">latency, ms</text>')
    for name, quantile in _QUANTILES:
        y = frame.y(quantile)
        parts.append(
            f'<line x1="{frame.left}" y1="{y:.1f}" x2="{frame.right}" y2="{y:.1f}" stroke="#d0d7de" '
            'stroke-dasharray="2 3"/>'
            f'<text x="{frame.left - 4}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{name}</text>'
        )
    parts.append(f'<text x="{frame.left - 4}" y="{frame.y(0) + 3:.1f}" font-size="10" text-anchor="end">0</text>')
    return parts


def _curve(frame: _Frame, values: list[float], colour: str, dashed: bool) -> str:
    """The empirical CDF as a step line: at each sorted value, up by one request's share."""
    count = len(values)
    steps = "".join(f" H{frame.x(v):.1f} V{frame.y((i + 1) / count):.1f}" for i, v in enumerate(values))
    dash = ' stroke-dasharray="6 3"' if dashed else ""
    start = f"M{frame.x(values[0]):.1f},{frame.y(0):.1f}"
    return f'<path d="{start}{steps}" fill="none" stroke="{colour}" stroke-width="1.6"{dash}/>'


def _marks(frame: _Frame, stats: LatencyStats | None, colour: str, name: str) -> list[str]:
    """A dot where the row's own p50/p90/p99 sit on the curve; a percentile the row has no figure for is not drawn."""
    if stats is None:
        return []
    parts = []
    for label, quantile in _QUANTILES:
        value = getattr(stats, f"{label}_ms")
        if value is None:
            continue
        x, y = frame.x(value), frame.y(quantile)
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.2" fill="{colour}"><title>{escape(name)} {label}: '
            f"{value:.1f} ms</title></circle>"
        )
    return parts


def _legend(frame: _Frame, task: bool) -> str:
    y = frame.top - 14
    client = (
        f'<line x1="{frame.left}" y1="{y - 4}" x2="{frame.left + 22}" y2="{y - 4}" stroke="{CLIENT_COLOUR}" '
        f'stroke-width="2"/><text x="{frame.left + 26}" y="{y}" font-size="11">client end-to-end (AIPerf)</text>'
    )
    if not task:
        return client + f'<text x="{frame.left + 200}" y="{y}" font-size="11">server task time: not reported</text>'
    return client + (
        f'<line x1="{frame.left + 200}" y1="{y - 4}" x2="{frame.left + 222}" y2="{y - 4}" stroke="{TASK_COLOUR}" '
        f'stroke-width="2" stroke-dasharray="6 3"/>'
        f'<text x="{frame.left + 226}" y="{y}" font-size="11">server task time</text>'
    )


def distribution_svg(row: ResultRow, width: int = 500, height: int = 230) -> str | None:
    """Client end-to-end and server task time of the profiling requests as two CDFs on one millisecond axis, the
    row's p50/p90/p99 marked on each; None for a row without a completed profiling request."""
    client, task = samples(row)
    if not client:
        return None
    frame = _Frame(width, height, _nice_top(max(client[-1], task[-1] if task else 0.0)))
    parts = _axes(frame)
    parts.append(_curve(frame, client, CLIENT_COLOUR, dashed=False))
    parts += _marks(frame, row.client_latency, CLIENT_COLOUR, "client end-to-end")
    if task:
        parts.append(_curve(frame, task, TASK_COLOUR, dashed=True))
        parts += _marks(frame, row.server_task_time, TASK_COLOUR, "server task time")
    parts.append(_legend(frame, bool(task)))
    return (
        f'<svg class="distribution" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="latency distribution of {escape(row.profile)}">'
        f"<title>share of profiling requests done within a latency: client end-to-end and server task time"
        f"</title>{''.join(parts)}</svg>"
    )


def request_svg(row: ResultRow, width: int = 500, height: int = 160) -> str:
    """Client latency per profiling request in order, with the server's task time beneath it where known."""
    points = [
        (r.client_latency_ms, r.server_task_ms)
        for r in row.requests
        if r.phase == "profiling" and r.client_latency_ms is not None
    ]
    if not points:
        return "<p>No completed profiling requests to plot.</p>"
    top = max(max(c, t or 0) for c, t in points) * 1.1 or 1.0
    pad = 30
    step = (width - 2 * pad) / max(len(points) - 1, 1)

    def x(index: int) -> float:
        return pad + index * step

    def y(value: float) -> float:
        return height - pad - (value / top) * (height - 2 * pad)

    axis = (
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="{_AXIS}"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="{_AXIS}"/>'
        f'<text x="{pad}" y="{pad - 8}" font-size="11">{top:.0f} ms</text>'
        f'<text x="{width - pad}" y="{height - 8}" font-size="11" text-anchor="end">request #</text>'
    )
    legend = (
        f'<text x="{width - 200}" y="{pad - 8}" font-size="11" fill="{CLIENT_COLOUR}">client end-to-end (AIPerf)</text>'
        f'<text x="{width - 200}" y="{pad + 6}" font-size="11" fill="{TASK_COLOUR}">server task time</text>'
    )
    return (
        f'<svg class="per-request" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="latency of each request of {escape(row.profile)}">{axis}'
        f"{_polyline([c for c, _ in points], CLIENT_COLOUR, x, y)}"
        f"{_polyline([t for _, t in points], TASK_COLOUR, x, y)}"
        f"{legend}</svg>"
    )


def _polyline(values: list[float | None], colour: str, x: Callable[[int], float], y: Callable[[float], float]) -> str:
    coords = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values) if v is not None)
    return f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coords}"/>' if coords else ""
