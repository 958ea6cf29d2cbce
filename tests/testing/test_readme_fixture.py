"""The FakeService fixture pattern of the Testing page, kept runnable as a plain test module."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from svc_async import Client, MockTransport, json_response
from svc_async.testing import FakeService, FaultConfig


@pytest.fixture
async def fake() -> AsyncIterator[FakeService]:
    async with FakeService(seed=1, processing_delay=0.2) as service:
        yield service


@pytest.fixture
async def svc(fake: FakeService) -> AsyncIterator[Client]:
    async with fake.serve() as url, Client(url, token=FakeService.DEFAULT_TOKEN) as client:
        yield client


async def test_my_bot(svc: Client, fake: FakeService) -> None:
    events = await svc.events.list()
    assert events
    fake.faults = FaultConfig(error_5xx=0.2)
    assert await svc.entries.for_event(events[0].id) is not None
    assert fake.count("POST", "/api/public/v1/event/{id}/entries") >= 1


async def test_in_process_transport(fake: FakeService) -> None:
    transport = fake.transport()
    async with Client(
        "http://fake.invalid", token=FakeService.DEFAULT_TOKEN, transport=transport
    ) as svc:
        orgs = await svc.orgs.list()
    await transport.aclose()
    assert {o.parent_id for o in orgs} >= {None}


async def test_mock_transport_example() -> None:
    transport = MockTransport(lambda request: json_response([]))
    async with Client("https://verify.example", token="t", transport=transport) as svc:
        assert await svc.seasons.list() == []
    assert transport.requests[0].url.path == "/api/public/v1/season"
