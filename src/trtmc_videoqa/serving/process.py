"""A server process we started: its own process group (registered with `child_groups`, so it dies with the tool
even after `kill -9` of the tool), its log captured, ready only when /health/ready says so."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

from ..common import child_groups
from ..common.atomic_write import open_for_writing
from ..common.net import verified_tls
from ..common.server_json import parse_server_json

READY_PATH = "/health/ready"


class ServerProblem(Exception):
    """The server did not start, did not get ready, or is unreachable; the message names the fix. `exit_code`: the
    server's own exit status, when it exited before it was ready."""

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_ready(
    url: str,
    *,
    timeout_s: float,
    process: subprocess.Popen[bytes] | None = None,
    log_path: Path | None = None,
    interval_s: float = 0.2,
    ready_path: str = READY_PATH,
) -> float:
    """Seconds until GET `ready_path` (/health/ready) answered 200; a dead process or the deadline ends the wait."""
    start = time.monotonic()
    deadline = start + timeout_s
    last = "no answer yet"
    with httpx.Client(timeout=5.0, trust_env=False, verify=verified_tls()) as client:
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                where = f"; see {log_path}" if log_path else ""
                raise ServerProblem(
                    f"the server exited with code {process.returncode} before it was ready{where}",
                    exit_code=process.returncode,
                )
            try:
                response = client.get(url.rstrip("/") + ready_path)
                if response.status_code == 200:
                    return time.monotonic() - start
                last = f"HTTP {response.status_code}"
            except httpx.HTTPError as error:
                last = type(error).__name__
            time.sleep(interval_s)
    raise ServerProblem(
        f"the server at {url} was not ready within {timeout_s:g} s (last answer: {last}); "
        "raise the startup timeout or read the server log"
    )


class ServerProcess:
    """Context manager: start argv, wait for readiness, stop the whole group on exit."""

    def __init__(
        self,
        argv: list[str],
        *,
        url: str,
        log_path: Path,
        startup_timeout_s: float,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        ready_path: str = READY_PATH,
    ) -> None:
        self.argv, self.url, self.log_path = argv, url, log_path
        self.startup_timeout_s, self.env, self.cwd, self.ready_path = startup_timeout_s, env, cwd, ready_path
        self.process: subprocess.Popen[bytes] | None = None
        self.ready_after_s: float | None = None

    def __enter__(self) -> ServerProcess:
        log = open_for_writing(self.log_path)
        try:
            self.process = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=child_groups.child_environment(self.env),
                cwd=self.cwd,
                start_new_session=True,
            )
        except OSError as error:
            log.close()
            raise ServerProblem(f"could not start {self.argv[0]}: {error.strerror or error}") from None
        log.close()  # the child holds its own descriptor
        child_groups.register(self.process.pid)
        try:
            self.ready_after_s = wait_ready(
                self.url,
                timeout_s=self.startup_timeout_s,
                process=self.process,
                log_path=self.log_path,
                ready_path=self.ready_path,
            )
        except BaseException:
            self.stop()
            raise
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace_s: float = 10.0) -> None:
        if self.process is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=grace_s)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # anything the server left behind in its group
        child_groups.unregister(self.process.pid)

    def __exit__(self, *exc: object) -> None:
        self.stop()


def served_model(url: str, fallback: str, *, api_key: str | None = None) -> str:
    """The model id the server serves (trtmc-server serves its --model-name), when it lists exactly one."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=10.0, trust_env=False, verify=verified_tls()) as client:
            body = client.get(url.rstrip("/") + "/v1/models", headers=headers).content
    except httpx.HTTPError:
        return fallback
    listed = parse_server_json(body).value  # of any shape or depth, its text escaped: read, never raised
    models = listed.get("data") if isinstance(listed, dict) else None
    if not isinstance(models, list):
        return fallback
    ids = [m["id"] for m in models if isinstance(m, dict) and isinstance(m.get("id"), str)]
    return ids[0] if len(ids) == 1 else fallback
