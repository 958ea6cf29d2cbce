"""Worker processes on one account's budget, against the FakeService: with and without a fleet.

Real time by nature (the budget is a window of 2 s on the store's and the fake's clocks):
8 processes x 15 calls on 30 calls per 2 s, 4 windows of work.
"""

from __future__ import annotations

import pytest

from svc_async.testing.fleet import run_fleet

pytestmark = pytest.mark.slow

SHAPE = {"processes": 8, "calls": 15, "concurrency": 4, "budget": 30, "window": 2.0}


async def test_a_fleet_spends_the_budget_exactly(redis_url: str) -> None:
    result = await run_fleet(**SHAPE, fleet=redis_url)
    assert (result["failed"], result["answers_429"], result["ok"]) == (0, 0, 120), result
    assert result["wall_vs_ideal"] <= 1.10, result


async def test_processes_without_a_fleet_rarely_draw_a_429() -> None:
    result = await run_fleet(**SHAPE, fleet=None)
    assert (result["failed"], result["ok"]) == (0, 120), result
    assert result["answers_429"] <= 0.05 * 120, result
