"""Webhook replicas on one fleet, against a real redis-server: in one process and in three."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from svc_async.webhooks import JobStatusUpdate, WebhookReceiver, parse_delivery

from ..redis_server import free_port

SCRIPT = Path(__file__).with_name("fleet_replica.py")


def _status(job_id: int, status: str = "Processed") -> JobStatusUpdate:
    update = parse_delivery({"id": job_id, "status": status})
    assert isinstance(update, JobStatusUpdate)
    return update


async def test_a_delivery_taken_by_two_replicas_runs_its_callbacks_once(redis_url: str) -> None:
    runs: list[tuple[str, int]] = []
    replicas = [WebhookReceiver("s", fleet=redis_url, claim_after=0.5) for _ in range(2)]
    for name, receiver in zip("ab", replicas, strict=True):
        receiver.on_status_update(lambda u, name=name: runs.append((name, u.job_id)))
    async with replicas[0], replicas[1]:
        taken = [await r.accept(_status(7)) for r in replicas]
        assert taken == [True, False]  # the second replica sees a duplicate
        for _ in range(100):
            if runs:
                break
            await asyncio.sleep(0.02)
        await asyncio.gather(*(r.drain(5) for r in replicas))
    assert [job for _, job in runs] == [7]


async def test_a_status_update_wakes_subscribers_in_every_receiver(redis_url: str) -> None:
    async with (
        WebhookReceiver("s", fleet=redis_url) as replica,
        WebhookReceiver("s", fleet=redis_url) as waiter,
    ):
        sub = waiter.subscribe(42)
        await asyncio.wait_for(waiter._backend.wake.ready.wait(), 5)
        await replica.accept(_status(42))
        await asyncio.wait_for(sub.event.wait(), 5)
        assert sub.update == _status(42)
        waiter.unsubscribe(sub)


async def test_another_accounts_updates_never_wake_this_ones_waiters(redis_url: str) -> None:
    async with (
        WebhookReceiver("other-secret", fleet=redis_url) as other,
        WebhookReceiver("s", fleet=redis_url) as replica,
        WebhookReceiver("s", fleet=redis_url) as waiter,
    ):
        theirs, ours = waiter.subscribe(42), waiter.subscribe(43)
        await asyncio.wait_for(waiter._backend.wake.ready.wait(), 5)
        await other.accept(_status(42, "Failed"))  # job 42 of another account
        await replica.accept(_status(43))  # published after it: arrives after it
        await asyncio.wait_for(ours.event.wait(), 5)
        assert not theirs.event.is_set()
        waiter.unsubscribe(theirs)
        waiter.unsubscribe(ours)


async def test_a_receiver_without_callbacks_never_takes_a_delivery(redis_url: str) -> None:
    # A waiter's receiver (subscribed, no callbacks) reading the stream first would take
    # the delivery and run nothing: the replica's callback would never run.
    runs: list[int] = []
    async with WebhookReceiver("s", fleet=redis_url) as waiter:
        sub = waiter.subscribe(8)
        await asyncio.wait_for(waiter._backend.wake.ready.wait(), 5)
        await asyncio.sleep(0.05)  # its reader, were there one, would now block first
        async with WebhookReceiver("s", fleet=redis_url) as replica:
            replica.on_status_update(lambda u: runs.append(u.job_id))
            assert await replica.accept(_status(8))
            await asyncio.wait_for(sub.event.wait(), 5)  # the waiter still wakes
            for _ in range(100):
                if runs:
                    break
                await asyncio.sleep(0.01)
            await replica.drain(5)
        waiter.unsubscribe(sub)
    assert runs == [8]


async def test_output_file_links_never_reach_redis(redis_url: str) -> None:
    import redis.asyncio as aioredis

    body = {
        "id": 5,
        "verificationJobId": 9,
        "status": "Completed",
        "downloadURL": "https://files.example/out.mp3?X-Amz-Signature=deadbeefcafe",
        "operation": "mute",
        "fileType": "audio",
    }
    seen: list[int] = []
    async with WebhookReceiver("s", fleet=redis_url) as receiver:
        receiver.on_output_file(lambda u: seen.append(u.job_id))
        assert await receiver.accept(parse_delivery(body))
        await receiver.drain(5)
    assert seen == [9]
    redis = aioredis.Redis.from_url(redis_url)
    try:
        dump = b""
        for key in await redis.keys("*"):
            kind = await redis.type(key)
            dump += key
            if kind == b"stream":
                dump += repr(await redis.xrange(key)).encode()
            elif kind == b"string":
                dump += await redis.get(key) or b""
    finally:
        await redis.aclose()
    assert b"deadbeefcafe" not in dump and b"files.example" not in dump


@asynccontextmanager
async def _processes(*commands: tuple[str, ...]) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """Start one ``fleet_replica.py`` process per command at once (their start-ups overlap);
    yield them once each has printed ``ready``; kill those still running at the end."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs: list[asyncio.subprocess.Process] = []
    try:
        for args in commands:
            procs.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    str(SCRIPT),
                    *args,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    env=env,
                )
            )
        for proc in procs:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line.strip() == b"ready", line
        yield procs
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()


async def _post(port: int, job_id: int) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"http://127.0.0.1:{port}/webhooks/svc?key=s",
            json={"id": job_id, "status": "Processed"},
        ) as response,
    ):
        assert response.status == 204


def _runs(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.slow
async def test_two_replica_processes_and_a_waiter_in_a_third(
    redis_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    ports = [free_port(), free_port()]
    async with _processes(
        ("replica", redis_url, str(ports[0]), str(log), "666"),
        ("replica", redis_url, str(ports[1]), str(log), "666"),
        ("waiter", redis_url, "101", "102"),
    ) as (first, second, waiter):
        replicas = {str(first.pid): first, str(second.pid): second}
        # A delivery to either replica wakes a waiter in a third process (it never polls:
        # only the wake-up reaches it; the bound is loose for a loaded machine, the latency
        # itself is a benchmark's to measure).
        for job_id, port in ((101, ports[0]), (102, ports[1])):
            sent = time.time()
            await _post(port, job_id)
            assert waiter.stdout is not None
            woke = float(await asyncio.wait_for(waiter.stdout.readline(), 10))
            assert woke - sent < 2.0, (job_id, woke - sent)
        # The same delivery sent to both runs its callbacks once.
        await _post(ports[0], 200)
        await _post(ports[1], 200)
        # A replica killed mid-callback: the other takes the delivery over.
        await _post(ports[0], 666)
        for _ in range(500):
            if any(run[1:] == ["666", "started"] for run in _runs(log)):
                break
            await asyncio.sleep(0.01)
        starts = [run for run in _runs(log) if run[1:] == ["666", "started"]]
        hung = replicas[starts[0][0]]  # whichever replica read it first hangs in it
        hung.kill()
        await hung.wait()
        for _ in range(500):  # every callback done (a loaded machine may be slow in any)
            if {job for *_, job in _runs(log)} >= {"101", "102", "200", "666"}:
                break
            await asyncio.sleep(0.02)
    runs = _runs(log)
    done = [run for run in runs if len(run) == 2]
    assert sorted(job for _, job in done) == ["101", "102", "200", "666"], runs
    took_over = [pid for pid, job in done if job == "666"]
    assert starts and took_over and took_over[0] != starts[0][0], runs


async def test_with_the_store_away_deliveries_are_handled_here_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    caplog.set_level(logging.WARNING, "svc_async")
    runs: list[int] = []
    async with WebhookReceiver("s", fleet=f"redis://127.0.0.1:{free_port()}/0") as receiver:
        receiver.on_status_update(lambda u: runs.append(u.job_id))
        sub = receiver.subscribe(3)
        for job_id in (3, 4, 3):
            await receiver.accept(_status(job_id))
        await receiver.drain(5)
        assert sub.event.is_set()  # this process's waiters still wake
    assert runs == [3, 4]  # deduplicated in this process meanwhile
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "unavailable" in warnings[0].getMessage()


async def test_dispatch_in_a_fleet_settles_in_the_background(redis_url: str) -> None:
    # ``dispatch`` cannot wait for the store: the update counts as taken, and the store's
    # verdict drops the duplicate a moment later.
    runs: list[int] = []
    async with WebhookReceiver("s", fleet=redis_url, claim_after=0.5) as receiver:
        receiver.on_status_update(lambda u: runs.append(u.job_id))
        assert receiver.dispatch(_status(9))
        assert receiver.dispatch(_status(9))  # taken, then dropped there
        for _ in range(250):
            if runs and receiver.stats.duplicates:
                break
            await asyncio.sleep(0.02)
        await receiver.drain(5)
    assert runs == [9] and receiver.stats.duplicates == 1
