"""Which webhook deliveries were handled, and running their callbacks until they succeed.

The receiver talks to two seams. A ledger is the dedupe window: a delivery is
*claimed* when it arrives (a claim that fails means a duplicate), then *completed* once
every callback succeeded, or *released* when they were given up, so a redelivery is
handled again. A dispatcher queues a claimed delivery and runs its callbacks, retrying
the failed ones with backoff. ``MemoryLedger`` and ``LocalDispatcher`` keep everything
in this process and answer at once (plain methods: ``dispatch`` decides without
waiting); a shared store's pair (``DeliveryLedger``, ``DeliveryDispatcher``) answers
over the network, so every one of its methods is a coroutine function.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs
import orjson

from ..clock import SYSTEM_CLOCK, Clock, wait_tasks
from ..models import Entry
from ..retry import RetryPolicy
from .payloads import Delivery, JobStatusUpdate, OutputFileUpdate

logger = logging.getLogger(__name__)

__all__ = [
    "DeliveryDispatcher",
    "DeliveryJob",
    "DeliveryKey",
    "DeliveryLedger",
    "LocalDispatcher",
    "MemoryLedger",
    "delivery_key",
]


@attrs.frozen(slots=True, kw_only=True)
class DeliveryKey:
    """What makes two deliveries the same, as strings a shared store can hold.

    ``slot`` is what a delivery is about and says (``status:42:Processed``); the same
    slot with the same ``version`` is a duplicate (``version`` is the entry's content
    digest, empty for the other kinds). Deliveries of one ``subject`` (a job, an output
    file, an entry) reach their callbacks in the order they arrived.
    """

    slot: str
    version: str = ""
    subject: str
    scope: str = ""
    """The fleet namespace the delivery belongs to (empty: this process only)."""
    kid: str = ""
    """The name of the key that seals the delivery in a fleet (empty: none)."""


def _entry_digest(entry: Entry) -> str:
    """A short digest of an entry's content, to tell a re-delivery from a new change."""
    from ..converter import unstructure

    try:
        raw = orjson.dumps(unstructure(entry), option=orjson.OPT_SORT_KEYS)
    except TypeError:
        raw = repr(entry).encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def delivery_key(update: Delivery) -> DeliveryKey:
    """The dedupe key of a delivery: job and status; output file and status; an entry
    (in its event or season) and its content."""
    if isinstance(update, JobStatusUpdate):
        subject = f"job:{update.job_id}"
        return DeliveryKey(slot=f"status:{update.job_id}:{update.status}", subject=subject)
    if isinstance(update, OutputFileUpdate):
        output = update.output_file
        return DeliveryKey(
            slot=f"output:{output.id}:{output.status}", subject=f"output:{output.id}"
        )
    scope = (
        f"event:{update.event_id}" if update.event_id is not None else f"season:{update.season_id}"
    )
    slot = f"entry:{scope}:{update.entry.id}"
    return DeliveryKey(slot=slot, version=_entry_digest(update.entry), subject=slot)


class DeliveryLedger(Protocol):
    """A shared dedupe window behind a receiver (a fleet's, in Redis)."""

    async def claim(self, key: DeliveryKey) -> bool:
        """Take ``key`` for handling: False when it is a duplicate (handled or in hand)."""

    async def complete(self, key: DeliveryKey) -> None:
        """Every callback of ``key`` succeeded: later equal deliveries are duplicates."""

    async def release(self, key: DeliveryKey) -> None:
        """``key`` was given up: a redelivery of it is handled again."""


class MemoryLedger:
    """The last ``size`` delivery slots seen by this process (0: no dedupe at all).

    A slot holds the version last claimed; claimed and completed look the same to a
    duplicate (one in hand will be handled), and a release forgets the slot unless a
    newer version took it meanwhile.
    """

    def __init__(self, size: int = 10_000) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError("dedupe_size must be a non-negative int")
        self.size = size
        self._slots: OrderedDict[str, str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._slots)

    def claim(self, key: DeliveryKey) -> bool:
        if self.size == 0:
            return True
        duplicate = key.slot in self._slots and self._slots[key.slot] == key.version
        self._slots[key.slot] = key.version
        self._slots.move_to_end(key.slot)
        while len(self._slots) > self.size:
            self._slots.popitem(last=False)
        return not duplicate

    def complete(self, key: DeliveryKey) -> None:
        """Nothing to do: the claim already stands for the handled delivery."""

    def release(self, key: DeliveryKey) -> None:
        if self._slots.get(key.slot) == key.version:
            del self._slots[key.slot]


@attrs.define(eq=False, kw_only=True)
class DeliveryJob:
    """A claimed delivery on its way through the callbacks.

    ``todo`` holds the callbacks that have not succeeded yet (each attempt runs only
    those, so one that succeeded is not called again); ``attempts`` counts the runs.
    """

    key: DeliveryKey
    update: Delivery
    todo: list[Callable[[Any], Awaitable[None] | None]]
    attempts: int = 0


Attempt = Callable[[DeliveryJob], Awaitable[bool]]
"""Run a job's remaining callbacks once; True when none is left."""

Finish = Callable[[DeliveryJob, bool], Awaitable[None]]
"""Settle a job: done (True) or given up (False)."""


class DeliveryDispatcher(Protocol):
    """Runs claimed deliveries' callbacks until done or given up: what a receiver asks of
    it to drain and close (``submit`` is the local one's plain method, a shared one's
    coroutine)."""

    @property
    def pending(self) -> int:
        """Jobs queued or running."""

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the jobs queued so far (or until ``timeout``)."""

    async def aclose(self, timeout: float | None = 10.0) -> None:
        """Wait for the queued jobs up to ``timeout``, then give up the rest."""


class LocalDispatcher:
    """Runs each job in a task of this process, retrying failed callbacks.

    A job gets up to ``policy.attempts`` runs, waiting ``policy.backoff(n)`` after
    the n-th failed one on ``clock`` (a virtual one in tests). A job waits
    for the job before it about the same subject, so retries never reorder them.
    """

    def __init__(
        self,
        attempt: Attempt,
        finish: Finish,
        *,
        policy: RetryPolicy,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._attempt = attempt
        self._finish = finish
        self.policy = policy
        self.clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Task[None]] = {}

    @property
    def pending(self) -> int:
        return len(self._tasks)

    def submit(self, job: DeliveryJob, *, in_order: bool = True) -> None:
        """Run ``job``: after the job before it about its subject when ``in_order``
        (False: the caller keeps the order itself, as a fleet does across replicas)."""
        before = self._last.get(job.key.subject) if in_order else None
        task = asyncio.get_running_loop().create_task(self._run(job, before))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if in_order:
            self._last[job.key.subject] = task
            task.add_done_callback(lambda done: self._forget(job.key.subject, done))

    def _forget(self, subject: str, done: asyncio.Task[None]) -> None:
        if self._last.get(subject) is done:
            del self._last[subject]

    async def _run(self, job: DeliveryJob, before: asyncio.Task[None] | None) -> None:
        try:
            if before is not None:
                await asyncio.wait([before])  # its outcome does not matter, only its end
            while True:
                job.attempts += 1
                if await self._attempt(job):
                    await self._finish(job, True)
                    return
                if job.attempts >= self.policy.attempts:
                    break
                await self.clock.sleep(self.policy.backoff(job.attempts))
        except asyncio.CancelledError:
            await self._finish(job, False)
            raise
        await self._finish(job, False)

    async def drain(self, timeout: float | None = None) -> None:
        if self._tasks:
            await wait_tasks(self.clock, self._tasks, timeout)

    async def aclose(self, timeout: float | None = 10.0) -> None:
        tasks = set(self._tasks)
        if not tasks:
            return
        _, late = await wait_tasks(self.clock, tasks, timeout)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
