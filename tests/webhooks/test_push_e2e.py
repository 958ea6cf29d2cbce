"""End to end on FakeService speaking today's service, over loopback sockets.

A wait finishes at Processed; a claimant's submit arrives as a Submitted status update;
a VOD job's muted file is downloaded after its output-file callback; an entry-update
webhook reaches a handler and keeps the next ``entries.sync`` from repeating it; the
legacy world (Completed, ``{jobs, count}``) still finishes waits without ever sending a
legacy status. Processing, polls and deliveries run on virtual time: the fake, the client
and the receiver share one ``VirtualClock`` on a loop whose time looptime makes virtual.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from svc_async import Client, JobRequest, PollPolicy
from svc_async.models import JobType, OutputFileRequest
from svc_async.testing import FakeService, VirtualClock
from svc_async.webhooks import (
    DEFAULT_PATH,
    EntryUpdate,
    JobStatusUpdate,
    OutputFileUpdate,
    WebhookReceiver,
    feed_sync_state,
)

from ..conftest import serve_app

SECRET = "push-e2e-secret"
SEARCH = "/api/public/v1/verification-job/search"
QUICK = PollPolicy(wait_initial=0.02, wait_max=0.1, wait_jitter=0.1, timeout=10)

pytestmark = pytest.mark.looptime


def request(**changes: Any) -> JobRequest:
    base: dict[str, Any] = {
        "name": "Routine",
        "email": "coach@team.example",
        "organisation_id": 1,
        "audio_file_url": "https://files.example/routine.mp3",
        "start_date": dt.date(2025, 1, 1),
        "end_date": dt.date(2025, 6, 1),
        "required_territories": ["gb"],
        "tags": ["push-e2e"],
    }
    return JobRequest(**(base | changes))


@asynccontextmanager
async def hooked(
    **fake_kwargs: Any,
) -> AsyncIterator[tuple[FakeService, Client, WebhookReceiver, str]]:
    """A receiver and a FakeService, each on its own loopback port, and a client of the fake."""
    clock = VirtualClock()
    receiver = WebhookReceiver(SECRET, clock=clock)
    async with serve_app(receiver.app()) as hook_base:
        hook = f"{hook_base}{DEFAULT_PATH}?key={SECRET}"
        fake = FakeService(
            demo_data=False, rate_limit=None, webhook_url=hook, clock=clock, **fake_kwargs
        )
        async with (
            fake,
            fake.serve() as url,
            Client(url, token=FakeService.DEFAULT_TOKEN, webhooks=receiver, clock=clock) as svc,
        ):
            yield fake, svc, receiver, hook
            await fake.wait_webhooks()
            await receiver.drain()


async def test_a_wait_finishes_at_processed_and_a_submit_arrives_by_webhook() -> None:
    statuses: list[JobStatusUpdate] = []
    async with hooked(processing_delay=0.2) as (fake, svc, receiver, _):
        receiver.on_status_update(statuses.append)
        seen: list[str] = []
        done = await svc.jobs.create_and_wait(
            request(), policy=QUICK, on_status=lambda j: seen.append(str(j.status))
        )
        assert done.status == "Processed" and done.is_finished and not done.failed
        assert seen[0] == "Created" and seen[-1] == "Processed"
        fake.submit(done.id)
        await fake.wait_webhooks()
        await receiver.drain()
        again = await svc.jobs.get(done.id)
    assert again.status == "Submitted" and again.is_finished
    assert [(u.job_id, str(u.status)) for u in statuses] == [
        (done.id, "Processed"),
        (done.id, "Submitted"),
    ]


async def test_a_vod_jobs_muted_file_is_downloaded_after_its_callback() -> None:
    files: list[OutputFileUpdate] = []
    arrived = asyncio.Event()
    async with hooked(processing_delay=0.2) as (_, svc, receiver, hook):

        @receiver.on_output_file
        def got(update: OutputFileUpdate) -> None:
            files.append(update)
            if update.output_file.is_ready:
                arrived.set()

        vod = request(
            type=JobType.VOD,
            output_file=OutputFileRequest(operation="Mute", callback_url=hook),
        )
        job = await svc.jobs.create_and_wait(vod, policy=QUICK)
        assert job.type == JobType.VOD
        async with asyncio.timeout(10):
            await arrived.wait()
        ready = files[-1].output_file
        assert ready.verification_job_id == job.id and ready.download_url
        sink = io.BytesIO()
        await svc.download(ready.download_url, sink)
    assert len(sink.getvalue()) > 0
    assert all(u.job_id == job.id for u in files)


async def test_an_entry_update_reaches_its_handler_and_feeds_the_next_sync() -> None:
    updates: list[EntryUpdate] = []
    async with hooked() as (fake, svc, receiver, _):
        receiver.on_entry_update(updates.append)
        event = fake.add_event(1, "Spring Open")
        entry_id = fake.add_entry(event, name="Leopards", recording="licensed")
        first = await svc.entries.sync([event])
        assert [e.id for e in first.entries] == [entry_id]
        fake.advance(300)
        fake.update_entry(entry_id, name="Lions", recording="licensed")
        await fake.wait_webhooks()
        await receiver.drain()
        added, update = updates  # the new entry is announced too, then its change
        assert added.event_id == event and added.entry.name == "Leopards"
        assert update.event_id == event and update.entry.name == "Lions"
        fetched = await svc.entries.for_event(event)
        assert fetched[0].name == "Lions" and fetched[0].id == update.entry.id
        state = feed_sync_state(first.state, update)
        fake.advance(5)
        second = await svc.entries.sync([event], state)
        unfed = await svc.entries.sync([event], first.state)
    assert second.entries == []  # the pushed change is not reported twice
    assert [e.id for e in unfed.entries] == [entry_id]


async def test_the_legacy_world_finishes_waits_without_sending_a_legacy_status() -> None:
    clock = VirtualClock()
    fake = FakeService(
        demo_data=False, rate_limit=None, processing_delay=0.2, legacy=True, clock=clock
    )
    async with (
        fake,
        fake.serve() as url,
        Client(url, token=FakeService.DEFAULT_TOKEN, clock=clock) as svc,
    ):
        done = await svc.jobs.create_and_wait(request(), policy=QUICK)
        batch = [await svc.jobs.create(request(tags=["legacy-batch"])) for _ in range(6)]
        finished = [j async for j in svc.jobs.wait_many([j.id for j in batch], policy=QUICK)]
    assert done.status == "Completed"
    assert sorted(j.id for j in finished) == sorted(j.id for j in batch)
    sent = [r for r in fake.requests if r.path == SEARCH]
    assert sent and all("Completed" not in (r.json or {}).get("statuses", []) for r in sent)
