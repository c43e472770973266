"""SIGTERM and SIGHUP stop a run the way Ctrl-C does.

`docker stop`, `timeout`, a CI cancel and a closed terminal send SIGTERM or SIGHUP, whose default action ends the
process at once: no `finally` runs, so the servers and AIPerf groups it started would be orphaned and keep writing
into the output directory. Here they raise `Stopped`, a KeyboardInterrupt, in the main thread, so every cleanup that
ends children on Ctrl-C runs for them too; the exit code is 128 + the signal's number, as a shell reports it. In a
container the tool may be PID 1, where the kernel never applies SIGTERM's default action: only a handler stops it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from .errors import SIGNAL_EXIT_BASE

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_Handler = signal.Handlers | Callable[[int, FrameType | None], None]
_received: list[int] = []  # every stop signal this process got, in order


class Stopped(KeyboardInterrupt):
    """A stop signal, raised where Ctrl-C's KeyboardInterrupt would be."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    if len(_received) == 1:  # once: a second signal must not cut the cleanup the first one started short
        raise Stopped(signum)


@contextlib.contextmanager
def _handled(
    signums: tuple[int, ...], handler: signal.Handlers | Callable[[int, FrameType | None], None]
) -> Iterator[None]:
    """While the block runs, `handler` answers each of `signums` (only the main thread may set one: elsewhere the
    block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in signums}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def stop_signals_interrupt() -> contextlib.AbstractContextManager[None]:
    """While the block runs, SIGTERM and SIGHUP raise Stopped."""
    return _handled(STOP_SIGNALS, _raise_stopped)


def stop_signals_ignored() -> contextlib.AbstractContextManager[None]:
    """While the block runs, SIGINT, SIGTERM and SIGHUP are ignored: what must finish after an interruption (ending
    a child's process group, the report of what exists) is not itself cut short."""
    return _handled((signal.SIGINT, *STOP_SIGNALS), signal.SIG_IGN)


def interrupted_exit_code() -> int:
    """128 + the first stop signal received, else SIGINT's (130)."""
    return SIGNAL_EXIT_BASE + (_received[0] if _received else signal.SIGINT)


def interrupted_by() -> str:
    return signal.Signals(_received[0]).name if _received else "interrupted"
