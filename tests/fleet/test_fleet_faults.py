"""The fleet on its bad days, against a real redis-server: each numbered fault of issue 28.

Crashes, restarts, stalls, slow callbacks, rotations, rolling deploys, cross-replica
order, signed links and history in Redis. Each test fails on the code before its fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis
from multidict import CIMultiDict, CIMultiDictProxy

from svc_async import Client, HeaderAuth, RequestTimeout
from svc_async.fleet.budget import FleetPacer
from svc_async.fleet.keys import Keys, account_namespace
from svc_async.fleet.store import Store
from svc_async.testing import FakeService
from svc_async.webhooks import (
    EntryUpdate,
    JobStatusUpdate,
    WebhookReceiver,
    parse_delivery,
)

from ..conftest import load, serve_app
from ..redis_server import RedisServer

TOKEN = FakeService.DEFAULT_TOKEN
HERE = Path(__file__).parent


def _status(job_id: int, status: str = "Processed") -> JobStatusUpdate:
    update = parse_delivery({"id": job_id, "status": status})
    assert isinstance(update, JobStatusUpdate)
    return update


def _signed_entry() -> dict[str, Any]:
    """An entry update carrying a signed download link, as the service sends them."""
    for page in ("get-event-entries.response-0.json", "get-event-entries.response-1.json"):
        for entry in load(page):
            if entry.get("soundRecording"):
                return {"entry": entry, "eventId": 77}
    raise AssertionError("no fixture entry with a recording")


async def _eventually(check: Any, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        await asyncio.sleep(0.02)


async def _dump(url: str) -> bytes:
    """Every key of the fleet and what it holds, as bytes."""
    redis = aioredis.Redis.from_url(url)
    try:
        out = b""
        for key in await redis.keys("svc:*"):
            kind = await redis.type(key)
            out += key + b" "
            if kind == b"stream":
                out += repr(await redis.xrange(key)).encode()
            elif kind == b"string":
                out += await redis.get(key) or b""
            elif kind == b"hash":
                out += repr(await redis.hgetall(key)).encode()
        return out
    finally:
        await redis.aclose()


@asynccontextmanager
async def _served(*receivers: WebhookReceiver) -> AsyncIterator[list[str]]:
    """Each receiver serving on its own loopback port; their URLs."""
    async with contextlib.AsyncExitStack() as stack:
        urls = [await stack.enter_async_context(serve_app(r.app())) for r in receivers]
        yield urls


async def _post(url: str, key: str, body: dict[str, Any]) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/webhooks/svc?key={key}", json=body) as response,
    ):
        assert response.status == 204, await response.text()


def _headers(limit: int, remaining: int, reset: float) -> CIMultiDictProxy[str]:
    values = {
        "x-ratelimit-limit": str(limit),
        "x-ratelimit-remaining": str(remaining),
        "x-ratelimit-reset": str(reset),
    }
    return CIMultiDictProxy(CIMultiDict(values))


# ------------------------------------------------------------ 1. a crashed worker's leases


async def _leases(url: str, namespace: str) -> int:
    """Leases not lapsed yet, on the server's clock."""
    redis = aioredis.Redis.from_url(url)
    try:
        seconds, micros = await redis.time()
        now_ms = seconds * 1000 + micros // 1000
        return int(await redis.zcount(Keys(namespace).leases, f"({now_ms}", "+inf"))
    finally:
        await redis.aclose()


@contextlib.contextmanager
def _holder(url: str, namespace: str, calls: int) -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "fleet_holder.py"), url, namespace, str(calls)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "holding"
        yield proc
    finally:
        proc.kill()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.slow
async def test_a_killed_worker_gives_its_share_back_within_seconds(redis_url: str) -> None:
    with _holder(redis_url, "crash", 5) as victim:
        assert await _leases(redis_url, "crash") == 5
        await asyncio.sleep(4.0)  # longer than a lease: a living holder renews them
        assert await _leases(redis_url, "crash") == 5
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        killed = time.monotonic()
        while await _leases(redis_url, "crash"):
            assert time.monotonic() - killed < 4.5, "leases outlived their holder"
            await asyncio.sleep(0.05)
    # A survivor sees the service's next window: the whole budget is its own again.
    survivor = FleetPacer(Store(redis_url), "crash")
    await survivor.acquire(deadline=survivor.local.clock.now() + 5)
    survivor.release(_headers(10, 10, 60), 200)  # a reset: remaining back to the limit
    await survivor.flush()
    start = survivor.local.clock.now()
    for _ in range(10):
        await survivor.acquire(deadline=start + 1.0)  # none waits for a dead call
    await survivor.aclose()


# ------------------------------------------------------------ 2. the account, for sure


class _NoSecretsAuth:
    """A user-written auth that tells nothing about its credential."""

    def headers(self) -> dict[str, str]:
        return {"Authorization": "Bearer " + TOKEN}

    async def flow(self, rejected: Any = None) -> Any:
        return
        yield


async def test_a_fleet_client_must_know_its_account(redis_url: str) -> None:
    with pytest.raises(ValueError, match="account="):
        Client("http://fake.invalid", auth=_NoSecretsAuth(), fleet=redis_url)
    with pytest.raises(ValueError, match="account"):
        Client("http://fake.invalid", token="t", fleet=redis_url, account=" ")
    fake = FakeService(seed=1)
    for account in ("north", "south", "north"):
        async with Client(
            "http://fake.invalid",
            auth=_NoSecretsAuth(),
            transport=fake.transport(),
            fleet=redis_url,
            account=account,
        ) as svc:
            await svc.orgs.list()
            await svc._shared.fleet.flush()
    redis = aioredis.Redis.from_url(redis_url)
    try:
        budgets = sorted(await redis.keys("svc:*:budget"))
    finally:
        await redis.aclose()
    expected = sorted(
        Keys(account_namespace("account", a)).budget.encode() for a in ("north", "south")
    )
    assert budgets == expected  # one budget per named account, never one shared by all


async def test_a_header_auth_tells_its_account_by_its_value(redis_url: str) -> None:
    fake = FakeService(seed=1)
    for value in ("Bearer " + TOKEN, "Bearer other"):
        auth = HeaderAuth("Authorization", value)
        async with Client(
            "http://fake.invalid", auth=auth, transport=fake.transport(), fleet=redis_url
        ) as svc:
            with contextlib.suppress(Exception):
                await svc.orgs.list()
            await svc._shared.fleet.flush()
    redis = aioredis.Redis.from_url(redis_url)
    try:
        assert len(await redis.keys("svc:*:budget")) == 2
    finally:
        await redis.aclose()


# ------------------------------------------------------------ 3. no flapping after restarts


@pytest.mark.slow
async def test_each_restart_under_load_is_one_warning_and_one_recovery(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "svc_async")
    fake = FakeService(seed=1, rate_limit=(100_000, 60.0))
    failed = 0
    async with Client(
        "http://fake.invalid", token=TOKEN, transport=fake.transport(), fleet=redis_server.url
    ) as svc:
        store = svc._shared.fleet.store
        store.retry_every = 0.1
        stop = asyncio.Event()

        async def load() -> None:
            nonlocal failed
            while not stop.is_set():
                try:
                    await svc.orgs.list()
                except Exception:
                    failed += 1
                await asyncio.sleep(0.002)

        workers = [asyncio.create_task(load()) for _ in range(8)]
        for _ in range(3):
            await asyncio.sleep(0.4)
            redis_server.stop()
            await _eventually(lambda: not store.up, 5)
            await asyncio.sleep(0.3)
            redis_server.start()
            await _eventually(lambda: store.up, 5)
        await asyncio.sleep(1.0)  # the pool's connections from before are used again
        stop.set()
        await asyncio.gather(*workers)
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in lines] == ["WARNING", "INFO"] * 3, lines
    assert failed == 0 and store.outages == 3


# ------------------------------------------------------------ 4. deadlines and a slow store


@pytest.mark.slow
async def test_a_stalled_store_fails_no_call_with_a_short_deadline(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "svc_async")
    fake = FakeService(seed=1)
    async with Client(
        "http://fake.invalid", token=TOKEN, transport=fake.transport(), fleet=redis_server.url
    ) as svc:
        await svc.orgs.list()
        assert redis_server.process is not None
        redis_server.process.send_signal(signal.SIGSTOP)  # the store stops answering
        try:
            loop = asyncio.get_running_loop()
            for _ in range(3):
                started = loop.time()
                await svc.orgs.list(timeout=0.3)  # waits at most half its time for the store
                assert loop.time() - started < 0.3
            await _eventually(lambda: not svc._shared.fleet.store.up, 5)  # its own timeout
        finally:
            redis_server.process.send_signal(signal.SIGCONT)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "TimeoutError" in warnings[0].getMessage()


async def test_a_caller_out_of_time_never_marks_the_store_down(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "svc_async")
    fake = FakeService(seed=1)
    async with Client(
        "http://fake.invalid", token=TOKEN, transport=fake.transport(), fleet=redis_url
    ) as svc:
        await svc.orgs.list()
        for _ in range(20):
            with contextlib.suppress(RequestTimeout):
                await svc.orgs.list(timeout=0.0005)  # gone before the store can answer
        assert svc._shared.fleet.store.up
        await svc.orgs.list()
    assert not caplog.records


# ------------------------------------------------------------ 5. a live replica keeps its delivery


async def test_a_slow_callback_of_a_live_replica_runs_once(redis_url: str) -> None:
    runs: list[str] = []

    def replica(name: str) -> WebhookReceiver:
        receiver = WebhookReceiver("s", fleet=redis_url, claim_after=0.3)

        @receiver.on_status_update
        async def slow(update: JobStatusUpdate) -> None:
            runs.append(name)
            await asyncio.sleep(1.5)  # five times claim_after

        return receiver

    a, b = replica("a"), replica("b")
    async with a, b:
        assert await a.accept(_status(5))
        await _eventually(lambda: runs)
        await asyncio.sleep(1.8)
        await asyncio.gather(a.drain(5), b.drain(5))
    assert len(runs) == 1, runs


# ------------------------------------------------------------ 6. a secret rotation


async def test_replicas_mid_rotation_act_as_one(redis_url: str) -> None:
    runs: list[tuple[str, int]] = []

    def replica(name: str, secret: str | list[str]) -> WebhookReceiver:
        receiver = WebhookReceiver(secret, fleet=redis_url, claim_after=1.0)
        receiver.on_status_update(lambda u: runs.append((name, u.job_id)))
        return receiver

    old, both, new = replica("old", "s1"), replica("both", ["s1", "s2"]), replica("new", "s2")
    async with old, both, new, _served(old, both, new) as (old_url, both_url, new_url):
        for job_id in range(1, 6):  # the service still sends s1: old and both get each
            for url in (old_url, both_url):
                await _post(url, "s1", {"id": job_id, "status": "Processed"})
        for job_id in range(6, 11):  # then s2: both and new get each
            for url in (both_url, new_url):
                await _post(url, "s2", {"id": job_id, "status": "Processed"})
        await _eventually(lambda: len(runs) >= 10)
        await asyncio.sleep(0.3)
        await asyncio.gather(*(r.drain(5) for r in (old, both, new)))
    assert sorted(job for _, job in runs) == list(range(1, 11)), runs


# ------------------------------------------------------------ 7. no signed link in Redis


async def test_signed_links_are_unreadable_in_redis(redis_url: str) -> None:
    got: list[EntryUpdate] = []
    body = _signed_entry()
    link = body["entry"]["soundRecording"]["downloadURL"]
    async with WebhookReceiver("s", fleet=redis_url) as front:  # takes, runs nothing
        async with _served(front) as (url,):
            await _post(url, "s", body)
        dump = await _dump(redis_url)
        assert b"deliveries:entry" in dump  # waiting in the stream, sealed
        for secret in (b"X-Amz-Signature", b"0123456789abcdef", b"amazonaws", b"Spice"):
            assert secret not in dump, secret
        async with WebhookReceiver("s", fleet=redis_url) as worker:
            worker.on_entry_update(got.append)
            await _eventually(lambda: got)
            await worker.drain(5)
    assert got[0].entry.sound_recording is not None
    assert got[0].entry.sound_recording.download_url == link  # whole, to the replica


# ------------------------------------------------------------ 8. history does not stay


async def test_handled_deliveries_leave_nothing_without_a_ttl(redis_url: str) -> None:
    runs: list[int] = []
    async with WebhookReceiver("s", fleet=redis_url, claim_after=1.0) as receiver:
        receiver.on_status_update(lambda u: runs.append(u.job_id))
        for job_id in range(1, 301):
            await receiver.accept(_status(job_id))
        await _eventually(lambda: len(runs) == 300)
        await receiver.drain(5)
        await asyncio.sleep(0.2)
        redis = aioredis.Redis.from_url(redis_url)
        try:
            streams = await redis.keys("svc:*:deliveries:*")
            assert streams and [await redis.xlen(s) for s in streams] == [0] * len(streams)
            keys = await redis.keys("svc:*")
            ttls = {key: await redis.pttl(key) for key in keys}
        finally:
            await redis.aclose()
    assert all(ttl > 0 for ttl in ttls.values()), {k: t for k, t in ttls.items() if t <= 0}


# ------------------------------------------------------------ 9. a rolling deploy


async def test_a_replica_never_settles_a_delivery_it_cannot_run(redis_url: str) -> None:
    statuses: list[str] = []
    entries: list[int] = []
    old = WebhookReceiver("s", fleet=redis_url, claim_after=1.0)  # before the deploy
    old.on_status_update(lambda u: statuses.append("old"))
    new = WebhookReceiver("s", fleet=redis_url, claim_after=1.0)
    new.on_status_update(lambda u: statuses.append("new"))
    new.on_entry_update(lambda u: entries.append(u.entry.id))
    body = _signed_entry()
    async with old, new:
        await asyncio.sleep(0.3)  # both read their streams
        for n in range(1, 9):
            entry = {**body["entry"], "id": 1000 + n}
            await (old if n % 2 else new).accept(parse_delivery({**body, "entry": entry}))
            await old.accept(_status(n))
        await _eventually(lambda: len(entries) == 8 and len(statuses) == 8)
        await asyncio.gather(old.drain(5), new.drain(5))
    assert sorted(entries) == [1000 + n for n in range(1, 9)]


# ------------------------------------------------------------ 10. order per job


async def test_a_jobs_deliveries_run_in_order_across_replicas(redis_url: str) -> None:
    events: list[tuple[str, int, str, str]] = []

    def replica(name: str) -> WebhookReceiver:
        receiver = WebhookReceiver("s", fleet=redis_url, claim_after=2.0)

        @receiver.on_status_update
        async def record(update: JobStatusUpdate) -> None:
            status = str(update.status)
            events.append(("start", update.job_id, status, name))
            await asyncio.sleep(0.15 if status == "Matching" else 0.0)
            events.append(("end", update.job_id, status, name))

        return receiver

    a, b = replica("a"), replica("b")
    async with a, b:
        await asyncio.sleep(0.3)
        for job_id in range(1, 9):
            await a.accept(_status(job_id, "Matching"))
            await a.accept(_status(job_id, "Processed"))
        await _eventually(lambda: len(events) == 32)
    for job_id in range(1, 9):
        mine = [e for e in events if e[1] == job_id]
        matching_end = mine.index(("end", job_id, "Matching", _who(mine, "Matching")))
        processed_start = mine.index(("start", job_id, "Processed", _who(mine, "Processed")))
        assert matching_end < processed_start, mine
    assert {e[3] for e in events} == {"a", "b"}  # both replicas ran some


def _who(events: Sequence[tuple[str, int, str, str]], status: str) -> str:
    return next(e[3] for e in events if e[2] == status)


# ------------------------------------------------------------ wake-ups for a client alone


async def test_a_fleet_client_alone_wakes_on_its_accounts_deliveries(redis_url: str) -> None:
    fake = FakeService(seed=1)
    async with (
        WebhookReceiver("s", fleet=redis_url, account="acme") as replica,
        Client(
            "http://fake.invalid",
            token=TOKEN,
            transport=fake.transport(),
            fleet=redis_url,
            account="acme",
        ) as svc,
    ):
        assert svc.webhooks is not None
        sub = svc.webhooks.subscribe(42)
        await asyncio.wait_for(svc.webhooks.ready.wait(), 5)
        await replica.accept(_status(42))
        await asyncio.wait_for(sub.event.wait(), 5)
        svc.webhooks.unsubscribe(sub)


# ------------------------------------------------------------ 11. what a fleet imports


@pytest.mark.slow
def test_a_fleet_loads_of_opentelemetry_only_what_redis_py_loads() -> None:
    report = "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'svc_async._pipeline.tracing'))))"
    redis_alone = "import sys, redis.asyncio\n" + report
    fleet = (
        "import sys, asyncio\n"
        "from svc_async import Client, MockTransport, json_response\n"
        "async def main():\n"
        "    t = MockTransport(lambda r: json_response([]))\n"
        "    async with Client('https://a.example', token='t', transport=t,\n"
        "                      fleet='redis://127.0.0.1:9/0') as svc:\n"
        "        await svc.seasons.list()\n"
        "asyncio.run(main())\n" + report
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        ).stdout
        for code in (redis_alone, fleet)
    ]
    assert outs[0] == outs[1]  # nothing beyond redis-py's own imports
    assert "svc_async._pipeline.tracing" not in outs[1]


# ------------------------------------------------------------ an empty restart loses nothing


@pytest.mark.slow
async def test_deliveries_lost_by_an_empty_restart_are_added_again(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "svc_async")
    runs: list[int] = []
    front = WebhookReceiver("s", fleet=redis_server.url, claim_after=0.3)  # runs nothing
    async with front:
        front._backend.store.retry_every = 0.05
        for job_id in (1, 2, 3):
            assert await front.accept(_status(job_id))
        redis_server.stop()
        redis_server.start()  # empty: the stream and its three entries are gone
        await _eventually(lambda: "added again" in caplog.text, 10)
        async with WebhookReceiver("s", fleet=redis_server.url, claim_after=0.3) as worker:
            worker.on_status_update(lambda u: runs.append(u.job_id))
            await _eventually(lambda: len(runs) == 3, 10)
            await worker.drain(5)
    assert sorted(runs) == [1, 2, 3]


async def test_a_delivery_lost_in_a_failover_is_added_again(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A failover can lose the last writes while older keys survive on the new master: the
    # job's order says "not settled" and its entry is gone from the stream.
    caplog.set_level(logging.INFO, "svc_async")
    runs: list[int] = []
    async with WebhookReceiver("s", fleet=redis_url, claim_after=0.3) as front:
        assert await front.accept(_status(1, "Matching"))
        redis = aioredis.Redis.from_url(redis_url)
        try:
            (stream,) = await redis.keys("svc:*:deliveries:status")
            (entry_id, _), *_ = await redis.xrange(stream)
            assert await redis.xdel(stream, entry_id) == 1  # lost; the order hash is not
        finally:
            await redis.aclose()
        await _eventually(lambda: "added again" in caplog.text, 10)
        async with WebhookReceiver("s", fleet=redis_url, claim_after=0.3) as worker:
            worker.on_status_update(lambda u: runs.append(u.job_id))
            await _eventually(lambda: runs, 10)
            await worker.drain(5)
    assert runs == [1]
