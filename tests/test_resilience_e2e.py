"""Resilience end to end: FakeService with faults, over a real loopback socket.

Tests whose point is time (pacing, stalls against per-attempt timeouts) run in process
on virtual time, where a loaded machine cannot stretch them; the rest are the proof
over real sockets and are marked ``slow``.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest

from svc_async import AiohttpTransport, Client, RetryBudget, RetryPolicy, Timeout
from svc_async.testing import FakeService, FaultConfig, VirtualClock

from .test_examples import example_request

TOKEN = FakeService.DEFAULT_TOKEN
QUICK = RetryPolicy(attempts=8, wait_initial=0.01, wait_max=0.05)


async def _bounded(calls: list[Callable[[], Awaitable[Any]]], limit: int) -> list[Any]:
    gate = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        async with gate:
            return await call()

    return await asyncio.gather(*(one(c) for c in calls))


def _key(entries: list[Any]) -> list[Any]:
    """What must match between reads (signed links are re-signed on every read)."""
    return [
        (
            e.id,
            e.name,
            e.fields,
            e.sound_recording and e.sound_recording.updated_at,
            e.sound_recording and [s.title for s in e.sound_recording.songs],
        )
        for e in entries
    ]


def _client_tasks() -> int:
    """Running tasks, less the in-process server's own connection handlers."""
    return sum(
        1
        for t in asyncio.all_tasks()
        if "aiohttp/web_" not in t.get_coro().cr_code.co_filename  # type: ignore[union-attr]
    )


def _request(i: int) -> Any:
    return attrs.evolve(example_request(), external_id=f"ext-{i}", tags=["bulk"])


@pytest.mark.looptime
async def test_1000_reads_through_faults_are_all_correct() -> None:
    clock = VirtualClock()
    async with FakeService(seed=7, rate_limit=None, clock=clock) as fake, fake.serve() as url:
        async with Client(
            url,
            token=TOKEN,
            retry=QUICK,
            timeout=30,
            retry_budget=RetryBudget(capacity=5000),
            clock=clock,
        ) as svc:
            events = await svc.events.list(limit=100)
            expected = {e.id: await svc.entries.for_event(e.id) for e in events}
            fake.faults = FaultConfig(
                error_5xx=0.10,
                reset=0.05,
                latency_spike=0.05,
                spike_seconds=0.05,
                burst_429=0.03,
                burst_retry_after=0.05,
                malformed_json=0.02,
            )
            ids = [events[i % len(events)].id for i in range(1000)]
            results = await _bounded([lambda i=i: svc.entries.for_event(i) for i in ids], 20)
        assert all(_key(r) == _key(expected[i]) for i, r in zip(ids, results, strict=True))
        assert fake.faults_injected > 150  # the faults really happened


@pytest.mark.slow
async def test_200_concurrent_creates_with_cut_off_answers_create_exactly_200_jobs() -> None:
    async with FakeService(seed=3, rate_limit=None, demo_data=True) as fake, fake.serve() as url:
        before = set(fake.jobs)
        fake.faults = FaultConfig(
            create_cut_off=0.10, paths=("/api/public/v1/verification-job",), methods=("POST",)
        )
        async with Client(url, token=TOKEN, retry=QUICK, timeout=30) as svc:
            jobs = await asyncio.gather(*(svc.jobs.create(_request(i)) for i in range(200)))
        created = {k: v for k, v in fake.jobs.items() if k not in before}
        assert len(created) == 200
        assert len({j.id for j in jobs}) == 200
        assert {j.id for j in jobs} == set(created)
        assert sorted(j.external_id or "" for j in jobs) == sorted(f"ext-{i}" for i in range(200))
        assert fake.faults_injected >= 10


@pytest.mark.looptime
async def test_1000_creates_through_mixed_faults_and_a_lagging_index() -> None:
    # On virtual time a 0.6 s stall always outlasts the 0.3 s attempt timeout and
    # nothing else does: on real time a loaded machine turned ordinary answers into
    # timeouts until a create's whole deadline went on searching.
    clock = VirtualClock()
    async with FakeService(seed=11, rate_limit=None, search_lag=0.1, clock=clock) as fake:
        before = set(fake.jobs)
        fake.faults = FaultConfig(
            create_cut_off=0.10,
            create_stall=0.05,
            stall_seconds=0.6,
            create_503_before=0.05,
            paths=("/api/public/v1/verification-job",),
            methods=("POST",),
        )
        policy = RetryPolicy(attempts=6, wait_initial=0.05, wait_max=0.4)
        async with Client(
            "http://fake.invalid",
            token=TOKEN,
            retry=policy,
            timeout=30,
            attempt_timeout=Timeout(total=0.3, connect=1),
            transport=fake.transport(),
            clock=clock,
        ) as svc:
            jobs = await _bounded(
                [lambda i=i: svc.jobs.create(_request(i)) for i in range(1000)], 50
            )
        created = {k: v for k, v in fake.jobs.items() if k not in before}
        per_external = Counter(v["externalId"] for v in created.values())
        assert len(created) == 1000, (
            f"duplicates: {[k for k, n in per_external.items() if n > 1][:5]}"
        )
        assert set(per_external.values()) == {1}
        assert {j.id for j in jobs} == set(created)
        assert fake.faults_injected > 100


@pytest.mark.looptime
async def test_bulk_read_beyond_the_budget_draws_no_429_and_uses_the_budget() -> None:
    budget, window, calls = 40, 1.0, 120
    clock = VirtualClock()
    async with FakeService(
        seed=1, rate_limit=(budget, window), demo_data=True, clock=clock
    ) as fake:
        async with Client(
            "http://fake.invalid",
            token=TOKEN,
            retry=RetryPolicy(attempts=1),
            transport=fake.transport(),
            clock=clock,
        ) as svc:
            start = clock.now()
            await _bounded([lambda: svc.seasons.list() for _ in range(calls)], 16)
            elapsed = clock.now() - start
        assert fake.rate_limited == 0
    ideal = (calls / budget - 1) * window  # the last window's calls need not wait for its end
    assert ideal <= elapsed <= ideal * 1.10 + 0.15, (
        f"{elapsed:.2f}s against an ideal of {ideal:.2f}s"
    )


@pytest.mark.slow
async def test_cancelling_half_of_2000_requests_leaks_nothing() -> None:
    async with FakeService(seed=2, rate_limit=None) as fake, fake.serve() as url:
        fake.faults = FaultConfig(latency=0.002)
        transport = AiohttpTransport(limit=10)
        async with Client(
            url, token=TOKEN, transport=transport, retry=RetryPolicy(attempts=1)
        ) as svc:
            await svc.jobs.get(1)
            baseline = _client_tasks()
            rng = random.Random(5)
            tasks = [asyncio.create_task(svc.jobs.get(1 + i % 4)) for i in range(2000)]
            victims = rng.sample(tasks, 1000)
            for victim in victims:
                await asyncio.sleep(rng.random() * 0.0008)  # spread over the run (about 0.4 s)
                victim.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            cancelled = sum(isinstance(r, asyncio.CancelledError) for r in results)
            assert 0 < cancelled <= 1000
            assert all(
                not isinstance(r, BaseException) or isinstance(r, asyncio.CancelledError)
                for r in results
            )
            await asyncio.sleep(0.05)
            connector = transport._session.connector if transport._session else None
            assert connector is not None
            assert len(connector._acquired) == 0  # type: ignore[attr-defined]
            after = await asyncio.gather(*(svc.jobs.get(1) for _ in range(200)))
            assert len(after) == 200
            assert _client_tasks() == baseline
        await transport.aclose()


@pytest.mark.looptime
@pytest.mark.parametrize("mode", ["loopback", "in-process"])
async def test_token_expiry_renews_through_api_key_login(mode: str) -> None:
    from svc_async import ApiKeyAuth

    clock = VirtualClock()  # the token's 0.2 s life and the 0.3 s pause: virtual
    async with FakeService(seed=0, token_ttl=0.2, clock=clock) as fake:
        key, secret = FakeService.DEFAULT_API_KEY
        if mode == "loopback":
            async with (
                fake.serve() as url,
                Client(url, auth=ApiKeyAuth(key, secret), clock=clock) as svc,
            ):
                await svc.seasons.list()
                await clock.sleep(0.3)
                results = await asyncio.gather(*(svc.seasons.list() for _ in range(20)))
        else:
            transport = fake.transport()
            async with Client(
                "http://fake.invalid",
                auth=ApiKeyAuth(key, secret),
                transport=transport,
                clock=clock,
            ) as svc:
                await svc.seasons.list()
                await clock.sleep(0.3)
                results = await asyncio.gather(*(svc.seasons.list() for _ in range(20)))
            await transport.aclose()
        assert len(results) == 20
        assert (
            fake.count("POST", "/api/auth/api-key/login")
            + fake.count("POST", "/api/auth/access-token/refresh")
            == 2
        )
