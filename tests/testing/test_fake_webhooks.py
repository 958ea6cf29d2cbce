"""FakeService webhooks and real-time job processing over loopback sockets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from svc_async.testing import FakeClock, FakeService

from .test_fake_service import JOB, START, TOKEN, call, job_request


@asynccontextmanager
async def receiver(fail_first: int = 0) -> AsyncIterator[tuple[str, list[Any]]]:
    """A webhook receiver on 127.0.0.1 that answers 500 to its first ``fail_first`` posts."""
    received: list[Any] = []
    attempts = 0

    async def handle(request: web.Request) -> web.Response:
        nonlocal attempts
        attempts += 1
        if attempts <= fail_first:
            return web.Response(status=500)
        received.append({"query": dict(request.query), "body": await request.json()})
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/hook?key=s3cret", received
    finally:
        await runner.cleanup()


async def test_real_time_processing_and_webhook_when_served() -> None:
    async with receiver() as (hook, received):
        fake = FakeService(processing_delay=0.2, webhook_url=hook)
        async with fake.serve() as url, aiohttp.ClientSession() as session:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with session.post(url + JOB, json=job_request(), headers=headers) as resp:
                job_id = (await resp.json())["id"]
            for _ in range(50):
                if received:
                    break
                await asyncio.sleep(0.02)
            assert received == [
                {"query": {"key": "s3cret"}, "body": {"id": job_id, "status": "Processed"}}
            ]
            async with session.get(f"{url}{JOB}/{job_id}", headers=headers) as resp:
                assert (await resp.json())["status"] == "Processed"
        assert fake.webhook_deliveries[0].delivered
        assert fake.webhook_deliveries[0].job_id == job_id


async def test_webhook_retries_then_succeeds_and_errored_jobs_notify() -> None:
    async with receiver(fail_first=2) as (hook, received):
        async with FakeService(clock=FakeClock(start=START), processing_delay=1.0) as fake:
            fake.webhook_url = hook
            _, _, ok = await call(fake, "POST", JOB, job_request())
            corrupt = job_request(audioFileURL="https://x/corrupt.mp3")
            _, _, bad = await call(fake, "POST", JOB, corrupt)
            fake.advance(0.5)  # the undecodable job errors half-way through
            await fake.wait_webhooks(timeout=5)
            assert [d.job_id for d in fake.webhook_deliveries] == [bad["id"]]
            assert fake.webhook_deliveries[0].attempts == [500, 500, 204]
            fake.advance(0.5)
            await fake.wait_webhooks(timeout=5)
            assert [d.job_id for d in fake.webhook_deliveries] == [bad["id"], ok["id"]]
            assert fake.webhook_deliveries[1].attempts == [204]
            assert all(d.delivered for d in fake.webhook_deliveries)
        bodies = [(r["body"]["id"], r["body"]["status"]) for r in received]
        assert bodies == [(bad["id"], "Errored"), (ok["id"], "Processed")]


async def test_webhook_gives_up_after_the_attempts() -> None:
    fake = FakeService(
        clock=FakeClock(start=START),
        webhook_url="http://127.0.0.1:9/hook",
        webhook_attempts=3,
        webhook_backoff=0.01,
        demo_data=False,
    )
    delivery = await fake.send_test_webhook()
    assert not delivery.delivered and len(delivery.attempts) == 3
    assert all(isinstance(a, str) for a in delivery.attempts)
    await fake.aclose()


async def test_send_test_webhook() -> None:
    async with receiver() as (hook, received):
        async with FakeService(demo_data=False, webhook_url=hook) as fake:
            delivery = await fake.send_test_webhook()
        assert delivery.delivered and delivery.attempts == [204]
        assert received[0]["body"] == {"id": 0, "status": "Processed", "isTest": True}


@pytest.mark.parametrize("fail_first", [0, 1])
async def test_a_submission_right_after_processing_arrives_after_processed(
    fail_first: int,
) -> None:
    # The API shows Processed from the moment it falls due; the watcher announces it when
    # it next runs. A submit in between (no await: the watcher has not run) must still
    # be delivered after Processed, even when Processed needs a retry.
    async with receiver(fail_first=fail_first) as (hook, received):
        async with FakeService(clock=FakeClock(start=START), processing_delay=1.0) as fake:
            fake.webhook_url = hook
            _, _, job = await call(fake, "POST", JOB, job_request())
            fake.advance(1.0)
            fake.submit(job["id"])
            await fake.wait_webhooks(timeout=5)
    assert [(r["body"]["id"], r["body"]["status"]) for r in received] == [
        (job["id"], "Processed"),
        (job["id"], "Submitted"),
    ]
    assert [d.status for d in fake.webhook_deliveries] == ["Processed", "Submitted"]
