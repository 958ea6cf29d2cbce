"""``svc.with_raw_response``: each call's own reply, over a real loopback FakeService."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from aiohttp import web

from svc_async import Client, Reply, VerificationJob
from svc_async.testing import FakeService

from ..conftest import serve_app

TOKEN = FakeService.DEFAULT_TOKEN


async def test_a_reply_holds_the_model_and_its_own_response() -> None:
    async with FakeService(seed=1, rate_limit=(100, 60.0)) as fake, fake.serve() as url:
        async with Client(url, token=TOKEN) as svc:
            orgs = await svc.orgs.list()
            reply = await svc.with_raw_response.orgs.list()
            assert isinstance(reply, Reply)
            assert reply.data == orgs  # what the plain call returns
            assert reply.status == 200 and reply.attempts == 1 and reply.elapsed > 0
            assert reply.headers is not None and "x-ratelimit-remaining" in reply.headers
            assert reply.rate_limit is not None and reply.rate_limit.limit == 100
            assert reply.request_id is not None and re.match(
                r"^[0-9a-f]{12}-\d+$", reply.request_id
            )


async def test_concurrent_calls_each_tell_their_own_budget() -> None:
    async with FakeService(seed=1, rate_limit=(100, 60.0)) as fake, fake.serve() as url:
        async with Client(url, token=TOKEN, rate_limit=False) as svc:
            replies = await asyncio.gather(
                *(svc.with_raw_response.seasons.list() for _ in range(10))
            )
    remaining = sorted(r.rate_limit.remaining for r in replies if r.rate_limit is not None)
    assert remaining == list(range(90, 100))  # one answer each, none shared
    assert len({r.request_id for r in replies}) == 10


async def test_a_retried_call_counts_its_attempts(no_backoff: Any) -> None:
    answers = [503, 200]

    async def handle(request: web.Request) -> web.Response:
        status = answers.pop(0) if answers else 200
        return web.json_response([] if status == 200 else {"e": 1}, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    async with serve_app(app) as url, Client(url, token="t") as svc:
        reply = await svc.with_raw_response.seasons.list()
    assert (reply.data, reply.status, reply.attempts) == ([], 200, 2)


async def test_a_get_reply_and_a_views_own_raw_calls() -> None:
    async with FakeService(seed=1) as fake, fake.serve() as url:
        async with Client(url, token=TOKEN) as svc:
            job_id = (await svc.jobs.search(limit=1)).jobs[0].id
            plain = await svc.jobs.get(job_id)
            reply = await svc.with_raw_response.jobs.get(job_id)
            assert isinstance(reply.data, VerificationJob) and reply.data == plain
            view = svc.with_options(timeout=7)
            assert view.with_raw_response is not svc.with_raw_response
            assert view.with_raw_response.jobs.get is not svc.with_raw_response.jobs.get


async def test_iterators_are_not_on_the_view() -> None:
    async with Client("https://v.example", token="t") as svc:
        with pytest.raises(AttributeError, match="iterator has no single response"):
            svc.with_raw_response.events.iter  # noqa: B018


async def test_a_wait_describes_the_last_get_it_made() -> None:
    async with FakeService(seed=1) as fake, fake.serve() as url:
        async with Client(url, token=TOKEN) as svc:
            done = (await svc.jobs.search(statuses=["Processed"], limit=1)).jobs[0]
            reply = await svc.with_raw_response.jobs.wait(done.id, timeout=10)
    assert reply.data.id == done.id and reply.status == 200 and reply.request_id
