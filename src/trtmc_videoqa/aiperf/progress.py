"""AIPerf's progress, read from what it writes as it goes: its records export (`profile_export.jsonl`, flushed as
records complete, each marked warmup or profiling). Requests done out of planned (warmup apart), the rate and the
time left come from those records and their own timestamps, never from the time since the run began."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..common.progress import Figures, JsonlTail
from .exports import RECORDS_EXPORT


class AiperfCount:
    """A describe for `common.progress.watching`: each call reads the records AIPerf added since the last one and
    says where the run is."""

    def __init__(self, artifact_dir: Path, *, warmup: int, profiling: int, label: str = "aiperf") -> None:
        self._tail = JsonlTail(artifact_dir / RECORDS_EXPORT)
        self.planned = {"warmup": warmup, "profiling": profiling}
        self.done = {"warmup": 0, "profiling": 0}
        self.failed = 0
        self._label = label
        self._first_start_ns: int | None = None  # of the profiling requests recorded
        self._last_end_ns: int | None = None

    def __call__(self, elapsed_s: float = 0.0) -> str:
        for record in self._tail.new_records():
            self._add(record)
        return Figures(self._label, self.status(elapsed_s))

    def _add(self, record: dict[str, Any]) -> None:
        meta = record.get("metadata")
        if not isinstance(meta, dict) or meta.get("benchmark_phase") not in self.done:
            return
        phase = meta["benchmark_phase"]
        self.done[phase] += 1
        if record.get("error"):
            self.failed += 1
        start, end = meta.get("request_start_ns"), meta.get("request_end_ns")
        if phase == "profiling" and isinstance(start, int) and isinstance(end, int):
            self._first_start_ns = start if self._first_start_ns is None else min(self._first_start_ns, start)
            self._last_end_ns = end if self._last_end_ns is None else max(self._last_end_ns, end)

    def rate(self) -> float | None:
        """Profiling requests per second over the span AIPerf's records cover; None before two ends apart."""
        if self._first_start_ns is None or self._last_end_ns is None or self._last_end_ns <= self._first_start_ns:
            return None
        return self.done["profiling"] / ((self._last_end_ns - self._first_start_ns) / 1e9)

    def status(self, elapsed_s: float = 0.0) -> str:
        warmup, profiling = self.done["warmup"], self.done["profiling"]
        planned = self.planned["profiling"]
        if not warmup and not profiling:  # AIPerf's own start (its services, the first request) takes a while
            return (
                f"AIPerf starting, {elapsed_s:.0f} s: no request answered yet ({planned} profiling and "
                f"{self.planned['warmup']} warmup requests planned)"
            )
        text = f"{profiling}/{planned} profiling requests done (warmup {warmup}/{self.planned['warmup']})"
        if self.failed:
            text += f", {self.failed} failed"
        rate = self.rate()
        if rate is not None:
            text += f", {rate:.2f} req/s"
            if profiling < planned:
                text += f", about {(planned - profiling) / rate:.0f} s left"
        return text
