"""The fleet's shared rate budget against a real redis-server and the FakeService."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys

import pytest
import redis.asyncio as aioredis
from multidict import CIMultiDict, CIMultiDictProxy

from svc_async import Client, RateLimitError
from svc_async.clock import SYSTEM_CLOCK
from svc_async.errors import PacingExceedsDeadline
from svc_async.fleet.budget import FleetPacer
from svc_async.fleet.store import Store
from svc_async.testing import FakeService

from ..redis_server import RedisServer

TOKEN = FakeService.DEFAULT_TOKEN


def _headers(limit: int, remaining: int, reset: float | None) -> CIMultiDictProxy[str]:
    values = {"x-ratelimit-limit": str(limit), "x-ratelimit-remaining": str(remaining)}
    if reset is not None:
        values["x-ratelimit-reset"] = str(reset)
    return CIMultiDictProxy(CIMultiDict(values))


async def _state(url: str) -> dict[str, str]:
    redis = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        keys = await redis.keys("svc:*:budget")
        assert len(keys) == 1
        return dict(await redis.hgetall(keys[0]))
    finally:
        await redis.aclose()


def _pacer(url: str, namespace: str = "test") -> FleetPacer:
    return FleetPacer(Store(url), namespace)


async def _grant(pacer: FleetPacer) -> None:
    await pacer.acquire(deadline=SYSTEM_CLOCK.now() + 5.0)


async def test_one_grant_per_call_from_the_budget_and_then_a_wait(redis_url: str) -> None:
    first, second = _pacer(redis_url), _pacer(redis_url)  # two processes' pacers
    await _grant(first)  # nothing known: the first call learns the budget
    first.release(_headers(4, 3, 60), 200)
    await first.flush()
    for pacer in (first, second, first):
        await _grant(pacer)
    with pytest.raises(PacingExceedsDeadline) as info:  # all 4 spent, fleet-wide
        await second.acquire(deadline=SYSTEM_CLOCK.now() + 5.0)
    assert 59.0 < info.value.wait <= 60.1
    assert (await _state(redis_url))["rem"] == "0"
    for pacer in (first, second):
        await pacer.aclose()


async def test_answers_applied_out_of_order_never_raise_the_budget(redis_url: str) -> None:
    # The service answers 9, 8, ..., 0; the processes write the answers back in reverse.
    pacer = _pacer(redis_url)
    await _grant(pacer)
    pacer.release(_headers(10, 9, None), 200)
    await pacer.flush()
    tasks = [asyncio.create_task(_grant(pacer)) for _ in range(9)]
    await asyncio.gather(*tasks)
    for remaining in range(9):  # 0 first: the lowest answer comes back first
        pacer.release(_headers(10, remaining, None), 200)
        await pacer.flush()
        assert (await _state(redis_url))["rem"] == "0", remaining
    await pacer.aclose()


async def test_a_new_window_counts_answers_from_its_own_start(redis_url: str) -> None:
    pacer = _pacer(redis_url)
    await _grant(pacer)
    pacer.release(_headers(2, 1, 0.2), 200)
    await _grant(pacer)
    pacer.release(_headers(2, 0, 0.2), 200)
    await pacer.flush()
    await asyncio.sleep(0.35)  # the store's clock: the window of 0.2 s (+ margin) ends
    await _grant(pacer)  # A, the first call of the new window
    await _grant(pacer)  # B
    pacer.release(_headers(2, 0, 1.0), 200)  # B's answer is written first ...
    await pacer.flush()
    pacer.release(_headers(2, 1, 1.0), 200)  # ... then A's, an earlier answer: no reset
    await pacer.flush()
    assert (await _state(redis_url))["rem"] == "0"
    await pacer.aclose()


async def test_an_answer_above_what_was_granted_means_the_window_reset(redis_url: str) -> None:
    pacer = _pacer(redis_url)
    await _grant(pacer)
    pacer.release(_headers(5, 4, None), 200)  # no reset header: the end is unknown
    await pacer.flush()
    for _ in range(4):
        await _grant(pacer)
        pacer.release(_headers(5, 0, None), 200)
        await pacer.flush()
    # Spent, no end known, nothing in flight: one call goes to learn the window, and its
    # answer (above what the calls answered before it allow) shows the window reset.
    assert (await _state(redis_url))["rem"] == "0"
    await _grant(pacer)
    with pytest.raises(PacingExceedsDeadline):  # the others wait for its answer
        await pacer.acquire(deadline=SYSTEM_CLOCK.now() + 0.1)
    pacer.release(_headers(5, 4, None), 200)
    await pacer.flush()
    assert (await _state(redis_url))["rem"] == "4"
    await pacer.aclose()


async def _calls(clients: list[Client], per_worker: int, workers: int = 4) -> None:
    async def worker(svc: Client) -> None:
        for _ in range(per_worker):
            await svc.orgs.list()

    await asyncio.gather(*(worker(svc) for svc in clients for _ in range(workers)))


@pytest.mark.slow
async def test_clients_on_one_fleet_never_draw_a_429(redis_url: str) -> None:
    # Three clients (as three processes would), 5 workers each, all at once on 10 calls a
    # second: 15 calls, so 5 wait for the second window (the store's clock: real time).
    async with FakeService(seed=1, rate_limit=(10, 1.0)) as fake, fake.serve() as url:
        clients = [Client(url, token=TOKEN, fleet=redis_url) for _ in range(3)]
        await asyncio.wait_for(_calls(clients, per_worker=1, workers=5), 30)  # 15 calls
        for svc in clients:
            await svc.aclose()
        assert fake.rate_limited == 0
        assert sum(1 for r in fake.requests if r.status == 200) == 15


async def test_keys_are_namespaced_by_a_digest_and_hold_no_secret(redis_url: str) -> None:
    async with FakeService(seed=1) as fake, fake.serve() as url:
        async with Client(url, token=TOKEN, fleet=redis_url) as svc:
            await svc.orgs.list()
            await svc._shared.fleet.flush()
    redis = aioredis.Redis.from_url(redis_url)
    try:
        keys = await redis.keys("*")
        dump = b" ".join(keys)
        for key in keys:
            kind = await redis.type(key)
            if kind == b"hash":
                dump += b" ".join(b"%s=%s" % kv for kv in (await redis.hgetall(key)).items())
            elif kind == b"zset":
                dump += b" ".join(await redis.zrange(key, 0, -1))
    finally:
        await redis.aclose()
    # svc:{<24 hex digits>}:... : the braces keep an account's keys in one cluster slot
    assert keys and all(re.fullmatch(rb"svc:\{[0-9a-f]{24}\}:[a-z:]+", k) for k in keys), keys
    assert len(TOKEN) > 8 and TOKEN.encode() not in dump and url.encode() not in dump


async def test_a_store_that_is_down_paces_locally_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from ..redis_server import free_port

    caplog.set_level(logging.WARNING, "svc_async")
    fleet = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    async with FakeService(seed=1, rate_limit=(5, 60.0)) as fake, fake.serve() as url:
        async with Client(url, token=TOKEN, fleet=fleet) as svc:
            for _ in range(5):
                await svc.orgs.list()  # local pacing still counts the budget
            with pytest.raises(RateLimitError, match="beyond the call's deadline"):
                await svc.orgs.list(timeout=1.0)  # spent: held, not sent
        assert fake.rate_limited == 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "unavailable" in warnings[0].getMessage()


@pytest.mark.slow
def test_without_a_fleet_url_redis_is_never_imported() -> None:
    code = (
        "import sys, svc_async\n"
        "svc = svc_async.Client('http://127.0.0.1:9', token='t')\n"
        "assert svc._shared.fleet is None\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'redis'], 'redis'\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


def test_the_fleet_comes_from_svc_fleet_url_and_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SVC_FLEET_URL", "redis://127.0.0.1:1/0")
    svc = Client("http://127.0.0.1:9", token="t")
    assert isinstance(svc._shared.fleet, FleetPacer)
    assert "redis://127.0.0.1:1/0" in repr(svc._shared.fleet)
    with pytest.raises(ValueError, match="fleet must be a redis, rediss, unix"):
        Client("http://127.0.0.1:9", token="t", fleet="http://example.com")
    with pytest.raises(TypeError, match="Redis URL"):
        Client("http://127.0.0.1:9", token="t", fleet=6379)  # type: ignore[arg-type]


async def test_the_store_killed_and_restarted_mid_run(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "svc_async")
    async with FakeService(seed=1, rate_limit=(1000, 60.0)) as fake, fake.serve() as url:
        async with Client(url, token=TOKEN, fleet=redis_server.url) as svc:
            pacer = svc._shared.fleet
            pacer.store.retry_every = 0.05
            await svc.orgs.list()
            redis_server.stop()
            for _ in range(20):
                await svc.orgs.list()  # none fails; paced locally
            assert not pacer.store.up
            redis_server.start()
            await asyncio.sleep(0.1)
            for _ in range(5):
                await svc.orgs.list()
            await pacer.flush()
            assert pacer.store.up  # rejoined
        state = await _state(redis_server.url)
        assert state["limit"] == "1000"  # the restarted store learned the budget again
    levels = [(r.levelname, r.getMessage().split(" ")[-1]) for r in caplog.records]
    assert [lv for lv, _ in levels] == ["WARNING", "INFO"], levels


async def test_a_slow_store_is_waited_for_only_its_short_timeout(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    import signal

    caplog.set_level(logging.WARNING, "svc_async")
    async with FakeService(seed=1) as fake, fake.serve() as url:
        async with Client(url, token=TOKEN, fleet=redis_server.url) as svc:
            pacer = svc._shared.fleet
            await svc.orgs.list()
            assert redis_server.process is not None
            redis_server.process.send_signal(signal.SIGSTOP)  # the server stops answering
            try:
                loop = asyncio.get_running_loop()
                started = loop.time()
                for _ in range(3):
                    await svc.orgs.list()
                took = loop.time() - started
            finally:
                redis_server.process.send_signal(signal.SIGCONT)
            assert took < 2.5 and not pacer.store.up  # one timeout, then local pacing
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "TimeoutError" in warnings[0].getMessage()
