"""A 429 or 503 with no usable wait never becomes a retry storm (a real loopback server).

Ten concurrent calls against a server that refuses every request send at most
``attempts`` requests each, whatever the ``Retry-After`` says: zero, negative, a date
in the past, garbage, a date the client's clock disagrees with. A wait beyond what the
policy sleeps through raises ``RateLimitError`` at once, however large it is.
"""

from __future__ import annotations

import asyncio
import collections
import email.utils
import itertools
import time
from typing import Any

import pytest
from aiohttp import web

from svc_async import (
    Client,
    MockTransport,
    RateLimitError,
    Request,
    Response,
    RetryBudget,
    RetryPolicy,
    ServerError,
    json_response,
)
from svc_async.testing import VirtualClock

from ..conftest import serve_app

CALLS = 10
POLICY = RetryPolicy(attempts=3, wait_initial=0.002, wait_max=0.01)


def _http_date(offset: float) -> str:
    return email.utils.formatdate(time.time() + offset, usegmt=True)


def _refusing_app(status: int, headers: dict[str, str]) -> tuple[web.Application, Any]:
    """An app answering every request with ``status`` and ``headers``; counts per path."""
    hits: collections.Counter[str] = collections.Counter()

    async def refuse(request: web.Request) -> web.Response:
        hits[request.path] += 1
        return web.json_response(
            {"statusCode": status, "message": "slow down"}, status=status, headers=headers
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", refuse)
    return app, hits


async def _ten_calls(url: str, **client: Any) -> list[BaseException | Any]:
    client.setdefault("retry", POLICY)
    client.setdefault("timeout", 5.0)
    async with Client(url, token="t", **client) as svc:
        return await asyncio.gather(
            *(svc.jobs.get(n) for n in range(1, CALLS + 1)), return_exceptions=True
        )


NO_USABLE_WAIT = {
    "zero": lambda: {"Retry-After": "0"},
    "negative": lambda: {"Retry-After": "-5"},
    "past date": lambda: {"Retry-After": _http_date(-3600)},
    "garbage": lambda: {"Retry-After": "soon"},
    "empty": lambda: {"Retry-After": ""},
    "nan": lambda: {"Retry-After": "nan"},
    # The server's clock runs an hour fast: its "now" is a date an hour ahead of ours.
    "server clock ahead, says now": lambda: {
        "Date": _http_date(3600),
        "Retry-After": _http_date(3600),
    },
    "reset zero": lambda: {"x-ratelimit-reset": "0", "x-ratelimit-remaining": "0"},
    "reset negative": lambda: {"x-ratelimit-reset": "-1", "x-ratelimit-remaining": "0"},
    "reset epoch in the past": lambda: {"x-ratelimit-reset": str(int(time.time()) - 60)},
}


@pytest.mark.looptime
@pytest.mark.parametrize("rate_limit", [False, True], ids=["unpaced", "paced"])
@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("headers", NO_USABLE_WAIT.values(), ids=NO_USABLE_WAIT.keys())
async def test_no_usable_wait_sends_at_most_attempts_per_call(
    headers: Any, status: int, rate_limit: bool
) -> None:
    # On virtual time: a pacer's hold or a backoff takes no real time, the count is the same.
    app, hits = _refusing_app(status, headers())
    async with serve_app(app) as url:
        results = await _ten_calls(url, rate_limit=rate_limit, clock=VirtualClock())
    expected = RateLimitError if status == 429 else ServerError
    assert all(isinstance(r, expected) for r in results), results
    assert len(hits) == CALLS
    assert max(hits.values()) <= POLICY.attempts, hits
    if not rate_limit:  # the pacer may end a call early; alone, each call uses every attempt
        assert set(hits.values()) == {POLICY.attempts}, hits


@pytest.mark.parametrize(
    "value",
    ["100", "172800", str(int(time.time()) + 172800)],
    ids=["100s", "2-days", "epoch-in-2-days"],  # stable ids: the epoch is read at collection
)
@pytest.mark.parametrize("header", ["Retry-After", "x-ratelimit-reset"])
async def test_a_wait_beyond_max_server_wait_raises_at_once_whatever_its_size(
    header: str, value: str
) -> None:
    app, hits = _refusing_app(429, {header: value})
    async with serve_app(app) as url:
        results = await _ten_calls(url, rate_limit=False)
    assert all(isinstance(r, RateLimitError) for r in results), results
    assert set(hits.values()) == {1}, hits
    waits = [r.retry_after for r in results if isinstance(r, RateLimitError)]
    assert None not in waits and len(waits) == CALLS
    # Each the server's wait (an epoch reset is read against the wall clock as each call
    # ends: calls spread over a loaded machine's second differ by that much).
    assert max(waits) - min(waits) <= 2.0, waits
    assert min(waits) > POLICY.max_server_wait


async def test_a_future_date_beyond_the_deadline_raises_with_its_wait() -> None:
    app, hits = _refusing_app(429, {"Retry-After": _http_date(30)})
    policy = RetryPolicy(attempts=3, wait_initial=0.002, wait_max=0.01)
    async with serve_app(app) as url:
        results = await _ten_calls(url, rate_limit=False, retry=policy)
    assert set(hits.values()) == {1}, hits
    for r in results:
        assert isinstance(r, RateLimitError)
        assert r.retry_after == pytest.approx(30, abs=2)


async def test_429_retries_spend_the_retry_budget() -> None:
    app, hits = _refusing_app(429, {"Retry-After": "0"})
    budget = RetryBudget(capacity=10, retry_cost=5, refill=1)
    async with serve_app(app) as url:
        async with Client(
            url, token="t", retry=POLICY, retry_budget=budget, rate_limit=False
        ) as svc:
            for n in range(1, 4):
                with pytest.raises(RateLimitError):
                    await svc.jobs.get(n)
    # 10 tokens pay for two retries in all: 3 calls give 3 + 2 requests, not 3 * 3.
    assert sum(hits.values()) == 5
    assert budget.tokens == 0


@pytest.mark.looptime
@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("value", ["0", "-5", "soon", "Thu, 01 Jan 1970 00:00:00 GMT"])
async def test_the_default_policy_spaces_refusals_from_a_floor_on_virtual_time(
    status: int, value: str
) -> None:
    # The default policy, on virtual time: every retry after a refusal naming no usable
    # wait comes at least half its backoff ceiling (0.25 s, 0.5 s, 1 s) after the last.
    clock = VirtualClock()
    sent: dict[str, list[float]] = collections.defaultdict(list)

    def refuse(request: Request) -> Response:
        sent[request.url.path].append(clock.now())
        return json_response(
            {"message": "slow down"}, status=status, headers={"Retry-After": value}
        )

    policy = RetryPolicy()
    async with Client(
        "https://v.example", token="t", transport=MockTransport(refuse), clock=clock
    ) as svc:
        results = await asyncio.gather(
            *(svc.jobs.get(n) for n in range(1, CALLS + 1)), return_exceptions=True
        )
    assert all(isinstance(r, RateLimitError if status == 429 else ServerError) for r in results)
    assert len(sent) == CALLS
    for times in sent.values():
        assert len(times) == policy.attempts
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        for attempt, gap in enumerate(gaps, start=1):
            ceiling = policy.ceiling(attempt)
            assert ceiling / 2 - 1e-6 <= gap <= ceiling + 0.1, (attempt, gaps)
