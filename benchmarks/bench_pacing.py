"""Budget use under pacing: 3x a window's budget against FakeService with a small window.

FakeService on 127.0.0.1 grants ``BUDGET`` calls per ``WINDOW`` seconds per token (a
fixed window opened by the first call after the previous one ended, as its handlers
implement it) and answers 429 beyond. The SDK client, pacing on (the default), makes
``3 x BUDGET`` ``jobs.get`` calls at concurrency 16. Reported:

* calls per window achieved / allowed, over the windows that ran full length (from the
  arrival times the fake recorded, replaying its windowing);
* total time / ideal time, ideal = (calls / budget - 1) x window: the first window
  starts at the first call, so a perfect client needs two full windows for 3x the budget;
* the number of 429s the fake sent (must be 0).

    python benchmarks/bench_pacing.py [--quick]
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import _harness as h

from svc_async import Client
from svc_async.testing import FakeService

CONCURRENCY = 16
MULTIPLE = 3


def windows(times: list[float], window: float) -> list[int]:
    """Calls per server window, replaying the fake's fixed-window rule on arrival times."""
    counts: list[int] = []
    start = None
    for t in sorted(times):
        if start is None or t >= start + window:
            start = t
            counts.append(0)
        counts[-1] += 1
    return counts


async def run(budget: int, window: float) -> dict[str, Any]:
    """One paced fetch of ``MULTIPLE x budget`` calls; the figures of that run."""
    calls = MULTIPLE * budget
    async with (
        FakeService(seed=1, rate_limit=(budget, window)) as fake,
        fake.serve() as url,
        Client(url, token=FakeService.DEFAULT_TOKEN) as svc,
    ):
        job_id = next(iter(fake.jobs))
        fake.reset_counters()
        left = calls

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await svc.jobs.get(job_id)

        start = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(CONCURRENCY))), 60)
        elapsed = time.monotonic() - start
        arrivals = [r.time for r in fake.requests if r.route and "verification-job" in r.route]
        per_window = windows(arrivals, window)
        rate_limited = fake.rate_limited
    full = per_window[:-1] or per_window
    ideal = (calls / budget - 1) * window
    return {
        "budget": budget,
        "window_s": window,
        "calls": calls,
        "concurrency": CONCURRENCY,
        "requests_received": len(arrivals),
        "calls_per_window": per_window,
        "window_use": round(sum(full) / len(full) / budget, 3),
        "time_s": round(elapsed, 3),
        "ideal_s": ideal,
        "time_vs_ideal": h.ratio(elapsed, ideal),
        "rate_limited_429": rate_limited,
    }


def main() -> None:
    """Run once, write results/pacing.json."""
    budget, window = (30, 1.0) if h.is_quick() else (100, 2.0)
    result = asyncio.run(run(budget, window))
    summary = [
        h.figure("calls per full window / budget", result["window_use"], target="1.0"),
        h.figure("total time / ideal time", result["time_vs_ideal"], target="close to 1"),
        h.figure(
            "429 responses",
            result["rate_limited_429"],
            unit="count",
            target="0",
            met=result["rate_limited_429"] == 0,
        ),
    ]
    h.write_result("pacing", {**result, "summary": summary})
    print(f"calls per window: {result['calls_per_window']}")


if __name__ == "__main__":
    main()
