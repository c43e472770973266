"""The fault knobs as decisions: which chat request fails or hides its task time, which native answer drifts,
when the process dies, when it becomes ready.

Deterministic on purpose, so a test (or a qualification self-check) can say in advance which request ids must
come back as errors: positions, not probabilities.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from fractions import Fraction

from .config import FaultKnobs

# Distinct from Python's own exit codes, so a supervisor can tell the injected crash from a real failure.
CRASH_EXIT_CODE = 86

# Put before a drifted native answer: still a non-empty answer, but never the same text as chat's after whitespace
# and case are normalised.
DRIFT_MARKER = "drifted"


def error_positions(rate: float, count: int) -> list[int]:
    """The 1-based chat request positions (up to ``count``) that ``rate`` answers with the error status."""
    return [n for n in range(1, count + 1) if injects_error(rate, n)]


def injects_error(rate: float, sequence: int) -> bool:
    # floor(n*r) > floor((n-1)*r): exactly floor(N*r) failures among the first N, spread evenly; the decimal
    # the user wrote (0.1), not its binary float, decides the positions.
    exact = Fraction(repr(rate))
    return math.floor(sequence * exact) > math.floor((sequence - 1) * exact)


class FaultPlan:
    def __init__(self, knobs: FaultKnobs) -> None:
        self.knobs = knobs
        self._sequence = itertools.count(1)
        self._native_sequence = itertools.count(1)
        self._started = time.monotonic()

    def restart_clock(self) -> None:
        """Readiness counts from when the server starts serving, not from when the app object was built."""
        self._started = time.monotonic()

    def next_sequence(self) -> int:
        """The next chat request's position."""
        return next(self._sequence)

    def next_native_sequence(self) -> int:
        """The next native Task request's position, counted apart so chat's fault positions do not move."""
        return next(self._native_sequence)

    def is_ready(self) -> bool:
        if self.knobs.ready_when_file is not None and not self.knobs.ready_when_file.exists():
            return False
        return time.monotonic() - self._started >= self.knobs.ready_after_s

    def injects_error(self, sequence: int) -> bool:
        return self.knobs.error_rate > 0 and injects_error(self.knobs.error_rate, sequence)

    def omits_task_time(self, sequence: int) -> bool:
        return self.knobs.omit_task_time_rate > 0 and injects_error(self.knobs.omit_task_time_rate, sequence)

    def drifts(self, native_sequence: int) -> bool:
        return self.knobs.identity_drift_rate > 0 and injects_error(self.knobs.identity_drift_rate, native_sequence)

    def sent_answer(self, computed: str) -> str:
        """The answer text that goes out: the computed one, unless the answer_text knob replaces it."""
        return computed if self.knobs.answer_text is None else self.knobs.answer_text

    @property
    def error_type(self) -> str:
        """The OpenAI-style error type that goes with the injected status."""
        return "invalid_request_error" if self.knobs.error_status < 500 else "server_error"

    def added_task_ms(self, sequence: int) -> float:
        """What the task sleeps for request `sequence` of its route: added_task_ms, from request slow_after+1 on."""
        slow = self.knobs.slow_after is None or sequence > self.knobs.slow_after
        return self.knobs.added_task_ms if slow else 0.0

    def crashes_at(self, sequence: int) -> bool:
        return self.knobs.crash_after is not None and sequence > self.knobs.crash_after

    @staticmethod
    def crash() -> None:
        """Die like a crashed server: no response, no cleanup, no atexit (records already flushed per line)."""
        os._exit(CRASH_EXIT_CODE)
