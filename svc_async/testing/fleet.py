"""N client processes on one account's budget against a FakeService: a fleet, measured.

``run_fleet`` serves a FakeService with a small rate window on loopback, starts
``processes`` worker processes (``python -m svc_async.testing.fleet``), lets them all
import and connect, then starts them at once: each makes ``calls`` ``orgs.list`` calls,
``concurrency`` at a time, with or without a fleet URL. It reports the 429 answers the
fake sent, the calls that failed, and the wall time against the budget-bound ideal
(``(total calls / budget - 1) x window``: the first window opens with the first call).
Used by the fleet tests and ``benchmarks/bench_fleet.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from .. import Client
from .service import FakeService


async def _worker(url: str, fleet: str | None, calls: int, concurrency: int) -> None:
    async with Client(url, token=FakeService.DEFAULT_TOKEN, fleet=fleet or None) as svc:
        if fleet:
            from redis.asyncio import Redis

            probe = Redis.from_url(fleet)
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
                    failed += 1

        started = time.monotonic()
        await asyncio.gather(*(one() for _ in range(concurrency)))
        elapsed = time.monotonic() - started
    print(json.dumps({"ok": ok, "failed": failed, "elapsed": elapsed}), flush=True)


async def run_fleet(
    *,
    processes: int,
    calls: int,
    concurrency: int,
    budget: int,
    window: float,
    fleet: str | None,
) -> dict[str, Any]:
    """One run; the figures (see the module docstring)."""
    async with FakeService(seed=1, rate_limit=(budget, window)) as fake, fake.serve() as url:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        env.pop("SVC_FLEET_URL", None)
        args = [url, fleet or "", str(calls), str(concurrency)]
        workers = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "svc_async.testing.fleet",
                *args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=env,
            )
            for _ in range(processes)
        ]
        try:
            for worker in workers:
                assert worker.stdout is not None
                line = await asyncio.wait_for(worker.stdout.readline(), 120)
                if line.strip() != b"ready":
                    raise RuntimeError(f"a fleet worker did not start: {line!r}")
            fake.reset_counters()
            started = time.monotonic()
            for worker in workers:
                assert worker.stdin is not None
                worker.stdin.write(b"go\n")
                await worker.stdin.drain()
            reports = []
            for worker in workers:
                assert worker.stdout is not None
                line = await asyncio.wait_for(worker.stdout.readline(), 300)
                reports.append(json.loads(line))
            wall = time.monotonic() - started
        finally:
            for worker in workers:
                if worker.returncode is None:
                    if worker.stdin is not None:
                        worker.stdin.close()
                    try:
                        await asyncio.wait_for(worker.wait(), 10)
                    except TimeoutError:
                        worker.kill()
                        await worker.wait()
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
    _url, _fleet, _calls, _concurrency = sys.argv[1:5]
    asyncio.run(_worker(_url, _fleet or None, int(_calls), int(_concurrency)))
