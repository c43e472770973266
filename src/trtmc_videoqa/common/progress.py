"""Progress while a run works, on stderr: one reporter for the whole run, and watches that feed it from what a long
step writes as it goes (a growing JSONL file, a tool's log), read by a thread while the step runs.

On a terminal the watched step's line is rewritten in place (carriage return, then the line cleared); without one
(a CI log, `docker logs`) a plain line is printed every 10 s and once at the step's end, so the log shows a run
that is alive. Every line is one line of inert text (`text_escape.shown_name`, as the profile names in it need: no
control character of its own, bidirectional and invisible characters escaped), the run's known secrets replaced
(`scrub.REDACTED`): CI logs are public. The clock is injected, so the cadence is tested without waiting. Imports
nothing of ours outside common/.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from .scrub import REDACTED
from .text_escape import one_line, shown_name

PLAIN_EVERY_S = 10.0  # without a terminal: a watched step's line at most this often (and once at its end)
TICK_S = 1.0  # how often a watch reads what its step wrote
CLEAR_LINE = "\r\x1b[2K"  # back to the line's start and clear it: the only control sequence progress writes
_LOG_TAIL_BYTES = 4096  # a log's last line is looked for in this many bytes at its end
_LOG_LINE_CHARS = 160  # a log line shown is cut to this many characters
_READ_BYTES = 4 << 20  # a JSONL file's new bytes read at one time, at most
_LINE_BYTES = 1 << 20  # a JSONL line longer than this is skipped, never held
_LINE_BREAKS = re.compile(r"[\r\n]+")  # a tool's own progress bar rewrites its line with \r: each part is a line


class Figures(str):
    """A status line `LABEL: FIGURES` whose figures (counts, rate, time left) must stay whole on a narrow terminal:
    the label is cut instead. It is the plain line everywhere else."""

    label: str
    figures: str

    def __new__(cls, label: str, figures: str) -> Figures:
        line = super().__new__(cls, f"{label}: {figures}")
        line.label, line.figures = label, figures
        return line


class Progress:
    """The run's progress on one stream. Called with a message: a step begins (a line of its own). `update`: a
    watched step's state now (in place on a terminal, else a plain line when `every_s` has passed since the last
    line); `done`: its state at its end (always a line)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        terminal: bool,
        clock: Callable[[], float] = time.monotonic,
        secrets: Sequence[str] = (),
        width: int = 0,
        every_s: float = PLAIN_EVERY_S,
    ) -> None:
        self.clock = clock
        self.terminal = terminal
        self._stream = stream
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._width = width  # a terminal's columns: a line rewritten in place must not wrap (0: not cut)
        self._every_s = every_s
        self._start = clock()
        self._last_line = self._start  # when the last line was printed
        self._live = False  # a line is being rewritten in place (terminal)
        self._lock = threading.Lock()

    def __call__(self, message: str) -> None:
        self._line(message)

    def update(self, status: str) -> None:
        with self._lock:
            if self.terminal:
                text = self._fitted(status)
                self._stream.write(CLEAR_LINE + text)
                self._stream.flush()
                self._live = True
            elif self.clock() - self._last_line >= self._every_s:
                self._write(self._text(status))

    def done(self, status: str) -> None:
        self._line(status)

    def _line(self, message: str) -> None:
        with self._lock:
            self._write(self._text(message))

    def _write(self, text: str) -> None:
        """A whole line; on a terminal it replaces the line being rewritten, if any."""
        self._stream.write((CLEAR_LINE if self._live else "") + text + "\n")
        self._stream.flush()
        self._live = False
        self._last_line = self.clock()

    def _shown(self, message: str) -> str:
        for secret in self._secrets:
            message = message.replace(secret, REDACTED)
        return shown_name(message)  # names in it escaped as names

    def _prefix(self) -> str:
        return f"  [{self.clock() - self._start:6.1f} s] "

    def _text(self, message: str) -> str:
        return self._prefix() + self._shown(message)

    def _fitted(self, status: str) -> str:
        """The line rewritten in place, one column short of the terminal's width (a wrapped line is not rewritten):
        a `Figures` line loses the end of its label first, then, if the figures alone are too wide, their end."""
        room = self._width - 1
        text = self._text(status)
        if self._width <= 1 or len(text) <= room:
            return text
        if isinstance(status, Figures):
            prefix, figures = self._prefix(), ": " + self._shown(status.figures)
            left = room - len(prefix) - len(figures)
            label = self._shown(status.label)
            text = prefix + (label[: left - 1] + "…" if left >= 2 else "") + figures
        return text[:room]


# What a watch asks, given the seconds since its step began: the step's state now, one line.
Describe = Callable[[float], str]


class Watch:
    """A step watched while it runs: a thread reports `describe(elapsed)` every `tick_s`, and once more at the end
    (an error or Ctrl-C in the step too). Progress never stops a run: a describe that fails is not reported."""

    def __init__(self, progress: Progress, describe: Describe, tick_s: float = TICK_S) -> None:
        self._progress = progress
        self._describe = describe
        self._tick_s = tick_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress-watch", daemon=True)
        self._started = progress.clock()

    def __enter__(self) -> Watch:
        self._started = self._progress.clock()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        status = self._status()
        if status is not None:
            self._progress.done(status)

    def poll(self) -> None:
        """Read what the step wrote and report it (the thread does this every tick)."""
        status = self._status()
        if status is not None:
            self._progress.update(status)

    def _run(self) -> None:
        while not self._stop.wait(self._tick_s):
            self.poll()

    def _status(self) -> str | None:
        try:
            return self._describe(self._progress.clock() - self._started)
        except Exception:  # progress is a courtesy: whatever it cannot read, the run goes on
            return None


def silent(message: str) -> None:
    """No progress at all (`--quiet`, or a job made without the CLI's reporter)."""


def watching(
    progress: Callable[[str], None], describe: Describe, tick_s: float = TICK_S
) -> contextlib.AbstractContextManager[object]:
    """A watch on the run's progress while the block runs; nothing when progress is off (`--quiet`, or a job
    made without the CLI's reporter)."""
    if isinstance(progress, Progress):
        return Watch(progress, describe, tick_s)
    return contextlib.nullcontext()


class JsonlTail:
    """The records a growing JSONL file gained since the last read: only the new bytes are read (at most
    `_READ_BYTES` a time); a last line not yet ended (its writer is still writing it) waits for the next read; a
    line that is not a JSON object, or longer than `_LINE_BYTES`, is skipped unheld. A file that shrank (replaced)
    is read again from its start."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self._skipping = False  # inside a line too long to hold: dropped up to its newline

    def new_records(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as handle:
                if os.fstat(handle.fileno()).st_size < self._offset:
                    self._offset, self._partial, self._skipping = 0, b"", False
                handle.seek(self._offset)
                data = handle.read(_READ_BYTES)
        except OSError:  # not written yet, or gone: nothing new
            return []
        self._offset += len(data)
        *lines, rest = (self._partial + data).split(b"\n")
        if self._skipping and lines:  # the first piece ends the line too long to hold
            lines, self._skipping = lines[1:], False
        elif self._skipping:  # still inside it
            rest = b""
        if len(rest) > _LINE_BYTES:
            rest, self._skipping = b"", True
        self._partial = rest
        records = []
        for line in lines:
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):  # blank, cut off by a crash, not UTF-8, or nested too deep
                continue
            if isinstance(record, dict):
                records.append(record)
        return records


def last_log_line(path: Path) -> str:
    """The last non-blank line of a log (read from its last few KiB), cut to a readable length; "" when none."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - _LOG_TAIL_BYTES))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in _LINE_BREAKS.split(tail) if line.strip()]
    if not lines:
        return ""
    last = one_line(lines[-1])
    return last if len(last) <= _LOG_LINE_CHARS else last[: _LOG_LINE_CHARS - 1] + "…"


def log_status(label: str, log: Path) -> Describe:
    """A long step's state: the time since it began and the last line of its log."""

    def describe(elapsed_s: float) -> str:
        line = last_log_line(log)
        return f"{label}: {elapsed_s:.0f} s" + (f"; log: {line}" if line else "")

    return describe


@contextlib.contextmanager
def watched_log(progress: Callable[[str], None], label: str, log: Path) -> Iterator[None]:
    """The block watched as a long step whose state is its log's last line."""
    with watching(progress, log_status(label, log)):
        yield
