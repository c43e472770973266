"""The fault knobs as decisions: which chat request fails, when the process dies, when it becomes ready.

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
        self._started = time.monotonic()

    def restart_clock(self) -> None:
        """Readiness counts from when the server starts serving, not from when the app object was built."""
        self._started = time.monotonic()

    def next_sequence(self) -> int:
        return next(self._sequence)

    def is_ready(self) -> bool:
        return time.monotonic() - self._started >= self.knobs.ready_after_s

    def injects_error(self, sequence: int) -> bool:
        return self.knobs.error_rate > 0 and injects_error(self.knobs.error_rate, sequence)

    @property
    def error_type(self) -> str:
        """The OpenAI-style error type that goes with the injected status."""
        return "invalid_request_error" if self.knobs.error_status < 500 else "server_error"

    def crashes_at(self, sequence: int) -> bool:
        return self.knobs.crash_after is not None and sequence > self.knobs.crash_after

    @staticmethod
    def crash() -> None:
        """Die like a crashed server: no response, no cleanup, no atexit (records already flushed per line)."""
        os._exit(CRASH_EXIT_CODE)
