"""Webhook replicas acting as one: a shared dedupe ledger and a Redis Stream of deliveries.

``FleetDeliveries`` gives a ``WebhookReceiver`` the two seams it talks to:

* ``ledger`` (``DeliveryLedger``): a delivery slot is claimed with one atomic script
  (``SET`` unless the same version is there), so the same delivery sent to two replicas
  is taken by one; ``release`` forgets it when its callbacks were given up.
* ``dispatcher`` (``DeliveryDispatcher``): a claimed delivery is added to a Stream that
  every replica reads through one consumer group; whichever reads it runs its callbacks
  (retried as the receiver's policy says) and acknowledges it when they are done or
  given up. Entries a replica read but never acknowledged (it crashed mid-callback) are
  taken over by another with ``XAUTOCLAIM`` once idle for ``claim_after`` seconds.

Output-file deliveries carry a signed download link, which is never written to Redis:
they are deduplicated fleet-wide but run on the replica that received them. A status
update is also published (``wake``) so ``jobs.wait`` wakes in every process. With the
store away, deliveries are handled locally and deduplicated in this process only
(another replica may run one again), with the store's one warning.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from .._webhook_delivery import (
    Attempt,
    DeliveryJob,
    DeliveryKey,
    Finish,
    LocalDispatcher,
    MemoryLedger,
)
from .._webhook_payloads import Delivery, EntryUpdate, JobStatusUpdate, parse_delivery
from ..clock import Clock
from ..converter import unstructure
from ..errors import WebhookPayloadError
from ..retry import RetryPolicy
from .store import Store, cancel_and_wait
from .wake import JobWake

logger = logging.getLogger(__name__)

_SEEN_TTL_MS = 7 * 24 * 3600 * 1000
"""How long a handled delivery is remembered fleet-wide (the service retries for less)."""

_GROUP = "callbacks"
_BLOCK_MS = 200

_CLAIM = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""


def _wire(update: Delivery) -> bytes | None:
    """The delivery as the service sent it (None: an output file, kept out of Redis)."""
    if isinstance(update, JobStatusUpdate):
        return orjson.dumps({"id": update.job_id, "status": str(update.status)})
    if isinstance(update, EntryUpdate):
        scope = {"eventId": update.event_id} if update.event_id else {"seasonId": update.season_id}
        return orjson.dumps({"entry": unstructure(update.entry), **scope})
    return None


class FleetLedger:
    """The dedupe window of every replica, in Redis (``DeliveryLedger``); this process's
    own window (``local``) answers while the store is away."""

    def __init__(self, store: Store, namespace: str, local: MemoryLedger | None = None) -> None:
        self.store = store
        self.local = local or MemoryLedger()
        self._prefix = f"svc:{namespace}:seen:"
        self._claim = store.redis.register_script(_CLAIM)
        self._release = store.redis.register_script(_RELEASE)

    async def claim(self, key: DeliveryKey) -> bool:
        """True unless the same delivery was claimed by any replica (or, with the store
        away, by this process)."""
        keys, args = [self._prefix + key.slot], [key.version, str(_SEEN_TTL_MS)]
        here = self.local.claim(key)
        answer = await self.store.run(lambda r: self._claim(keys=keys, args=args, client=r))
        return here if answer is None else bool(answer)

    async def complete(self, key: DeliveryKey) -> None:
        """The claim stands for the handled delivery (until its TTL)."""

    async def release(self, key: DeliveryKey) -> None:
        """Forget a given-up delivery so a redelivery is handled again."""
        self.local.release(key)
        keys, args = [self._prefix + key.slot], [key.version]
        await self.store.run(lambda r: self._release(keys=keys, args=args, client=r))


class FleetDispatcher:
    """Runs deliveries of any replica through a Stream and a consumer group.

    ``make_job`` builds the job of a delivery read from the stream (the receiver's
    callbacks for its kind); ``local`` runs jobs in this process.
    """

    def __init__(
        self,
        store: Store,
        namespace: str,
        *,
        attempt: Attempt,
        finish: Finish,
        policy: RetryPolicy,
        clock: Clock,
        make_job: Callable[[DeliveryKey, Delivery], DeliveryJob],
        claim_after: float = 30.0,
        takes: Callable[[], bool] = lambda: True,
    ) -> None:
        self.store = store
        self.claim_after = claim_after
        self._takes = takes
        self._stream = f"svc:{namespace}:deliveries"
        self._finish = finish
        self._make_job = make_job
        self.local = LocalDispatcher(attempt, self._settle, policy=policy, clock=clock)
        self.consumer = os.urandom(6).hex()
        self._entries: dict[DeliveryJob, bytes] = {}
        self._acks: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        self._closed = False
        self._group_ready = False

    @property
    def pending(self) -> int:
        """Jobs queued or running in this process (and acknowledgements being written)."""
        return self.local.pending + len(self._acks)

    async def submit(self, job: DeliveryJob) -> None:
        """Add the delivery to the stream (or run it here: an output file, store away)."""
        self.start()
        wire = _wire(job.update)
        if wire is not None:
            fields = {"slot": job.key.slot, "version": job.key.version, "body": wire}
            stream = self._stream
            added = await self.store.run(lambda r: r.xadd(stream, fields))  # type: ignore[arg-type]
            if added is not None:
                return
        self.local.submit(job)

    def start(self) -> None:
        """Start reading the stream in this process (once; needs a running loop), if it
        runs deliveries (``takes``): one that would run nothing must leave them to others."""
        if self._reader is None and not self._closed and self._takes():
            self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _ensure_group(self) -> bool:
        if self._group_ready:
            return True

        async def create(redis: Any) -> bool:
            try:
                await redis.xgroup_create(self._stream, _GROUP, id="0", mkstream=True)
            except Exception as exc:  # BUSYGROUP: another replica made it
                if "BUSYGROUP" not in str(exc):
                    raise
            return True

        self._group_ready = bool(await self.store.run(create))
        return self._group_ready

    async def _read(self) -> None:
        """Take over stale entries, then read new ones; run each as a local job."""
        clock = self.store.clock
        stream, me, idle = self._stream, self.consumer, int(self.claim_after * 1000)

        def claim(redis: Any) -> Awaitable[Any]:
            return redis.xautoclaim(stream, _GROUP, me, idle, "0-0", count=16)  # type: ignore[no-any-return]

        def read_new(redis: Any) -> Awaitable[Any]:
            return redis.xreadgroup(_GROUP, me, {stream: ">"}, count=16, block=_BLOCK_MS)  # type: ignore[no-any-return]

        while not self._closed:
            if not self.store.available or not await self._ensure_group():
                await clock.sleep(self.store.retry_every)
                continue
            stale = await self.store.run(claim)
            if stale:
                self._run_entries(stale[1])
            read: Any = await self.store.run(read_new, block=_BLOCK_MS / 1000)
            if read is None:
                if not self.store.up:
                    self._group_ready = False  # a restarted store has lost the group
                continue
            for _, entries in read:
                self._run_entries(entries)

    def _run_entries(self, entries: list[Any]) -> None:
        for entry_id, fields in entries:
            if not fields:
                continue  # deleted meanwhile
            try:
                update = parse_delivery(fields[b"body"])
            except (WebhookPayloadError, KeyError):
                logger.error("fleet delivery %r unreadable; dropped", entry_id)
                self._ack(entry_id)
                continue
            key = DeliveryKey(
                slot=fields[b"slot"].decode(),
                version=fields.get(b"version", b"").decode(),
                subject=_subject(fields[b"slot"].decode()),
            )
            job = self._make_job(key, update)
            self._entries[job] = entry_id
            self.local.submit(job)

    async def _settle(self, job: DeliveryJob, done: bool) -> None:
        try:
            await self._finish(job, done)
        finally:
            entry_id = self._entries.pop(job, None)
            if entry_id is not None and (done or not self._closed):
                self._ack(entry_id)  # unfinished at close: left for another replica

    def _ack(self, entry_id: bytes) -> None:
        stream = self._stream

        async def ack() -> None:
            await self.store.run(lambda r: r.xack(stream, _GROUP, entry_id))

        task = asyncio.get_running_loop().create_task(ack())
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the jobs this process holds (or until ``timeout``)."""
        await self.local.drain(timeout)
        if self._acks:
            await asyncio.wait(set(self._acks), timeout=self.store.timeout * 2)

    async def aclose(self, timeout: float | None = 10.0) -> None:
        """Stop reading, let running jobs finish up to ``timeout``."""
        self._closed = True
        if self._reader is not None:
            await cancel_and_wait(self._reader, self.store.timeout)
        await self.local.aclose(timeout)
        if self._acks:
            await asyncio.wait(set(self._acks), timeout=self.store.timeout * 2)


def _subject(slot: str) -> str:
    """The ordering subject of a slot (the same rule as ``delivery_key``)."""
    if slot.startswith("status:"):
        return "job:" + slot.split(":")[1]
    if slot.startswith("output:"):
        return "output:" + slot.split(":")[1]
    return slot


class FleetDeliveries:
    """The fleet's ledger, dispatcher and job wake-ups for one ``WebhookReceiver``."""

    def __init__(
        self,
        url: str,
        namespace: str,
        *,
        attempt: Attempt,
        finish: Finish,
        policy: RetryPolicy,
        clock: Clock,
        make_job: Callable[[DeliveryKey, Delivery], DeliveryJob],
        wake: Callable[[JobStatusUpdate], None],
        claim_after: float = 30.0,
        takes: Callable[[], bool] = lambda: True,
    ) -> None:
        self.store = Store(url, clock=clock)
        self.ledger = FleetLedger(self.store, namespace)
        self.dispatcher = FleetDispatcher(
            self.store,
            namespace,
            attempt=attempt,
            finish=finish,
            policy=policy,
            clock=clock,
            make_job=make_job,
            claim_after=claim_after,
            takes=takes,
        )
        self.wake = JobWake(self.store, wake, namespace)
        self._listening = False

    def listen(self) -> None:
        """Receive the fleet's job wake-ups and deliveries in this process from now on."""
        self._listening = True
        self.wake.listen()
        self.dispatcher.start()

    def callbacks_added(self) -> None:
        """The receiver gained a callback: if it listens already, take deliveries now."""
        if self._listening:
            self.dispatcher.start()

    def publish(self, update: JobStatusUpdate) -> Awaitable[None]:
        """Tell every process of the fleet about a job's new status."""
        return self.wake.publish(update.job_id, str(update.status))

    async def aclose(self, timeout: float | None = 10.0) -> None:
        """Stop reading, finish running jobs, stop listening, close the store."""
        await self.dispatcher.aclose(timeout)
        await self.wake.aclose()
        await self.store.aclose()
