"""What the loopback guard costs per request. Goal: at most 0.5 ms median, paired against the same server directly.

    .venv/bin/python bench/bench_guard.py [--pairs 400] [--quick]

The reference endpoint runs as its own process, and so does the guard (serving/forward_proxy.py, as a run starts it
for a server it did not start), the way a `qualify --endpoint` run has them: AIPerf, the guard and the server each
in a process of their own. This process is the client: aiohttp, AIPerf's HTTP client, one keep-alive connection to
the server and one to the guard. Each pair is one `GET /v1/models` straight to the server and one through the
guard, in alternating order; the figure is the median of the pairs' differences (through the guard minus direct),
after 20 pairs of warm-up. Both medians are printed beside it. --quick (a few seconds, for CI): 100 pairs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from trtmc_videoqa.reference import ReferenceConfig, argv_for_subprocess
from trtmc_videoqa.serving.process import ServerProcess, free_loopback_port

GOAL_MS = 0.5
WARMUP_PAIRS = 20
ROUTE = "/v1/models"


def serve_guard(upstream: str) -> None:
    """The guard's own process: its URL on stdout, then it forwards until stdin closes."""
    from trtmc_videoqa.serving.forward_proxy import ForwardProxy

    with ForwardProxy(upstream, max_response_bytes=16 << 20, deadline_s=60) as guard:
        print(guard.url, flush=True)
        sys.stdin.read()


async def timed_get(session: aiohttp.ClientSession, url: str) -> float:
    started = time.perf_counter()
    async with session.get(url + ROUTE) as answer:
        await answer.read()
        if answer.status != 200:
            raise SystemExit(f"{url}{ROUTE} answered HTTP {answer.status}")
    return (time.perf_counter() - started) * 1000


async def pairs(direct: str, guarded: str, count: int) -> list[tuple[float, float]]:
    """(direct ms, through the guard ms) for `count` pairs after the warm-up, each side on its own connection."""
    found = []
    one = aiohttp.TCPConnector(limit=1)
    other = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(connector=one) as plain, aiohttp.ClientSession(connector=other) as through:
        for index in range(WARMUP_PAIRS + count):
            if index % 2:
                guard_ms = await timed_get(through, guarded)
                direct_ms = await timed_get(plain, direct)
            else:
                direct_ms = await timed_get(plain, direct)
                guard_ms = await timed_get(through, guarded)
            if index >= WARMUP_PAIRS:
                found.append((direct_ms, guard_ms))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="100 pairs; a few seconds (CI)")
    parser.add_argument("--guard-for", help=argparse.SUPPRESS)  # the guard's own process
    args = parser.parse_args()
    if args.guard_for:
        serve_guard(args.guard_for)
        return
    count = 100 if args.quick else args.pairs
    with tempfile.TemporaryDirectory(prefix="trtmc-videoqa-guard-") as scratch:
        port = free_loopback_port()
        url = f"http://127.0.0.1:{port}"
        config = ReferenceConfig(port=port)
        log = Path(scratch) / "server.log"
        with ServerProcess(argv_for_subprocess(config), url=url, log_path=log, startup_timeout_s=60):
            guard = subprocess.Popen(
                [sys.executable, __file__, "--guard-for", url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            try:
                guarded = guard.stdout.readline().strip() if guard.stdout else ""
                if not guarded.startswith("http://127.0.0.1:"):
                    raise SystemExit("the guard's process did not start")
                measured = asyncio.run(pairs(url, guarded, count))
            finally:
                if guard.stdin:
                    guard.stdin.close()
                guard.wait(timeout=30)
    direct = statistics.median(ms for ms, _ in measured)
    through = statistics.median(ms for _, ms in measured)
    cost = statistics.median(guard_ms - direct_ms for direct_ms, guard_ms in measured)
    print(f"GET {ROUTE}, {count} pairs: direct median {direct:.3f} ms, through the guard {through:.3f} ms")
    meets = "meets" if cost <= GOAL_MS else "misses"
    print(f"guard cost: {cost:.3f} ms median per request ({meets} the goal of at most {GOAL_MS} ms)")


if __name__ == "__main__":
    main()
