"""Worker processes on one account's budget, against the FakeService: with and without a fleet.

Real processes and a real redis-server on real time (the budget is a window of 1 s on the
store's and the fake's clocks; the fake's reset header is whole seconds, as the service's):
3 processes on 15 calls per second, 30 calls 6 at a time each with a fleet, 18 calls 4 at
a time each without: two windows either way, and the budget runs out with more calls
waiting than it allows. The full 8 x 30 figures are ``benchmarks/bench_fleet.py``'s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from svc_async.testing.fleet import FleetWorkers, run_fleet

# One module loop: both tests run on the same three worker processes (one start-up).
pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

SHAPE = {"processes": 3, "calls": 6, "concurrency": 4, "budget": 15, "window": 1.0}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def workers() -> AsyncIterator[FleetWorkers]:
    async with FleetWorkers(SHAPE["processes"]) as started:
        yield started


async def test_a_fleet_spends_the_budget_exactly(redis_url: str, workers: FleetWorkers) -> None:
    shape = {**SHAPE, "calls": 10, "concurrency": 6}  # 18 in flight, 15 allowed
    result = await run_fleet(**shape, fleet=redis_url, workers=workers)
    assert (result["failed"], result["answers_429"], result["ok"]) == (0, 0, 30), result
    # Ideal: 1 s (the second window opens 1 s after the first call). A window end costs
    # the 50 ms margin and a round trip; a window lost to over-caution would cost 1 s.
    assert result["wall_s"] <= result["ideal_s"] + 0.5, result


async def test_processes_without_a_fleet_fail_no_call(workers: FleetWorkers) -> None:
    # Each process paces alone from the headers (no shared memory): 18 calls, two windows;
    # every call succeeds; the few 429s are calls sent before the others' spending showed
    # in an answer (0 to 4 here, also on a loaded machine). The pacer's sharing rules
    # are held to fewer than 5 % on virtual time (test_pipeline_faults.py).
    result = await run_fleet(**SHAPE, fleet=None, workers=workers)
    assert (result["failed"], result["ok"]) == (0, 18), result
    assert result["answers_429"] <= 6, result
