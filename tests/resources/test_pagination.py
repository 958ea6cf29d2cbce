"""Paging: events.iter (until a short page) and jobs.iter_search (count-driven, concurrent).

Unit tests run against a MockTransport search service whose job list can change between
pages; the end-to-end tests run against FakeService on loopback.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc_async import (
    Client,
    JobRequest,
    MockTransport,
    NotFoundError,
    Request,
    Response,
    RetryPolicy,
    json_response,
)
from svc_async.testing import FakeService

API = "http://svc.test"
SEARCH = "/api/public/v1/verification-job/search"
EVENTS = "/api/public/v1/event"


def _job(job_id: int) -> dict[str, Any]:
    return {"id": job_id, "organisationId": 1, "status": "Created", "tags": ["t1"]}


class SearchService:
    """A job search over a mutable list; ``on_request(n, jobs)`` may change the list."""

    def __init__(
        self,
        ids: list[int],
        *,
        delay: float = 0.0,
        on_request: Callable[[int, list[int]], None] | None = None,
        fail_offset: int | None = None,
    ) -> None:
        self.ids = list(ids)
        self.delay = delay
        self.on_request = on_request
        self.fail_offset = fail_offset
        self.requests = 0
        self.in_flight = 0
        self.peak = 0
        self.offsets: list[int] = []
        self.transport = MockTransport(self.handle)

    async def handle(self, request: Request) -> Response:
        assert request.url.path == SEARCH
        body = request.json()
        self.requests += 1
        self.offsets.append(body["offset"])
        if self.on_request is not None:
            self.on_request(self.requests, self.ids)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        if body["offset"] == self.fail_offset:
            return json_response({"statusCode": 404, "message": "gone"}, status=404)
        start, limit = body["offset"], body["limit"]
        page = self.ids[start : start + limit]
        return json_response({"jobs": [_job(i) for i in page], "count": len(self.ids)})


def _client(transport: MockTransport) -> Client:
    return Client(
        API, token="t", transport=transport, rate_limit=False, retry=RetryPolicy(attempts=1)
    )


async def _collect(service: SearchService, **kwargs: Any) -> list[int]:
    async with _client(service.transport) as svc:
        return [job.id async for job in svc.jobs.iter_search(**kwargs)]


# ------------------------------------------------------------------ jobs.iter_search


@pytest.mark.parametrize(
    ("total", "page_size", "requests"),
    [(0, 25, 1), (1, 25, 1), (24, 25, 1), (25, 25, 1), (26, 25, 2), (51, 25, 3), (100, 7, 15)],
)
async def test_iter_search_yields_each_job_once_in_order(
    total: int, page_size: int, requests: int
) -> None:
    service = SearchService(list(range(1, total + 1)))
    got = await _collect(service, page_size=page_size, concurrency=4)
    assert got == list(range(1, total + 1))
    assert service.requests == requests


async def test_iter_search_fetches_remaining_pages_concurrently_with_a_bound() -> None:
    service = SearchService(list(range(1, 201)), delay=0.02)
    got = await _collect(service, page_size=10, concurrency=4)
    assert got == list(range(1, 201))
    assert service.peak == 4
    assert service.requests == 20


async def test_iter_search_sends_the_filters() -> None:
    service = SearchService([1, 2])
    async with _client(service.transport) as svc:
        jobs = [
            j
            async for j in svc.jobs.iter_search(
                tags=["t1"], statuses=["Created"], organisation_id=9
            )
        ]
    assert [j.id for j in jobs] == [1, 2]
    body = service.transport.requests[0].json()
    assert body == {"tags": ["t1"], "statuses": ["Created"], "orgId": 9, "limit": 25, "offset": 0}


async def test_iter_search_jobs_appended_while_paging_are_read_past_the_first_count() -> None:
    def grow(n: int, ids: list[int]) -> None:
        if n == 2:  # after the first page: five new jobs at the end
            ids.extend(range(1001, 1006))

    service = SearchService(list(range(1, 51)), on_request=grow)
    got = await _collect(service, page_size=10, concurrency=2)
    assert Counter(got).most_common(1)[0][1] == 1
    assert got == [*range(1, 51), *range(1001, 1006)]
    assert service.offsets[-1] == 50  # the tail page beyond the first count


async def test_iter_search_jobs_prepended_while_paging_are_deduplicated() -> None:
    def push_front(n: int, ids: list[int]) -> None:
        if n in (2, 4):  # newest first: three new jobs shift every page
            ids[0:0] = [1000 + n * 10 + k for k in range(3)]

    service = SearchService(list(range(1, 48)), on_request=push_front)
    got = await _collect(service, page_size=10, concurrency=1)
    assert len(got) == len(set(got))
    assert set(range(1, 48)) <= set(got)


async def test_iter_search_jobs_removed_while_paging_are_found_by_a_rescan() -> None:
    def shrink(n: int, ids: list[int]) -> None:
        if n == 3:  # two jobs of the first page stop matching (e.g. a statuses filter)
            del ids[0:2]

    service = SearchService(list(range(1, 31)), on_request=shrink)
    got = await _collect(service, page_size=10, concurrency=1)
    # 1 and 2 were yielded before they left; every job that kept matching is there once.
    assert sorted(got) == list(range(1, 31))
    assert service.offsets[:3] == [0, 10, 20]
    assert service.offsets[3] == 0  # the rescan


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    total=st.integers(0, 60),
    page_size=st.integers(1, 12),
    concurrency=st.integers(1, 5),
    inserts=st.lists(st.tuples(st.integers(1, 8), st.integers(0, 60)), max_size=4),
)
def test_iter_search_exactly_once_under_insertions(
    total: int, page_size: int, concurrency: int, inserts: list[tuple[int, int]]
) -> None:
    fresh = iter(range(10_000, 20_000))

    def insert(n: int, ids: list[int]) -> None:
        for when, where in inserts:
            if when == n:
                ids.insert(min(where, len(ids)), next(fresh))

    service = SearchService(list(range(1, total + 1)), on_request=insert)
    got = asyncio.run(_collect(service, page_size=page_size, concurrency=concurrency))
    assert len(got) == len(set(got)), "a job was yielded twice"
    assert set(range(1, total + 1)) <= set(got), "a job present throughout was missed"


async def test_iter_search_page_error_raises_and_cancels_the_rest() -> None:
    service = SearchService(list(range(1, 101)), delay=0.01, fail_offset=20)
    baseline = len(asyncio.all_tasks())
    async with _client(service.transport) as svc:
        got: list[int] = []
        with pytest.raises(NotFoundError):
            async with aclosing(svc.jobs.iter_search(page_size=10, concurrency=3)) as it:
                async for job in it:
                    got.append(job.id)
        assert got == list(range(1, 21))
        assert len(asyncio.all_tasks()) == baseline
    assert service.in_flight == 0


async def test_iter_search_early_exit_leaves_no_tasks() -> None:
    service = SearchService(list(range(1, 101)), delay=0.01)
    baseline = len(asyncio.all_tasks())
    async with _client(service.transport) as svc:
        async with aclosing(svc.jobs.iter_search(page_size=10, concurrency=4)) as it:
            async for job in it:
                if job.id == 15:
                    break
        assert len(asyncio.all_tasks()) == baseline
        # a plain break (no aclosing): the generator is finalised when collected
        iterator = svc.jobs.iter_search(page_size=10, concurrency=4)
        async for job in iterator:
            if job.id == 15:
                break
        del iterator
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(asyncio.all_tasks()) == baseline
    assert service.requests < 15


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"page_size": 0}, ValueError),
        ({"page_size": 101}, ValueError),
        ({"page_size": "10"}, TypeError),
        ({"concurrency": 0}, ValueError),
        ({"tags": "abc"}, TypeError),
        ({"statuses": ["Completed"]}, ValueError),
        ({"statuses": [1]}, TypeError),
        ({"organisation_id": 0}, ValueError),
    ],
)
async def test_iter_search_checks_arguments_before_sending(
    kwargs: dict[str, Any], error: type[Exception]
) -> None:
    service = SearchService([1])
    async with _client(service.transport) as svc:
        with pytest.raises(error):
            svc.jobs.iter_search(**kwargs)
    assert service.requests == 0


# ------------------------------------------------------------------ events.iter


def _event(event_id: int) -> dict[str, Any]:
    return {
        "id": event_id,
        "isLocked": False,
        "organisationId": 1,
        "title": f"Event {event_id}",
        "territory": "GB",
        "startDate": "2024-10-01T00:00:00.000Z",
        "endDate": "2024-10-02T00:00:00.000Z",
        "inviteURL": "https://x.example/my-events/event/1/invite?token=t",
        "signupFields": [],
    }


@pytest.mark.parametrize(("total", "requests"), [(0, 1), (99, 1), (100, 2), (250, 3)])
async def test_events_iter_stops_at_a_short_page(total: int, requests: int) -> None:
    bodies: list[Any] = []

    def handler(request: Request) -> Response:
        body = request.json()
        bodies.append(body)
        start = body["offset"]
        ids = range(1, total + 1)[start : start + body["limit"]]
        return json_response([_event(i) for i in ids])

    async with _client(MockTransport(handler)) as svc:
        got = [e.id async for e in svc.events.iter()]
    assert got == list(range(1, total + 1))
    assert len(bodies) == requests
    assert all(b["limit"] == 100 for b in bodies)


async def test_events_iter_caps_page_size_at_100() -> None:
    async with _client(MockTransport(lambda r: json_response([]))) as svc:
        with pytest.raises(ValueError, match="at most 100"):
            svc.events.iter(page_size=101)
        with pytest.raises(ValueError):
            svc.events.iter(page_size=0)
        assert [e async for e in svc.events.iter(page_size=100)] == []


# ------------------------------------------------------------------ end to end


@asynccontextmanager
async def _fake_client(fake: FakeService) -> AsyncIterator[Client]:
    async with (
        fake.serve() as url,
        Client(url, token=FakeService.DEFAULT_TOKEN, rate_limit=False) as svc,
    ):
        yield svc


def _request(tag: str, n: int) -> JobRequest:
    today = dt.date(2025, 1, 1)
    return JobRequest(
        name=f"Routine {n}",
        email="coach@team.example",
        required_territories=["GB"],
        start_date=today,
        end_date=today,
        external_id=f"x{n}",
        organisation_id=1,
        audio_file_url=f"https://media.example/r{n}.mp3",
        tags=[tag],
        license_details=[],
    )


async def test_e2e_iter_search_over_loopback_with_jobs_added_between_pages() -> None:
    fake = FakeService(demo_data=False, rate_limit=None, processing_delay=0.0)
    async with _fake_client(fake) as svc:
        for n in range(23):
            await svc.jobs.create(_request("batch-a", n), creation_tag=False)
        fake.reset_counters()
        got = [job.id async for job in svc.jobs.iter_search(tags=["batch-a"], page_size=5)]
        assert len(got) == 23 and len(set(got)) == 23
        assert fake.count("POST", SEARCH) == 5

        empty = [job async for job in svc.jobs.iter_search(tags=["nothing-here"])]
        assert empty == []

        # jobs created while the pages are read: the originals exactly once, no duplicates
        iterator = svc.jobs.iter_search(tags=["batch-a"], page_size=5, concurrency=1)
        seen: list[int] = []
        async for job in iterator:
            seen.append(job.id)
            if len(seen) == 3:
                for n in range(100, 104):
                    await svc.jobs.create(_request("batch-a", n), creation_tag=False)
        assert len(seen) == len(set(seen))
        assert set(got) <= set(seen)
        assert len(seen) == 27  # ids ascend, so the new jobs land on the tail pages
