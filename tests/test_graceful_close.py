"""``aclose(grace=...)``: work under way finishes within the grace, new work is refused.

Every wait here is on the loop's time, made virtual (looptime): a handler's sleep, a
poll's pause and the grace itself take no real time, in the order real time would give.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from svc_async import Client, ClientClosedError, MockTransport, PollPolicy, Request, Response
from svc_async import json_response as json_answer

pytestmark = pytest.mark.looptime

API = "https://v.example"
POLL = PollPolicy(wait_initial=1.0, wait_exp_base=1.0, wait_max=1.0, wait_jitter=0.0, timeout=60)


class Service:
    """Seasons answered after ``delay`` seconds; job 7 finished ``job_after`` seconds in;
    event entries after ``delay`` each. Every request is counted by path."""

    def __init__(self, delay: float = 3.0, job_after: float = 10.0) -> None:
        self.loop = asyncio.get_running_loop()
        self.start = self.loop.time()
        self.delay = delay
        self.job_after = job_after
        self.paths: list[str] = []

    async def __call__(self, request: Request) -> Response:
        path = request.url.path
        self.paths.append(path)
        if path.endswith("/verification-job/7"):
            done = self.loop.time() - self.start >= self.job_after
            return json_answer(_job(7, "Processed" if done else "Matching"))
        await asyncio.sleep(self.delay)
        if path.endswith("/entries"):
            return json_answer([])
        return json_answer([SEASON])


SEASON = {
    "id": 1,
    "title": "Spring",
    "organisationId": 1,
    "startDate": "2026-03-01T00:00:00Z",
    "endDate": "2026-06-01T00:00:00Z",
}


def _job(job_id: int, status: str) -> dict[str, Any]:
    return {"id": job_id, "organisationId": 1, "status": status, "errorMessage": "", "tags": []}


def _client(service: Service) -> Client:
    return Client(API, token="t", transport=MockTransport(service), rate_limit=False)


async def _started(service: Service, count: int = 1) -> None:
    while len(service.paths) < count:  # noqa: ASYNC110 (virtual time: a tick, not a poll)
        await asyncio.sleep(0)


async def test_a_call_in_flight_finishes_within_the_grace() -> None:
    service = Service(delay=3.0)
    svc = _client(service)
    call = asyncio.create_task(svc.seasons.list())
    await _started(service)
    begun = service.loop.time()
    await svc.aclose(grace=10)
    assert [s.title for s in await call] == ["Spring"]
    # The close waited for the call (3 s), not for the whole grace.
    assert service.loop.time() - begun == pytest.approx(3.0, abs=0.01)
    assert svc.closed and svc.transport.closed  # type: ignore[attr-defined]


async def test_a_call_started_during_the_grace_is_refused_at_once() -> None:
    service = Service(delay=3.0)
    svc = _client(service)
    first = asyncio.create_task(svc.seasons.list())
    await _started(service)
    closing = asyncio.create_task(svc.aclose(grace=10))
    await asyncio.sleep(1)  # the close is draining now
    assert svc.closed
    refused_at = service.loop.time()
    with pytest.raises(ClientClosedError, match="closed"):
        await svc.seasons.list()
    assert service.loop.time() == refused_at  # at once, nothing sent
    with pytest.raises(ClientClosedError):
        await svc.jobs.wait(7, policy=POLL)  # a new wait too
    assert service.paths == ["/api/public/v1/season"]
    await closing
    assert await first


async def test_what_outlasts_the_grace_ends_as_without_one() -> None:
    service = Service(delay=30.0)
    svc = _client(service)
    call = asyncio.create_task(svc.seasons.list())
    await _started(service)
    begun = service.loop.time()
    await svc.aclose(grace=5)
    assert service.loop.time() - begun == pytest.approx(5.0, abs=0.01)
    with pytest.raises(ClientClosedError, match="cancelled because the client was closed"):
        await call


async def test_a_wait_in_flight_polls_on_until_its_verdict() -> None:
    service = Service(job_after=10.0)
    svc = _client(service)
    wait = asyncio.create_task(svc.jobs.wait(7, policy=POLL))
    await _started(service)  # the first poll answered: the wait is between polls now
    await asyncio.sleep(0.5)
    polls_before = len(service.paths)
    await svc.aclose(grace=30)
    job = await wait
    assert job.status == "Processed"
    assert len(service.paths) > polls_before + 5  # it polled on during the grace
    assert service.loop.time() - service.start == pytest.approx(10.0, abs=1.01)


async def test_a_wait_slower_than_the_grace_ends_with_client_closed() -> None:
    service = Service(job_after=1000.0)
    svc = _client(service)
    wait = asyncio.create_task(svc.jobs.wait(7, policy=POLL))
    await _started(service)
    await svc.aclose(grace=5)
    with pytest.raises(ClientClosedError, match="wait for job 7"):
        await wait


async def test_a_bulk_fetch_begun_before_fetches_every_event_in_the_grace() -> None:
    service = Service(delay=2.0)
    svc = _client(service)
    seen: list[int] = []

    async def consume() -> None:
        async with contextlib.aclosing(svc.entries.for_events(range(1, 7), concurrency=2)) as it:
            async for batch in it:
                assert batch.ok
                seen.append(batch.event_id)

    task = asyncio.create_task(consume())
    await _started(service)
    await svc.aclose(grace=60)
    await task
    # Six events, two at a time, 2 s each: the workers' later calls went through.
    assert sorted(seen) == [1, 2, 3, 4, 5, 6]
    assert service.loop.time() - service.start == pytest.approx(6.0, abs=0.01)


async def test_the_callers_own_cancellation_during_the_grace_stays_a_cancellation() -> None:
    service = Service(delay=30.0)
    svc = _client(service)
    call = asyncio.create_task(svc.seasons.list())
    await _started(service)
    closing = asyncio.create_task(svc.aclose(grace=10))
    await asyncio.sleep(1)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await closing
    assert service.loop.time() - service.start == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize(
    ("grace", "error"),
    [(-1, ValueError), (float("inf"), ValueError), ("5", TypeError), (True, TypeError)],
)
async def test_a_bad_grace_is_refused_before_anything_closes(grace: Any, error: type) -> None:
    svc = _client(Service())
    with pytest.raises(error, match="grace"):
        await svc.aclose(grace=grace)
    assert not svc.closed
    await svc.aclose()
