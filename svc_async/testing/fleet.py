"""N client processes on one account's budget against a FakeService: a fleet, measured.

``run_fleet`` serves a FakeService with a small rate window on loopback, gives each of
``processes`` worker processes (``python -m svc_async.testing.fleet``) its run, lets them
all import and connect, then starts them at once: each makes ``calls`` ``orgs.list``
calls, ``concurrency`` at a time, with or without a fleet URL. It reports the 429 answers
the fake sent, the calls that failed, and the wall time against the budget-bound ideal
(``(total calls / budget - 1) x window``: the first window opens with the first call).
``FleetWorkers`` keeps the processes for several runs (one interpreter start-up each).
Used by the fleet tests and ``benchmarks/bench_fleet.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import time
from types import TracebackType
from typing import Any, Self

from .. import Client
from .service import FakeService

logger = logging.getLogger(__name__)


async def run_worker(url: str, fleet: str | None, calls: int, concurrency: int) -> None:
    """One worker's run: connect, print ``ready``, wait for a line on stdin, make ``calls``
    ``orgs.list`` calls ``concurrency`` at a time, print ``{"ok", "failed", "elapsed"}``.
    A failed call is logged (its traceback on stderr where logging is not set up)."""
    async with Client(url, token=FakeService.DEFAULT_TOKEN, fleet=fleet or None) as svc:
        if fleet:
            from ..fleet.connect import redis_client

            probe = redis_client(fleet, timeout=5.0)
            await probe.ping()  # connected before the start, like a warm process
            await probe.aclose()
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        left = calls
        ok = failed = 0

        async def one() -> None:
            nonlocal left, ok, failed
            while left > 0:
                left -= 1
                try:
                    await svc.orgs.list()
                    ok += 1
                except Exception:  # counted: a failed call is the figure
                    logger.exception("call failed")
                    failed += 1

        started = time.monotonic()
        await asyncio.gather(*(one() for _ in range(concurrency)))
        elapsed = time.monotonic() - started
    print(json.dumps({"ok": ok, "failed": failed, "elapsed": elapsed}), flush=True)


async def _serve() -> None:
    """Run the runs given on stdin (one JSON line each, then ``go``) until it closes."""
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        run = json.loads(line)
        await run_worker(run["url"], run["fleet"], run["calls"], run["concurrency"])


class FleetWorkers:
    """``count`` worker processes for one or more ``run_fleet`` runs (``async with``)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._procs: list[asyncio.subprocess.Process] = []

    async def __aenter__(self) -> Self:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        env.pop("SVC_FLEET_URL", None)
        try:
            for _ in range(self.count):
                self._procs.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        "-m",
                        "svc_async.testing.fleet",
                        stdin=asyncio.subprocess.PIPE,
                        stdout=asyncio.subprocess.PIPE,
                        env=env,
                    )
                )
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _tell(self, line: bytes) -> None:
        for proc in self._procs:
            assert proc.stdin is not None
            proc.stdin.write(line)
            await proc.stdin.drain()

    async def _lines(self, timeout: float) -> list[bytes]:
        lines = []
        for proc in self._procs:
            assert proc.stdout is not None
            lines.append(await asyncio.wait_for(proc.stdout.readline(), timeout))
        return lines

    async def prepare(self, url: str, fleet: str | None, calls: int, concurrency: int) -> None:
        """Give every worker its run; return once each has connected and waits to start."""
        run = {"url": url, "fleet": fleet or "", "calls": calls, "concurrency": concurrency}
        await self._tell(json.dumps(run).encode() + b"\n")
        for line in await self._lines(120):
            if line.strip() != b"ready":
                raise RuntimeError(f"a fleet worker did not start: {line!r}")

    async def go(self) -> list[dict[str, Any]]:
        """Start every worker's run at once; their reports."""
        await self._tell(b"go\n")
        return [json.loads(line) for line in await self._lines(300)]

    async def aclose(self) -> None:
        """Close the workers' input (they exit); kill any that does not within 10 s."""
        for proc in self._procs:
            if proc.returncode is None:
                if proc.stdin is not None:
                    proc.stdin.close()
                try:
                    await asyncio.wait_for(proc.wait(), 10)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
        self._procs = []


async def run_fleet(
    *,
    processes: int,
    calls: int,
    concurrency: int,
    budget: int,
    window: float,
    fleet: str | None,
    workers: FleetWorkers | None = None,
) -> dict[str, Any]:
    """One run (on ``workers`` if given, else on processes of its own); the figures (see
    the module docstring)."""
    if workers is not None and workers.count != processes:
        raise ValueError(f"{processes} processes asked for, {workers.count} workers given")
    async with (
        FakeService(seed=1, rate_limit=(budget, window)) as fake,
        fake.serve() as url,
        contextlib.AsyncExitStack() as stack,
    ):
        if workers is None:
            workers = await stack.enter_async_context(FleetWorkers(processes))
        await workers.prepare(url, fleet, calls, concurrency)
        fake.reset_counters()
        started = time.monotonic()
        reports = await workers.go()
        wall = time.monotonic() - started
        total = processes * calls
        ideal = (total / budget - 1) * window
        return {
            "processes": processes,
            "calls_per_process": calls,
            "concurrency": concurrency,
            "budget": budget,
            "window_s": window,
            "fleet": bool(fleet),
            "calls": total,
            "ok": sum(r["ok"] for r in reports),
            "failed": sum(r["failed"] for r in reports),
            "answers_429": fake.rate_limited,
            "wall_s": round(wall, 3),
            "ideal_s": ideal,
            "wall_vs_ideal": round(wall / ideal, 3) if ideal > 0 else None,
        }


if __name__ == "__main__":
    asyncio.run(_serve())
