"""Incremental sync: entries.sync, SyncState and its JSON form, server-clock watermarks.

The server's clock is skewed minutes away from the client's in both directions: the
watermark must come from the ``Date`` header, never from the local clock.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from email.utils import formatdate
from typing import Any

import pytest

from svc_async import (
    Client,
    Entry,
    EventCursor,
    MockTransport,
    Request,
    Response,
    RetryPolicy,
    ServerError,
    SyncState,
    json_response,
)
from svc_async.resources.sync import DEFAULT_MARGIN, advance
from svc_async.retry import parse_http_date
from svc_async.testing import FakeClock, FakeService

API = "http://svc.test"
_PATH = re.compile(r"/api/public/v1/event/(\d+)/entries")
T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)


def _stamp(when: float) -> str:
    d = dt.datetime.fromtimestamp(when, tz=dt.UTC)
    return d.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _recording(updated: float) -> dict[str, Any]:
    return {
        "createdAt": _stamp(updated - 3600),
        "updatedAt": _stamp(updated),
        "downloadURL": "https://files.example/r.mp3?sig=x",
        "uploadFileName": "r.mp3",
        "licenseStatus": "Licensed",
        "status": "Complete",
        "songs": [],
    }


class SkewedService:
    """Entries with recordings; the server's clock is local time plus ``skew`` seconds."""

    def __init__(self, skew: float, *, date_header: bool = True) -> None:
        self.skew = skew
        self.date_header = date_header
        self.entries: dict[int, dict[int, float | None]] = {}  # event -> entry -> updatedAt
        self.failing: set[int] = set()
        self.bodies: dict[int, Any] = {}
        self.transport = MockTransport(self.handle)

    def now(self) -> float:
        return time.time() + self.skew

    def add(self, event_id: int, entry_id: int, *, recording: bool = True) -> None:
        self.entries.setdefault(event_id, {})[entry_id] = self.now() if recording else None

    def touch(self, event_id: int, entry_id: int) -> None:
        old = self.entries[event_id][entry_id] or 0.0
        self.entries[event_id][entry_id] = max(self.now(), old + 0.001)

    def handle(self, request: Request) -> Response:
        match = _PATH.fullmatch(request.url.path)
        assert match is not None
        event_id = int(match.group(1))
        body = request.json()
        self.bodies[event_id] = body
        headers = {"Date": formatdate(self.now(), usegmt=True)} if self.date_header else {}
        if event_id in self.failing:
            return json_response({"statusCode": 500}, status=500, headers=headers)
        after = None
        if body and "updatedAfter" in body:
            after = dt.datetime.fromisoformat(body["updatedAfter"]).timestamp()
        out = []
        for entry_id, updated in sorted(self.entries.get(event_id, {}).items()):
            if after is not None and (updated is None or updated <= after):
                continue
            out.append(
                {
                    "id": entry_id,
                    "name": f"Team {entry_id}",
                    "fields": [],
                    "soundRecording": None if updated is None else _recording(updated),
                }
            )
        return json_response(out, headers=headers)


def _client(service: SkewedService) -> Client:
    return Client(
        API,
        token="t",
        transport=service.transport,
        rate_limit=False,
        retry=RetryPolicy(attempts=1),
    )


def _ids(result_changes: dict[int, list[Entry]]) -> dict[int, list[int]]:
    return {event: [e.id for e in entries] for event, entries in result_changes.items()}


# ------------------------------------------------------------------ MockTransport


@pytest.mark.parametrize("skew", [-600.0, 0.0, 900.0])
async def test_sync_first_run_everything_then_only_changes(skew: float) -> None:
    service = SkewedService(skew)
    for event_id in (1, 2, 3):
        for k in range(1, 4):
            service.add(event_id, event_id * 10 + k)
    async with _client(service) as svc:
        first = await svc.entries.sync([1, 2, 3])
        assert _ids(first.changes) == {1: [11, 12, 13], 2: [21, 22, 23], 3: [31, 32, 33]}
        assert first.ok and first.errors == {}
        assert all(body is None for body in service.bodies.values())  # full fetch
        # the watermark is the server's Date minus the margin, whatever the local clock says
        assert first.server_time is not None
        assert abs(first.server_time.timestamp() - service.now()) < 3
        for cursor in first.state.events.values():
            assert cursor.since == first.server_time - DEFAULT_MARGIN

        state = SyncState.from_json(first.state.to_json())
        service.touch(2, 22)
        service.add(3, 34)
        second = await svc.entries.sync([1, 2, 3], state)
        assert _ids(second.changes) == {1: [], 2: [22], 3: [34]}
        assert second.entries[0].id == 22
        sent = service.bodies[2]["updatedAfter"]
        assert dt.datetime.fromisoformat(sent) == first.server_time - DEFAULT_MARGIN

        third = await svc.entries.sync([1, 2, 3], second.state)
        assert _ids(third.changes) == {1: [], 2: [], 3: []}


async def test_sync_failed_event_keeps_its_cursor_and_new_events_are_fetched_in_full() -> None:
    service = SkewedService(-300)
    service.add(1, 11)
    service.add(2, 21)
    service.add(5, 51)
    async with _client(service) as svc:
        first = await svc.entries.sync([1, 2])
        service.touch(1, 11)
        service.touch(2, 21)
        service.failing.add(2)
        second = await svc.entries.sync([1, 2, 5], first.state)
        assert _ids(second.changes) == {1: [11], 5: [51]}
        assert isinstance(second.errors[2], ServerError) and not second.ok
        assert second.state.cursor(2) == first.state.cursor(2)
        assert service.bodies[5] is None  # never synced before: everything
        service.failing.clear()
        third = await svc.entries.sync([1, 2, 5], second.state)
        assert _ids(third.changes) == {1: [], 2: [21], 5: []}


async def test_sync_first_call_failing_still_gives_a_server_watermark() -> None:
    service = SkewedService(120)
    service.add(1, 11)
    service.add(2, 21)
    service.failing.add(1)
    async with _client(service) as svc:
        result = await svc.entries.sync([1, 2])
    assert result.server_time is not None  # the 500's Date header counts
    assert set(result.errors) == {1} and _ids(result.changes) == {2: [21]}
    assert result.state.cursor(1) is None


async def test_sync_entries_without_recordings_are_reported_by_the_full_run_only() -> None:
    service = SkewedService(0)
    service.add(1, 11, recording=False)
    service.add(1, 12)
    async with _client(service) as svc:
        first = await svc.entries.sync([1])
        assert _ids(first.changes) == {1: [11, 12]}
        second = await svc.entries.sync([1], first.state)
        assert _ids(second.changes) == {1: []}


async def test_sync_without_a_date_header_keeps_the_watermark_and_deduplicates(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = SkewedService(0, date_header=False)
    service.add(1, 11)
    async with _client(service) as svc:
        with caplog.at_level(logging.WARNING, logger="svc_async"):
            first = await svc.entries.sync([1])
        assert "no Date header" in caplog.text
        assert first.server_time is None
        assert first.state.cursor(1) == EventCursor(since=None, seen=first.state.events[1].seen)
        second = await svc.entries.sync([1], first.state)
        assert _ids(second.changes) == {1: []}
        service.touch(1, 11)
        third = await svc.entries.sync([1], second.state)
        assert _ids(third.changes) == {1: [11]}


async def test_sync_checks_arguments_before_sending() -> None:
    service = SkewedService(0)
    async with _client(service) as svc:
        with pytest.raises(ValueError):
            await svc.entries.sync([0])
        with pytest.raises(TypeError):
            await svc.entries.sync([1], state="{}")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            await svc.entries.sync([1], margin=dt.timedelta(seconds=-1))
        with pytest.raises(TypeError):
            await svc.entries.sync([1], margin=60)  # type: ignore[arg-type]
        with pytest.raises(TypeError):  # a falsy number is no timedelta either
            await svc.entries.sync([1], margin=0)  # type: ignore[arg-type]
        empty = await svc.entries.sync([])
        assert empty.changes == {} and empty.state == SyncState()
    assert service.transport.requests == []


async def test_sync_honours_a_margin_of_zero() -> None:
    """``margin=timedelta(0)`` is a margin (the watermark is the server's Date itself),
    not a missing one."""
    service = SkewedService(0)
    service.add(1, 11)
    async with _client(service) as svc:
        first = await svc.entries.sync([1], margin=dt.timedelta(0))
    assert first.server_time is not None
    assert first.state.events[1].since == first.server_time


# ------------------------------------------------------------------ pure parts


def _entry(entry_id: int, updated: dt.datetime | None) -> Entry:
    from svc_async.converter import structure

    data: dict[str, Any] = {"id": entry_id, "name": "n", "fields": []}
    data["soundRecording"] = None if updated is None else _recording(updated.timestamp())
    return structure(data, Entry)


def test_advance_drops_pairs_seen_in_the_overlap_and_keeps_new_versions() -> None:
    w1 = T0
    changed, cursor = advance(
        None, [_entry(1, T0 - dt.timedelta(hours=1)), _entry(2, T0 + dt.timedelta(seconds=30))], w1
    )
    assert [e.id for e in changed] == [1, 2]
    assert cursor.since == w1
    assert cursor.seen == {(2, T0 + dt.timedelta(seconds=30))}  # only pairs after the watermark

    later = T0 + dt.timedelta(minutes=5)
    again = [_entry(2, T0 + dt.timedelta(seconds=30)), _entry(3, T0 + dt.timedelta(minutes=4))]
    changed, cursor2 = advance(cursor, again, later)
    assert [e.id for e in changed] == [3]
    assert cursor2.seen == frozenset()

    updated_again = [_entry(2, T0 + dt.timedelta(seconds=45))]
    changed, _ = advance(cursor, updated_again, later)
    assert [e.id for e in changed] == [2]


def test_sync_state_json_round_trip_and_errors() -> None:
    state = SyncState(
        events={
            7: EventCursor(since=T0, seen=frozenset({(1, T0), (2, None)})),
            3: EventCursor(),
        }
    )
    text = state.to_json()
    assert SyncState.from_json(text) == state
    assert SyncState.from_json(text.encode()) == state
    assert text.index('"3"') < text.index('"7"')
    for bad in [
        "nope",
        "[]",
        '{"version": 2, "events": {}}',
        '{"version": 1}',
        '{"version": 1, "events": {"x": {}}}',
        '{"version": 1, "events": {"1": {"since": "yesterday"}}}',
        '{"version": 1, "events": {"1": {"seen": [[1]]}}}',
    ]:
        with pytest.raises(ValueError):
            SyncState.from_json(bad)


# ------------------------------------------------------------------ end to end


@pytest.mark.parametrize("skew", [-480.0, 480.0])
async def test_e2e_sync_against_a_skewed_fake_over_loopback(skew: float) -> None:
    fake = FakeService(demo_data=False, rate_limit=None, clock_skew=skew)
    events = [fake.add_event(1, f"Event {n}") for n in range(4)]
    entries = {
        e: [fake.add_entry(e, name=f"T{k}", recording="licensed") for k in range(5)] for e in events
    }
    async with fake.serve() as url, Client(url, token=fake.DEFAULT_TOKEN, rate_limit=False) as svc:
        first = await svc.entries.sync(events, concurrency=3)
        assert {e: sorted(x.id for x in v) for e, v in first.changes.items()} == entries
        server_now = dt.datetime.fromtimestamp(fake.now(), tz=dt.UTC)
        assert first.server_time is not None
        assert abs((first.server_time - server_now).total_seconds()) < 3

        touched = [entries[events[0]][1], entries[events[2]][4], entries[events[2]][0]]
        for entry_id in touched:
            fake.touch_recording(entry_id)
        state = SyncState.from_json(first.state.to_json())  # as a restarted bot would
        second = await svc.entries.sync(events, state, concurrency=3)
        assert sorted(e.id for e in second.entries) == sorted(touched)
        third = await svc.entries.sync(events, second.state)
        assert third.entries == []


async def test_e2e_sync_with_a_frozen_clock_beyond_the_margin() -> None:
    clock = FakeClock(start=T0.timestamp())
    fake = FakeService(demo_data=False, rate_limit=None, clock=clock, clock_skew=-3600)
    event = fake.add_event(1, "Finals")
    a = fake.add_entry(event, name="A", recording="licensed")
    b = fake.add_entry(event, name="B", recording="licensed")
    async with fake.serve() as url, Client(url, token=fake.DEFAULT_TOKEN, rate_limit=False) as svc:
        first = await svc.entries.sync([event])
        assert sorted(e.id for e in first.entries) == [a, b]
        fake.advance(600)  # well past the overlap window
        second = await svc.entries.sync([event], first.state)
        assert second.entries == [] and second.state.events[event].seen == frozenset()
        fake.advance(60)
        fake.touch_recording(b)
        c = fake.add_entry(event, name="C", recording="licensed")
        third = await svc.entries.sync([event], second.state)
        assert sorted(e.id for e in third.entries) == [b, c]
        body = next(r.json for r in reversed(fake.requests) if r.json)
        assert body["updatedAfter"] == "2025-03-01T11:08:00.000Z"  # server Date - 2 min


def test_a_date_header_past_the_integers_is_no_date() -> None:
    assert parse_http_date("Mon, 01 Jan 99999999999999999999 00:00:00 GMT") is None
    assert parse_http_date("Mon, 01 Jan 2024 00:00:00 +99999999999999999999") is None
