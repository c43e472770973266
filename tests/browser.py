"""Headless Chromium for the tests (Debian's, found with `command -v chromium`; never downloaded), spoken to over the
DevTools protocol on a pipe (`--remote-debugging-pipe`: fd 3 in, fd 4 out, NUL-separated JSON) with the standard
library alone; and one call that renders a page and writes its screenshot."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

WIDTH, HEIGHT = 1280, 800  # the window; HEIGHT is the first screen
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    f"--window-size={WIDTH},{HEIGHT}",
    "--remote-debugging-pipe",
)

# --- the DevTools protocol over a pipe ------------------------------------------------------------------------------


class Chromium:
    """One headless Chromium, spoken to over --remote-debugging-pipe; events are kept in arrival order."""

    def __init__(self, executable: str, profile: Path, log: Path, timeout: float = 60) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # The child's ends above fd 9, so that placing them at 3 and 4 never closes one of them.
        to_browser_r, from_browser_w = (_high(fd) for fd in (to_browser_r, from_browser_w))
        # The browser reads commands on fd 3 and writes answers on fd 4; bash puts our pipe ends there (dash reads no
        # fd number above 9).
        shell = f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-'
        with log.open("wb") as stream:
            self.process = subprocess.Popen(
                ["bash", "-c", shell, executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                pass_fds=(to_browser_r, from_browser_w),
                stdin=subprocess.DEVNULL,
                stdout=stream,
                stderr=subprocess.STDOUT,
            )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._timeout, self._buffer, self._next_id = timeout, b"", 0
        self.events: list[dict[str, Any]] = []

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer over the DevTools pipe in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise ConnectionError(f"Chromium closed the DevTools pipe (exit {self.process.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self._timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") != self._next_id:
                self.events.append(answer)
                continue
            if "error" in answer:
                raise RuntimeError(f"{method}: {answer['error']}")
            return answer.get("result", {})

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + self._timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            self.events.append(self._read(deadline))

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError, ConnectionError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


def _high(fd: int) -> int:
    """The same open file at a descriptor above 9 (the original closed)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


def evaluate(browser: Chromium, session: str, expression: str) -> Any:
    answer = browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
    assert "exceptionDetails" not in answer, answer
    return answer["result"]["value"]


def screenshot(browser: Chromium, session: str, path: Path, clip: dict[str, float] | None = None) -> None:
    params: dict[str, Any] = {"format": "png"}
    if clip is not None:
        params |= {"clip": {**clip, "scale": 1}, "captureBeyondViewport": True}
    path.write_bytes(base64.b64decode(browser.send("Page.captureScreenshot", params, session)["data"]))


def chromium_or_skip() -> None:
    """Without Chromium the calling test is skipped saying why; in CI (CI set) it fails."""
    if shutil.which("chromium"):
        return
    why = "no `chromium` on PATH (Debian: apt-get install -y --no-install-recommends chromium; .ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(f"in CI the browser test must run: {why}")
    pytest.skip(why)


def open_page(page: Path, tmp: Path) -> tuple[Chromium, str]:
    """A browser at 1,280 px with scripts off, `page` loaded; the browser and its page's session."""
    executable = shutil.which("chromium")
    assert executable is not None
    browser = Chromium(executable, tmp / "chromium-profile", tmp / "chromium.log")
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for method, params in (
        ("Page.enable", {}),
        ("Network.enable", {}),
        (
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
        ),
        ("Emulation.setScriptExecutionDisabled", {"value": True}),
    ):
        browser.send(method, params, session)
    browser.send("Page.navigate", {"url": page.as_uri()}, session)
    browser.wait_for("Page.loadEventFired", session)
    return browser, session
