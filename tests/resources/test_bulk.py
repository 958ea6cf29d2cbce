"""Bulk fan-out: entries.for_events / for_seasons.

Unit tests use a MockTransport whose handler sleeps and counts requests in flight; the
end-to-end tests run FakeService on loopback with injected latency.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import re
from contextlib import aclosing
from typing import Any

import pytest

from svc_async import (
    Client,
    ClientClosedError,
    EntryBatch,
    MockTransport,
    NotFoundError,
    Request,
    Response,
    RetryPolicy,
    ServerError,
    json_response,
)
from svc_async.testing import FakeService, FaultConfig, VirtualClock

API = "http://svc.test"
_PATH = re.compile(r"/api/public/v1/(event|season)/(\d+)/entries")


def _entry(entry_id: int) -> dict[str, Any]:
    return {"id": entry_id, "name": f"Team {entry_id}", "email": None, "fields": []}


class EntriesService:
    """Entries per event: event ``n`` has entries ``n*100+1 .. n*100+(n % 4)``."""

    def __init__(self, *, delay: float = 0.0, missing: frozenset[int] = frozenset()) -> None:
        self.delay = delay
        self.missing = missing
        self.in_flight = 0
        self.peak = 0
        self.started: list[int] = []
        self.finished: list[int] = []
        self.transport = MockTransport(self.handle)

    async def handle(self, request: Request) -> Response:
        match = _PATH.fullmatch(request.url.path)
        assert match is not None
        key = int(match.group(2))
        self.started.append(key)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            # later ids answer sooner, so completion order differs from input order
            await asyncio.sleep(self.delay * (1 + (key % 3)))
        finally:
            self.in_flight -= 1
        self.finished.append(key)
        if key in self.missing:
            return json_response({"statusCode": 404, "message": "Event not found"}, status=404)
        return json_response([_entry(key * 100 + i) for i in range(1, key % 4 + 1)])


def _client(transport: MockTransport, **kwargs: Any) -> Client:
    return Client(
        API,
        token="t",
        transport=transport,
        rate_limit=False,
        retry=RetryPolicy(attempts=1),
        **kwargs,
    )


async def test_for_events_returns_every_event_once_within_the_bound() -> None:
    service = EntriesService(delay=0.005)
    ids = list(range(1, 41))
    async with _client(service.transport) as svc:
        batches = [b async for b in svc.entries.for_events(ids, concurrency=5)]
    assert sorted(b.event_id for b in batches) == ids
    for batch in batches:
        assert batch.ok and batch.error is None
        assert [e.id for e in batch.entries] == [
            batch.event_id * 100 + i for i in range(1, batch.event_id % 4 + 1)
        ]
    assert service.peak == 5
    assert [b.event_id for b in batches] != ids  # yielded as each completes


async def test_for_events_validates_and_deduplicates_ids_up_front() -> None:
    service = EntriesService()
    async with _client(service.transport) as svc:
        for bad, error in [
            ([1, 0], ValueError),
            ([1, -3], ValueError),
            ([1, "2"], TypeError),
            ([True], TypeError),
            ("12", TypeError),
            (7, TypeError),
        ]:
            with pytest.raises(error):
                svc.entries.for_events(bad)
        with pytest.raises(ValueError):
            svc.entries.for_events([1], concurrency=0)
        with pytest.raises(TypeError):
            svc.entries.for_events([1], progress="no")
        with pytest.raises(ValueError):
            svc.entries.for_events([1], updated_after=dt.datetime(2024, 1, 1))
        assert service.started == []
        got = [b.event_id async for b in svc.entries.for_events([3, 1, 3, 2, 1], concurrency=1)]
    assert got == [3, 1, 2]
    assert service.started == [3, 1, 2]
    assert [b async for b in _client(service.transport).entries.for_events([])] == []


async def test_for_events_sends_the_filters_to_every_event() -> None:
    service = EntriesService()
    since = dt.datetime(2024, 10, 16, 20, 0, tzinfo=dt.UTC)
    fields = iter([{"key": "division", "value": "Junior"}])  # a one-shot iterable
    async with _client(service.transport) as svc:
        async for _ in svc.entries.for_events(
            [1, 2], updated_after=since, fields=fields, concurrency=2
        ):
            pass
    bodies = [r.json() for r in service.transport.requests]
    assert (
        bodies
        == [
            {
                "updatedAfter": "2024-10-16T20:00:00.000Z",
                "fields": [{"key": "division", "value": "Junior"}],
            }
        ]
        * 2
    )


async def test_one_event_failing_is_reported_in_its_batch() -> None:
    service = EntriesService(missing=frozenset({4, 7}))
    async with _client(service.transport) as svc:
        batches = {b.event_id: b async for b in svc.entries.for_events(range(1, 11))}
    assert sorted(batches) == list(range(1, 11))
    assert {k for k, b in batches.items() if not b.ok} == {4, 7}
    assert isinstance(batches[4].error, NotFoundError)
    assert batches[4].entries == []
    assert all(b.ok for k, b in batches.items() if k not in (4, 7))


async def test_raise_on_error_fails_fast_and_cancels_the_rest() -> None:
    service = EntriesService(delay=0.01, missing=frozenset({3}))
    baseline = len(asyncio.all_tasks())
    async with _client(service.transport) as svc:
        seen: list[int] = []
        with pytest.raises(NotFoundError):
            async for batch in svc.entries.for_events(
                range(1, 201), concurrency=4, raise_on_error=True
            ):
                seen.append(batch.event_id)
        assert 3 not in seen
        assert len(asyncio.all_tasks()) == baseline
        assert service.in_flight == 0
    assert len(service.started) < 20


async def test_early_exit_cancels_the_rest_and_leaves_no_tasks() -> None:
    service = EntriesService(delay=0.01)
    baseline = len(asyncio.all_tasks())
    async with _client(service.transport) as svc:
        async with aclosing(svc.entries.for_events(range(1, 10_001), concurrency=4)) as it:
            async for batch in it:
                if batch.event_id:
                    break
        assert len(asyncio.all_tasks()) == baseline
        assert service.in_flight == 0
        # at most `concurrency` running and `concurrency` finished-but-unread at any time
        assert len(service.started) <= 1 + 2 * 4

        # a plain break: the generator is finalised when it is collected
        generator = svc.entries.for_events(range(1, 10_001), concurrency=4)
        async for _ in generator:
            break
        del generator
        gc.collect()
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(asyncio.all_tasks()) == baseline
        assert service.in_flight == 0


async def test_cancelling_the_consumer_cancels_the_workers() -> None:
    service = EntriesService(delay=0.05)
    baseline = len(asyncio.all_tasks())
    async with _client(service.transport) as svc:

        async def consume() -> None:
            async for _ in svc.entries.for_events(range(1, 100), concurrency=6):
                pass

        task = asyncio.create_task(consume())
        await asyncio.sleep(0.02)
        assert service.in_flight == 6
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(asyncio.all_tasks()) == baseline
        assert service.in_flight == 0


async def test_closing_the_client_ends_the_run_with_client_closed_error() -> None:
    service = EntriesService(delay=0.02)
    svc = _client(service.transport)
    got: list[int] = []
    with pytest.raises(ClientClosedError):
        async for batch in svc.entries.for_events(range(1, 1001), concurrency=4):
            got.append(batch.event_id)
            if len(got) == 2:
                await svc.aclose()
    assert len(service.started) < 20


async def test_progress_callback_sync_and_async() -> None:
    service = EntriesService()
    calls: list[tuple[int, int]] = []
    async with _client(service.transport) as svc:
        async for _ in svc.entries.for_events(
            [5, 6, 7, 5], progress=lambda d, t: calls.append((d, t))
        ):
            pass
        assert calls == [(1, 3), (2, 3), (3, 3)]

        async def record(done: int, total: int) -> None:
            await asyncio.sleep(0)
            calls.append((done, -total))

        calls.clear()
        async for _ in svc.entries.for_events([1, 2], progress=record):
            pass
    assert calls == [(1, -2), (2, -2)]


async def test_for_seasons_batches_carry_the_season_id() -> None:
    service = EntriesService()
    async with _client(service.transport) as svc:
        batches = [b async for b in svc.entries.for_seasons([2, 3])]
    assert sorted(b.season_id for b in batches) == [2, 3]
    assert all(r.url.path.startswith("/api/public/v1/season/") for r in service.transport.requests)
    with pytest.raises(AttributeError):
        _ = batches[0].event_id
    event_batch = EntryBatch(source="event", source_id=9)
    assert event_batch.event_id == 9 and event_batch.ok
    with pytest.raises(AttributeError):
        _ = event_batch.season_id


async def test_decode_errors_are_per_event_and_progress_errors_propagate() -> None:
    def handler(request: Request) -> Response:
        return json_response([{"id": "not-an-int"}])

    async with _client(MockTransport(handler)) as svc:
        batches = [b async for b in svc.entries.for_events([1])]
        # a response that does not fit is the service's fault: reported per event
        assert batches[0].error is not None

        async def boom(done: int, total: int) -> None:
            raise RuntimeError("progress failed")

        with pytest.raises(RuntimeError, match="progress failed"):
            async for _ in svc.entries.for_events([1, 2], progress=boom):
                pass


# ------------------------------------------------------------------ end to end


def _fake_with_events(
    events: int, entries_per_event: int, **options: Any
) -> tuple[FakeService, list[int]]:
    fake = FakeService(demo_data=False, rate_limit=None, **options)
    ids = []
    for n in range(events):
        event_id = fake.add_event(1, f"Event {n}")
        ids.append(event_id)
        for k in range(entries_per_event):
            fake.add_entry(event_id, name=f"Team {n}-{k}", recording="licensed")
    return fake, ids


@pytest.mark.looptime
async def test_e2e_fan_out_with_latency_over_loopback() -> None:
    # The fake's latency is on virtual time (its loopback server is in this loop): the
    # bounds below measure the fan-out, not how busy the machine is.
    clock = VirtualClock()
    fake, ids = _fake_with_events(48, 2, clock=clock)
    fake.faults = FaultConfig(latency=0.05)
    async with (
        fake.serve() as url,
        Client(url, token=fake.DEFAULT_TOKEN, rate_limit=False, clock=clock) as svc,
    ):
        started = clock.now()
        batches = [b async for b in svc.entries.for_events(ids, concurrency=8)]
        elapsed = clock.now() - started
    assert sorted(b.event_id for b in batches) == ids
    assert all(b.ok and len(b.entries) == 2 for b in batches)
    names = {e.name for b in batches for e in b.entries}
    assert len(names) == 96
    assert fake.max_in_flight == 8
    ideal = len(ids) * 0.05 / 8
    assert elapsed == pytest.approx(ideal)  # eight at a time, never fewer: 6 x 0.05 s


async def test_e2e_per_event_errors_and_server_faults() -> None:
    fake, ids = _fake_with_events(6, 1)
    fake.faults = FaultConfig(error_5xx=1.0, paths=(f"/api/public/v1/event/{ids[2]}/entries",))
    async with (
        fake.serve() as url,
        Client(
            url,
            token=fake.DEFAULT_TOKEN,
            rate_limit=False,
            retry=RetryPolicy(attempts=2, wait_initial=0.0, wait_max=0.0),
        ) as svc,
    ):
        batches = {b.event_id: b async for b in svc.entries.for_events([*ids, 999])}
    assert isinstance(batches[ids[2]].error, ServerError)
    assert isinstance(batches[999].error, NotFoundError)
    assert all(batches[i].ok for i in ids if i != ids[2])
