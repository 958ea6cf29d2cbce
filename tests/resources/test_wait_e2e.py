"""Waiting end to end against FakeService: polling cost and latency, webhooks over loopback."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson
import pytest

from svc_async import Client, JobRequest, JobWaitTimeout, PollPolicy, VerificationJob
from svc_async.testing import FakeService, VirtualClock
from svc_async.webhooks import DEFAULT_PATH, WebhookReceiver

from ..conftest import serve_app

GET = "/api/public/v1/verification-job/{verificationJobId}"
SEARCH = "/api/public/v1/verification-job/search"
SECRET = "e2e-hook-secret"
DONE = {"Processed", "Completed"}
"""A successful finish: today's Processed, or Completed from a fake of the older vocabulary."""
QUICK = PollPolicy(wait_initial=0.02, wait_exp_base=1.5, wait_max=0.1, wait_jitter=0.1, timeout=5)


def request(audio: str = "https://files.example/routine.mp3", tags: Any = ()) -> JobRequest:
    return JobRequest(
        name="Routine",
        email="coach@team.example",
        organisation_id=1,
        audio_file_url=audio,
        start_date=dt.date(2025, 1, 1),
        end_date=dt.date(2025, 6, 1),
        required_territories=["GB"],
        tags=list(tags),
    )


# Processing, polls, webhook deliveries and timeouts on virtual time: the fake and the
# client share one VirtualClock on a loop whose time looptime makes virtual.
pytestmark = pytest.mark.looptime


def fake(delay: float, **kwargs: Any) -> FakeService:
    return FakeService(
        demo_data=False, processing_delay=delay, rate_limit=None, clock=VirtualClock(), **kwargs
    )


@asynccontextmanager
async def client(service: FakeService, **kwargs: Any) -> AsyncIterator[Client]:
    async with Client(
        "http://fake.invalid",
        token=FakeService.DEFAULT_TOKEN,
        transport=service.transport(),
        clock=service.clock.source,
        **kwargs,
    ) as svc:
        yield svc


@asynccontextmanager
async def hook_server(receiver: WebhookReceiver) -> AsyncIterator[str]:
    """The receiver on 127.0.0.1; yields its URL (without the secret)."""
    async with serve_app(receiver.app()) as base:
        yield base + DEFAULT_PATH


async def timed_wait(
    service: FakeService, svc: Client, job: VerificationJob, policy: PollPolicy
) -> tuple[VerificationJob, float]:
    """Wait for ``job``; returns the result and seconds from its finish to the return."""
    done = await svc.jobs.wait(job.id, policy=policy)
    return done, service.now() - service.state.jobs[job.id].finish_at


async def test_wait_over_real_sockets_returns_the_verdict() -> None:
    service = fake(0.3)
    async with (
        service.serve() as url,
        Client(url, token=FakeService.DEFAULT_TOKEN, clock=service.clock.source) as svc,
    ):
        job = await svc.jobs.create(request())
        seen: list[str] = []
        done = await svc.jobs.wait(job.id, policy=QUICK, on_status=lambda j: seen.append(j.status))
    assert done.status in DONE and done.recording is not None
    assert seen[0] == "Created" and seen[-1] == done.status
    assert service.count("GET", GET) <= 10


async def test_gets_stay_few_and_grow_slowly_with_processing_time() -> None:
    gets: dict[float, int] = {}
    for delay in (0.15, 0.6):
        service = fake(delay)
        async with client(service) as svc:
            job = await svc.jobs.create(request())
            done, late = await timed_wait(service, svc, job, QUICK)
        assert done.status in DONE
        assert 0 <= late <= QUICK.wait_max * (1 + QUICK.wait_jitter) + 0.05
        gets[delay] = service.count("GET", GET)
    assert gets[0.15] <= 8
    assert gets[0.6] <= gets[0.15] + 6  # 4x the time, a handful more reads


async def test_create_and_wait_on_the_fake() -> None:
    service = fake(0.1)
    async with client(service) as svc:
        done = await svc.jobs.create_and_wait(request(), policy=QUICK)
    assert done.status in DONE and service.count("POST", "/api/public/v1/verification-job")


async def test_errored_jobs_return_at_once() -> None:
    service = fake(30.0)
    async with client(service) as svc:
        job = await svc.jobs.create(request("https://files.example/corrupt.mp3"))
        service.finish_job(job.id, error="Unable to decode audio file")
        done = await svc.jobs.wait(job.id, policy=QUICK)
    assert done.status == "Errored" and done.failed and done.error_message
    assert service.count("GET", GET) == 1


async def test_timeout_raises_with_the_last_job() -> None:
    service = fake(60.0)
    async with client(service) as svc:
        job = await svc.jobs.create(request())
        try:
            await svc.jobs.wait(job.id, timeout=0.2, policy=QUICK)
        except JobWaitTimeout as exc:
            assert exc.job is not None and exc.job.id == job.id
            assert exc.job.status == "Created"
        else:
            raise AssertionError("no timeout")


async def test_webhook_delivery_wakes_wait_well_before_the_next_poll() -> None:
    receiver = WebhookReceiver(SECRET)
    slow = PollPolicy(wait_initial=3.0, wait_jitter=0, timeout=30)  # next poll would be 12 s away
    async with hook_server(receiver) as hook:
        service = fake(0.3, webhook_url=f"{hook}?key={SECRET}")
        async with service, client(service, webhooks=receiver) as svc:
            job = await svc.jobs.create(request())
            done, late = await timed_wait(service, svc, job, slow)
            await service.wait_webhooks()
    assert done.status in DONE
    assert late < 0.5
    assert service.count("GET", GET) == 2  # first read, then the confirmation
    assert receiver.stats.dispatched == 1
    assert [d.delivered for d in service.webhook_deliveries] == [True]


async def test_wrong_secret_is_refused_and_polling_still_finishes() -> None:
    receiver = WebhookReceiver(SECRET)
    dispatched: list[int] = []
    receiver.on_status_update(lambda u: dispatched.append(u.job_id))
    policy = PollPolicy(wait_initial=0.05, wait_max=0.1, wait_jitter=0, webhook_factor=2, timeout=5)
    async with hook_server(receiver) as hook:
        service = fake(0.1, webhook_url=f"{hook}?key=not-it", webhook_attempts=2)
        async with service, client(service, webhooks=receiver) as svc:
            job = await svc.jobs.create(request())
            done = await svc.jobs.wait(job.id, policy=policy)
            await service.wait_webhooks()
    assert done.status in DONE
    assert dispatched == []
    assert service.webhook_deliveries[0].attempts == [401, 401]
    assert receiver.stats.rejected == 2


async def test_fake_test_ping_and_duplicates_are_not_dispatched() -> None:
    receiver = WebhookReceiver(SECRET)
    seen: list[int] = []
    receiver.on_status_update(lambda u: seen.append(u.job_id))
    async with hook_server(receiver) as hook:
        service = fake(0.1, webhook_url=f"{hook}?key={SECRET}")
        async with service:
            ping = await service.send_test_webhook()
            assert ping.delivered
            async with aiohttp.ClientSession() as session:
                for _ in range(2):
                    body = orjson.dumps({"id": 77, "status": "Completed"})
                    async with session.post(hook, data=body, params={"key": SECRET}) as resp:
                        assert resp.status == 204
        await receiver.drain()
    assert seen == [77]
    assert receiver.stats.tests == 1 and receiver.stats.duplicates == 1


async def test_wait_many_over_fifty_jobs_is_far_cheaper_than_fifty_waits() -> None:
    service = fake(0.4)
    async with client(service) as svc:
        batch = [await svc.jobs.create(request(tags=["batch-many"])) for _ in range(50)]
        service.reset_counters()
        done = [job async for job in svc.jobs.wait_many([j.id for j in batch], policy=QUICK)]
        many = service.count("GET", GET) + service.count("POST", SEARCH)

        singles = [await svc.jobs.create(request(tags=["batch-single"])) for _ in range(50)]
        service.reset_counters()
        await asyncio.gather(*(svc.jobs.wait(j.id, policy=QUICK) for j in singles))
        separate = service.count("GET", GET) + service.count("POST", SEARCH)
    assert sorted(j.id for j in done) == sorted(j.id for j in batch)
    assert all(j.status in DONE for j in done)
    assert many * 10 < separate, (many, separate)


async def test_wait_many_with_webhooks_on_the_fake() -> None:
    receiver = WebhookReceiver(SECRET)
    slow = PollPolicy(wait_initial=2.0, wait_jitter=0, timeout=30)
    async with hook_server(receiver) as hook:
        service = fake(0.2, webhook_url=f"{hook}?key={SECRET}")
        async with service, client(service, webhooks=receiver) as svc:
            jobs = [await svc.jobs.create(request(tags=["hooked"])) for _ in range(5)]
            loop = asyncio.get_running_loop()
            start = loop.time()
            done = [j.id async for j in svc.jobs.wait_many([j.id for j in jobs], policy=slow)]
            elapsed = loop.time() - start
            await service.wait_webhooks()
    assert sorted(done) == [j.id for j in jobs]
    assert elapsed < 1.5
