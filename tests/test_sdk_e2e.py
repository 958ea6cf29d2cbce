"""The SDK end to end against FakeService: every endpoint and rule, over a real loopback
socket and again through the in-process transport."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import pytest
from aiohttp import web

from svc_async import (
    ApiKeyAuth,
    AuthenticationError,
    BadRequestError,
    Client,
    JobStatus,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RetryPolicy,
)
from svc_async.testing import FakeService, VirtualClock

from .conftest import serve_app
from .test_examples import example_request

MODES = ["loopback", "in-process"]


@asynccontextmanager
async def connect(fake: FakeService, mode: str, **kw: object) -> AsyncIterator[Client]:
    kw.setdefault("token", FakeService.DEFAULT_TOKEN)
    kw.setdefault("clock", fake.clock.source)  # the fake's clock, virtual or not
    if mode == "loopback":
        async with fake.serve() as url, Client(url, **kw) as svc:  # type: ignore[arg-type]
            yield svc
    else:
        transport = fake.transport()
        async with Client("http://fake.invalid", transport=transport, **kw) as svc:  # type: ignore[arg-type]
            yield svc
        await transport.aclose()


def _request(org: int = 1, **changes: object) -> object:
    return attrs.evolve(example_request(), organisation_id=org, **changes)


@pytest.mark.parametrize("mode", MODES)
async def test_orgs_seasons_and_scoping(mode: str) -> None:
    async with FakeService(seed=0) as fake:
        async with connect(fake, mode) as svc:
            orgs = await svc.orgs.list()
            seasons = await svc.seasons.list()
            events = [e async for e in svc.events.iter()]
        async with connect(fake, mode, token=FakeService.REGION_TOKEN) as region:
            region_orgs = await region.orgs.list()
            region_seasons = await region.seasons.list()
            region_events = [e async for e in region.events.iter()]
            with pytest.raises((PermissionDeniedError, NotFoundError)):
                await region.events.list(organisation_id=1)
            foreign = next(
                e for e in events if e.organisation_id not in {o.id for o in region_orgs}
            )
            with pytest.raises(NotFoundError):
                await region.entries.for_event(foreign.id)
    by_id = {o.id: o for o in orgs}
    assert [o.id for o in orgs if o.parent_id is None] == [1]
    assert all(o.parent_id in by_id for o in orgs if o.parent_id is not None)
    region_ids = {o.id for o in region_orgs}
    assert region_ids < set(by_id)
    assert all(s.organisation_id in region_ids for s in region_seasons)
    assert len(region_seasons) < len(seasons)
    assert region_events
    assert all(e.organisation_id in region_ids for e in region_events)


@pytest.mark.parametrize("mode", MODES)
async def test_event_paging(mode: str) -> None:
    async with FakeService(seed=0) as fake:
        org = fake.add_org("Paging Club", parent_id=1)
        for i in range(53):
            fake.add_event(org, f"Event {i}")
        async with connect(fake, mode) as svc:
            first = await svc.events.list(organisation_id=org)
            page = await svc.events.list(organisation_id=org, limit=20, offset=40)
            every = [e async for e in svc.events.iter(organisation_id=org, page_size=20)]
            with pytest.raises(ValueError, match="limit"):
                await svc.events.list(limit=101)
    assert len(first) == 25  # the service's default page
    assert len(page) == 13
    assert len(every) == 53
    assert len({e.id for e in every}) == 53


@pytest.mark.parametrize("mode", MODES)
async def test_entries_updated_after_and_fields(mode: str) -> None:
    async with FakeService(seed=0) as fake:
        async with connect(fake, mode) as svc:
            event = (await svc.events.list(limit=1))[0]
            everything = await svc.entries.for_event(event.id)
            with_recording = [e for e in everything if e.sound_recording is not None]
            latest = max(e.sound_recording.updated_at for e in with_recording if e.sound_recording)
            assert await svc.entries.for_event(event.id, updated_after=latest) == []
            fake.advance(60)
            touched = with_recording[0].id
            fake.touch_recording(touched)
            changed = await svc.entries.for_event(event.id, updated_after=latest)
            division = next(f for e in everything for f in e.fields if f.key == "division")
            filtered = await svc.entries.for_event(
                event.id, fields=[{"key": "division", "value": division.value}]
            )
            season = next(s for s in await svc.seasons.list())
            season_entries = await svc.entries.for_season(season.id)
    assert [e.id for e in changed] == [touched]
    assert filtered
    assert all(e.field("division") == division.value for e in filtered)
    assert season_entries is not None


@pytest.mark.looptime
@pytest.mark.parametrize("mode", MODES)
async def test_job_lifecycle_search_and_count(mode: str) -> None:
    async with FakeService(seed=0, processing_delay=0.4, clock=VirtualClock()) as fake:
        async with connect(fake, mode) as svc:
            created = await svc.jobs.create(_request(tags=["e2e", "Seniors"]))
            assert created.status is JobStatus.CREATED
            assert created.recording is None
            broken = await svc.jobs.create(
                _request(tags=["e2e"], audio_file_url="https://f.example/corrupt.mp3")
            )
            statuses = []
            done = await svc.jobs.wait(created.id, on_status=lambda j: statuses.append(j.status))
            failed = await svc.jobs.wait(broken.id)
            both = await svc.jobs.search(tags=["e2e"])
            seniors = await svc.jobs.search(tags=["e2e", "Seniors"])
            errored = await svc.jobs.search(tags=["e2e"], statuses=["Errored"])
            paged = await svc.jobs.search(tags=["e2e"], limit=1, offset=1)
            with pytest.raises(BadRequestError) as info:
                await svc.request("POST", "/api/public/v1/verification-job", json={"name": 1})
            with pytest.raises(NotFoundError):
                await svc.jobs.get(999_999)
    assert statuses[0] is JobStatus.CREATED
    assert statuses[-1] is JobStatus.PROCESSED
    assert done.is_finished and not done.failed
    assert done.recording is not None and done.recording.songs
    checked = [s.license_checks for s in done.recording.songs if s.license_checks is not None]
    assert checked
    assert all(c.master_choreography_rights is not None for c in checked)  # 13 checks today
    assert failed.status is JobStatus.ERRORED and failed.failed and failed.error_message
    assert both.count == 2
    assert [j.id for j in seniors.jobs] == [created.id]
    assert [j.id for j in errored.jobs] == [broken.id]
    assert paged.count == 2
    assert len(paged.jobs) == 1
    assert info.value.issues


@pytest.mark.parametrize("mode", MODES)
async def test_rate_limit_is_enforced_and_reported(mode: str) -> None:
    async with FakeService(seed=0, rate_limit=(5, 30.0)) as fake:
        async with connect(
            fake, mode, rate_limit=False, retry=RetryPolicy(max_server_wait=1)
        ) as svc:
            for _ in range(5):
                await svc.seasons.list()
            assert svc.rate_limit is not None
            assert svc.rate_limit.remaining == 0
            assert svc.rate_limit.limit == 5
            with pytest.raises(RateLimitError) as info:
                await svc.seasons.list()
    assert info.value.retry_after is not None
    assert info.value.retry_after > 1
    assert fake.rate_limited == 1


@pytest.mark.looptime
@pytest.mark.parametrize("mode", MODES)
async def test_token_expiry_and_api_key_renewal(mode: str) -> None:
    clock = VirtualClock()
    async with FakeService(seed=0, token_ttl=0.2, clock=clock) as fake:
        key, secret = FakeService.DEFAULT_API_KEY
        async with connect(fake, mode, token=None, auth=ApiKeyAuth(key, secret)) as svc:
            await svc.orgs.list()
            await clock.sleep(0.3)
            await asyncio.gather(*(svc.seasons.list() for _ in range(10)))
        async with connect(fake, mode, token="not-a-token") as bad:
            with pytest.raises(AuthenticationError):
                await bad.seasons.list()
    renewals = fake.count("POST", "/api/auth/access-token/refresh") + fake.count(
        "POST", "/api/auth/api-key/login"
    )
    assert renewals == 2


@pytest.mark.looptime
async def test_webhook_delivery_reaches_a_receiver() -> None:
    from svc_async import WebhookReceiver

    receiver = WebhookReceiver(secret="s3cret")
    seen: list[object] = []
    receiver.on_status_update(seen.append)
    app = web.Application()
    app.add_routes(receiver.routes("/hook"))
    clock = VirtualClock()
    async with (
        serve_app(app) as hook_url,
        FakeService(seed=0, processing_delay=0.2, clock=clock) as fake,
    ):
        fake.webhook_url = f"{hook_url}/hook?key=s3cret"
        async with (
            fake.serve() as url,
            Client(url, token=FakeService.DEFAULT_TOKEN, webhooks=receiver, clock=clock) as svc,
        ):
            job = await svc.jobs.create(_request())
            done = await svc.jobs.wait(job.id)
            await fake.wait_webhooks()
            await receiver.drain(1)
        await receiver.aclose()
    assert done.status is JobStatus.PROCESSED
    assert [(u.job_id, u.status) for u in seen] == [(job.id, "Processed")]  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", MODES)
async def test_server_clock_skew_shows_in_the_date_header(mode: str) -> None:
    import email.utils

    async with FakeService(seed=0, clock_skew=-3600) as fake, connect(fake, mode) as svc:
        await svc.seasons.list()
        assert svc.server_date is not None
        server = email.utils.parsedate_to_datetime(svc.server_date)
    behind = (dt.datetime.now(dt.UTC) - server).total_seconds()
    assert 3590 <= behind <= 3610
