"""A failing webhook callback does not lose its delivery.

A delivery is seen (a later equal one is a duplicate) from the moment it is taken, but
only stays seen once its callbacks succeeded: failed callbacks are run again with
backoff, and a delivery given up is forgotten so the service's redelivery is handled.
The dedupe window (``MemoryLedger``) and the retrying (``MemoryBackend``) sit behind
small seams a shared store can fill; their waits are injected, so nothing here sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson
import pytest

from svc_async import RetryPolicy
from svc_async.webhooks import (
    DEFAULT_CALLBACK_RETRY,
    DEFAULT_PATH,
    JobStatusUpdate,
    WebhookReceiver,
    parse_delivery,
)
from svc_async.webhooks.core import DeliveryKey, MemoryLedger, delivery_key
from svc_async.webhooks.delivery import Callbacks, DeliveryJob, MemoryBackend, ReceiverStats
from svc_async.webhooks.waiters import Waiters

from ..conftest import load, serve_app

SECRET = "delivery-test-secret"
NO_WAIT = RetryPolicy(attempts=3, wait_initial=0, wait_max=0)
ENTRY = load("get-event-entries.response-0.json")[0]


@asynccontextmanager
async def serving(receiver: WebhookReceiver) -> AsyncIterator[str]:
    async with serve_app(receiver.app()) as base:
        yield f"{base}{DEFAULT_PATH}?key={SECRET}"


async def post(url: str, payload: dict[str, Any]) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=orjson.dumps(payload)) as r,
    ):
        return r.status


class Flaky:
    """A callback that raises its first ``failures`` calls, then records the update."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.handled: list[Any] = []

    def __call__(self, update: Any) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise RuntimeError(f"callback down (call {self.calls})")
        self.handled.append(update)


# ------------------------------------------------------------------ over loopback


async def test_a_callback_that_fails_then_recovers_gets_the_delivery_once() -> None:
    receiver = WebhookReceiver(SECRET, callback_retry=NO_WAIT)
    flaky = Flaky(failures=2)
    receiver.on_status_update(flaky)
    async with serving(receiver) as url:
        assert await post(url, {"id": 5, "status": "Processed"}) == 204  # queued
        await receiver.drain()
        assert await post(url, {"id": 5, "status": "Processed"}) == 204  # a redelivery
        await receiver.drain()
    assert flaky.calls == 3 and flaky.handled == [JobStatusUpdate(job_id=5, status="Processed")]
    stats = receiver.stats
    assert (stats.callback_errors, stats.retries, stats.given_up, stats.duplicates) == (2, 2, 0, 1)


async def test_a_delivery_given_up_is_handled_again_when_the_service_redelivers() -> None:
    """The issue: answered 204, its callback failed, and the redelivery was dropped."""
    receiver = WebhookReceiver(SECRET, callback_retry=NO_WAIT)
    flaky = Flaky(failures=3)  # every attempt of the first delivery fails
    receiver.on_status_update(flaky)
    async with serving(receiver) as url:
        assert await post(url, {"id": 6, "status": "Processed"}) == 204
        await receiver.drain()
        assert receiver.stats.given_up == 1 and flaky.handled == []
        assert await post(url, {"id": 6, "status": "Processed"}) == 204
        await receiver.drain()
    assert [u.job_id for u in flaky.handled] == [6]
    assert receiver.stats.duplicates == 0 and receiver.stats.dispatched == 2


async def test_a_redelivery_while_the_first_is_in_hand_is_a_duplicate() -> None:
    receiver = WebhookReceiver(SECRET, callback_retry=NO_WAIT)
    release = asyncio.Event()
    calls: list[int] = []

    @receiver.on_status_update
    async def slow(update: JobStatusUpdate) -> None:
        calls.append(update.job_id)
        await release.wait()

    async with serving(receiver) as url:
        assert await post(url, {"id": 7, "status": "Processed"}) == 204
        assert await post(url, {"id": 7, "status": "Processed"}) == 204
        release.set()
        await receiver.drain()
    assert calls == [7] and receiver.stats.duplicates == 1


async def test_only_the_callbacks_that_failed_are_run_again() -> None:
    receiver = WebhookReceiver(SECRET, callback_retry=NO_WAIT)
    steady, flaky = Flaky(failures=0), Flaky(failures=1)
    receiver.on_entry_update(steady)
    receiver.on_entry_update(flaky)
    receiver.dispatch(parse_delivery({"entry": ENTRY, "eventId": 18}))
    await receiver.drain()
    assert (steady.calls, flaky.calls) == (1, 2)
    assert len(steady.handled) == len(flaky.handled) == 1


async def test_a_retried_delivery_keeps_its_place_before_later_news_of_the_same_job() -> None:
    receiver = WebhookReceiver(SECRET, callback_retry=NO_WAIT)
    order: list[str] = []
    failed = False

    @receiver.on_status_update
    def record(update: JobStatusUpdate) -> None:
        nonlocal failed
        if update.job_id == 1 and not failed:
            failed = True
            raise RuntimeError("first try fails")
        order.append(f"{update.job_id}:{update.status}")

    for job_id, status in ((1, "Processed"), (1, "Submitted"), (2, "Processed")):
        receiver.dispatch(JobStatusUpdate(job_id=job_id, status=status))
    await receiver.drain()
    assert order.index("1:Processed") < order.index("1:Submitted")
    assert sorted(order) == ["1:Processed", "1:Submitted", "2:Processed"]


async def test_aclose_gives_up_a_delivery_still_retrying_and_forgets_it() -> None:
    waits = RetryPolicy(attempts=5, wait_initial=60, wait_jitter=0)
    receiver = WebhookReceiver(SECRET, callback_retry=waits)
    flaky = Flaky(failures=1)
    receiver.on_status_update(flaky)
    update = JobStatusUpdate(job_id=3, status="Processed")
    assert receiver.dispatch(update)
    for _ in range(5):
        await asyncio.sleep(0)  # the first attempt runs and fails; a 60 s wait starts
    assert flaky.calls == 1 and receiver.pending == 1
    await receiver.aclose(timeout=0)
    assert receiver.pending == 0 and receiver.stats.given_up == 1
    assert receiver.dispatch(update)  # forgotten: taken again (a new receiver would too)
    assert receiver.stats.duplicates == 0


async def test_waiters_wake_once_even_when_callbacks_fail() -> None:
    receiver = WebhookReceiver(SECRET, callback_retry=NO_WAIT)
    receiver.on_status_update(Flaky(failures=1))
    sub = receiver.subscribe(4)
    assert await receiver.accept(JobStatusUpdate(job_id=4, status="Processed"))
    assert sub.event.is_set() and sub.update is not None
    await receiver.drain()
    receiver.unsubscribe(sub)


async def test_the_receiver_waits_the_default_backoff_on_its_clock() -> None:
    clock = RecordingClock()
    receiver = WebhookReceiver(SECRET, clock=clock)
    flaky = Flaky(failures=10)
    receiver.on_status_update(flaky)
    receiver.dispatch(JobStatusUpdate(job_id=1, status="Processed"))
    await receiver.drain()
    assert flaky.calls == 5 and receiver.stats.given_up == 1
    ceilings = [1.0, 2.0, 4.0, 8.0]  # full jitter: each wait up to its ceiling
    assert len(clock.slept) == 4
    assert all(0 <= w <= c for w, c in zip(clock.slept, ceilings, strict=True))
    with pytest.raises(TypeError, match="clock"):
        WebhookReceiver(SECRET, clock=object())  # type: ignore[arg-type]


def test_the_default_retry_is_bounded_and_checked() -> None:
    assert DEFAULT_CALLBACK_RETRY.attempts == 5
    total = sum(DEFAULT_CALLBACK_RETRY.ceiling(n) for n in range(1, 5))
    assert total == 15.0  # 1 + 2 + 4 + 8 s at most, within the receiver's lifetime
    with pytest.raises(TypeError, match="callback_retry"):
        WebhookReceiver(SECRET, callback_retry=3)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the dispatcher


class RecordingClock:
    """A clock whose sleeps return at once and are written down."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def now(self) -> float:
        return sum(self.slept)

    def wall(self) -> float:
        return 1e9 + self.now()

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


async def test_the_dispatcher_waits_the_policys_backoff_on_its_clock() -> None:
    clock = RecordingClock()
    waited = clock.slept
    finished: list[bool] = []

    policy = RetryPolicy(attempts=4, wait_initial=0.5, wait_max=1.5, wait_jitter=0)

    class Target(MemoryBackend):
        def __init__(self, succeeds_at: int) -> None:
            super().__init__(Callbacks(ReceiverStats(), policy), Waiters(), clock=clock)
            self.succeeds_at = succeeds_at

        async def attempt(self, job: DeliveryJob) -> bool:
            return job.attempts == self.succeeds_at

        async def finish(self, job: DeliveryJob, done: bool) -> None:
            finished.append(done)

    dispatcher = Target(4)
    update = JobStatusUpdate(job_id=1, status="Processed")
    dispatcher.run(DeliveryJob(key=delivery_key(update), update=update, todo=[print]))
    await dispatcher.drain()
    assert waited == [0.5, 1.0, 1.5] and finished == [True]

    waited.clear()
    dispatcher = Target(0)  # never succeeds
    dispatcher.run(DeliveryJob(key=delivery_key(update), update=update, todo=[print]))
    await dispatcher.drain()
    assert waited == [0.5, 1.0, 1.5] and finished == [True, False]  # 4 attempts, given up


# ------------------------------------------------------------------ the ledger


def key(slot: str, version: str = "") -> DeliveryKey:
    return DeliveryKey(slot=slot, version=version, subject=slot)


def test_the_memory_ledger_claims_and_releases() -> None:
    ledger = MemoryLedger(size=2)
    assert ledger.claim(key("a")) and not ledger.claim(key("a"))  # in hand: a duplicate
    assert not ledger.claim(key("a"))  # handled (the claim stands for it): a duplicate
    ledger.release(key("a"))
    assert ledger.claim(key("a"))  # given up: taken again
    assert ledger.claim(key("e", "v1")) and ledger.claim(key("e", "v2"))  # a new version
    ledger.release(key("e", "v1"))  # an older version's give-up leaves the newer one
    assert not ledger.claim(key("e", "v2"))
    assert len(ledger) == 2  # bounded: "a" was the oldest and went
    assert MemoryLedger(size=0).claim(key("a")) and MemoryLedger(size=0).claim(key("a"))
    with pytest.raises(ValueError, match="dedupe_size"):
        MemoryLedger(size=-1)


def test_delivery_keys_are_strings_a_shared_store_can_hold() -> None:
    status = delivery_key(JobStatusUpdate(job_id=2**70, status="Processed"))
    assert status == DeliveryKey(slot=f"status:{2**70}:Processed", subject=f"job:{2**70}")
    entry = delivery_key(parse_delivery({"entry": ENTRY, "eventId": 18}))
    assert entry.slot == entry.subject == "entry:event:18:283" and len(entry.version) == 32
