"""The fleet's store connection against a real redis-server: up, down, restarted."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
import redis.asyncio as aioredis

from svc_async.clock import SYSTEM_CLOCK
from svc_async.fleet.store import Store
from svc_async.retry import RetryPolicy
from svc_async.webhooks.core import Secrets
from svc_async.webhooks.delivery import Callbacks, ReceiverStats
from svc_async.webhooks.redis import RedisBackend
from svc_async.webhooks.waiters import Waiters
from svc_async.webhooks.wake import JobWake

from ..redis_server import RedisServer


async def test_the_test_server_is_a_real_redis(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        assert await client.ping() is True
        info = await client.info("server")
        assert int(str(info["redis_version"]).split(".")[0]) >= 6  # XAUTOCLAIM needs 6.2
    finally:
        await client.aclose()


def test_a_killed_server_restarts_on_its_port(redis_server: RedisServer) -> None:
    port = redis_server.port
    redis_server.stop()
    redis_server.start()
    assert redis_server.port == port and redis_server.process is not None


# redis-py can swallow a cancellation that races with a read's own timeout (a loaded
# machine makes the race likely): the read then waits on, and a close that awaited the
# cancelled task hung for ever. The listener and the stream reader are stubborn here.


async def _stubborn() -> None:
    with contextlib.suppress(asyncio.CancelledError):  # swallowed, as that read did
        await asyncio.sleep(3600)
    await asyncio.Event().wait()  # waits on; only a second cancellation ends it


@pytest.mark.looptime
async def test_closing_a_wake_listener_that_swallowed_its_cancellation_ends() -> None:
    store = Store("redis://127.0.0.1:9/0")  # never connected: only the close is at stake
    wake = JobWake(store, Waiters(), ["svc:{test}:jobs:status"])
    wake._task = asyncio.get_running_loop().create_task(_stubborn())
    await asyncio.sleep(0)
    bound = asyncio.timeout(30)  # virtual: a hang would end here at once, cancelled
    async with bound:
        await wake.aclose()
    assert not bound.expired()
    await store.aclose()


@pytest.mark.looptime
async def test_closing_a_stream_reader_that_swallowed_its_cancellation_ends() -> None:
    callbacks = Callbacks(ReceiverStats(), RetryPolicy())
    callbacks.status.append(_never)
    deliveries = RedisBackend(
        "redis://127.0.0.1:9/0",
        callbacks,
        Waiters(),
        secrets=Secrets("s"),
        account=None,
        clock=SYSTEM_CLOCK,
    )
    reader = asyncio.get_running_loop().create_task(_stubborn())
    deliveries._readers["ns"] = reader
    await asyncio.sleep(0)
    bound = asyncio.timeout(30)
    async with bound:
        await deliveries.aclose()
    assert not bound.expired()


def _never(*args: object) -> Any:
    raise AssertionError("not called")


async def test_a_late_failure_from_before_a_recovery_opens_no_second_outage(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from redis.exceptions import ConnectionError as RedisConnectionError

    caplog.set_level(logging.INFO, "svc_async.fleet")
    store = Store("redis://127.0.0.1:9/0", retry_every=0.01)  # the commands never use it
    release = asyncio.Event()

    async def straggler(_: Any) -> None:
        await release.wait()  # started while the store was up, fails after it came back
        raise RedisConnectionError("connection from before the restart")

    async def fail(_: Any) -> None:
        raise RedisConnectionError("down")

    async def ok(_: Any) -> str:
        return "ok"

    late = asyncio.create_task(store.run(straggler))
    await asyncio.sleep(0)
    assert await store.run(fail) is None and not store.up  # the outage: one WARNING
    await asyncio.sleep(0.02)
    assert await store.run(ok) == "ok" and store.up  # back: one INFO
    release.set()
    assert await late is None
    assert store.up and store.outages == 1  # the straggler opened no second outage
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO"]
    await store.aclose()
