"""Running deliveries through their callbacks, and the backend that holds them.

A receiver chooses one backend when it is made: ``MemoryBackend`` (this process)
here, or the fleet's ``RedisBackend`` (``svc_async.webhooks.redis``), built on it. Both
get the ``Callbacks`` registry and the ``Waiters`` once, and both apply the rules of
``svc_async.webhooks.core``: a delivery is *claimed* when it arrives (a failed claim is
a duplicate), then *completed* once every callback succeeded, or *released* when they
were given up, so a redelivery is handled again. ``MemoryBackend`` runs a claimed
delivery's callbacks in a task of this process, retrying the failed ones with backoff,
in order per subject.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from ..clock import SYSTEM_CLOCK, Clock, wait_tasks
from ..retry import RetryPolicy
from .core import DeliveryKey, Inbound, MemoryLedger
from .payloads import (
    Delivery,
    EntryCallback,
    EntryUpdate,
    JobStatusUpdate,
    OutputFileCallback,
    StatusCallback,
    describe,
)
from .waiters import Waiters

if TYPE_CHECKING:  # only a receiver given metrics= imports OpenTelemetry
    from .._pipeline.metrics import Metrics

logger = logging.getLogger(__name__)

__all__ = ["Callbacks", "DeliveryJob", "MemoryBackend", "ReceiverStats", "kind_name"]


@attrs.define(slots=True)
class ReceiverStats:
    """What a receiver did with the deliveries it got, for metrics and tests."""

    received: int = 0
    """Every request that reached the receiver."""
    rejected: int = 0
    """Refused: wrong or missing secret, a verifier's refusal, a bad payload, a body too
    large (413), too slow (408) or cut short."""
    tests: int = 0
    """Test deliveries (``isTest``), acknowledged and ignored."""
    duplicates: int = 0
    """Re-deliveries (same job id and status; same entry content as the entry's last
    delivery; same output file status) of one handled or in hand, acknowledged and
    dropped."""
    dispatched: int = 0
    """Real updates handed to callbacks and waiters."""
    callback_errors: int = 0
    """Each time a callback raised (logged, never propagated; retried)."""
    retries: int = 0
    """Runs of a delivery's callbacks after a failed run."""
    given_up: int = 0
    """Deliveries whose callbacks still failed after the last attempt, or were unfinished
    when the receiver closed; their redelivery is handled again."""


@attrs.define(eq=False, kw_only=True)
class DeliveryJob:
    """A claimed delivery on its way through the callbacks.

    ``todo`` holds the callbacks that have not succeeded yet (each attempt runs only
    those, so one that succeeded is not called again); ``attempts`` counts the runs;
    ``body`` is the delivery as JSON, for a backend that hands it to another process.
    """

    key: DeliveryKey
    update: Delivery
    todo: list[Callable[[Any], Awaitable[None] | None]]
    attempts: int = 0
    body: bytes = b""


def kind_name(update: Delivery) -> str:
    """A delivery's kind as metrics name it: ``status``, ``entry`` or ``output_file``."""
    if isinstance(update, JobStatusUpdate):
        return "status"
    if isinstance(update, EntryUpdate):
        return "entry"
    return "output_file"


class Callbacks:
    """The callbacks registered for each kind, and one run of a job through them.

    This is what a backend is given to run deliveries with: it never calls back into
    the receiver. ``metrics`` (``WebhookReceiver(metrics=...)``) counts the deliveries
    received, run and given up in ``svc_async.webhook.deliveries``.
    """

    def __init__(
        self, stats: ReceiverStats, policy: RetryPolicy, metrics: Metrics | None = None
    ) -> None:
        self.stats = stats
        self.policy = policy
        self.metrics = metrics
        self.status: list[StatusCallback] = []
        self.entry: list[EntryCallback] = []
        self.output: list[OutputFileCallback] = []
        self._by_kind: dict[str, list[Any]] = {
            "status": self.status,
            "entry": self.entry,
            "output_file": self.output,
        }

    def __len__(self) -> int:
        return sum(map(len, self._by_kind.values()))

    def job(self, key: DeliveryKey, update: Delivery, body: bytes = b"") -> DeliveryJob:
        """The job running ``update`` through its kind's callbacks."""
        todo = list(self._by_kind[kind_name(update)])
        return DeliveryJob(key=key, update=update, todo=todo, body=body)

    def kinds(self) -> frozenset[str]:
        """The kinds of a fleet's shared deliveries this receiver can run: only those it
        has callbacks for (a replica never takes a delivery it cannot run)."""
        return frozenset(kind for kind in ("status", "entry") if self._by_kind[kind])

    async def attempt(self, job: DeliveryJob) -> bool:
        """Run the callbacks of ``job`` that have not succeeded yet; True when all have."""
        if job.attempts > 1:
            self.stats.retries += 1
        last = job.attempts >= self.policy.attempts
        failed = []
        for callback in job.todo:
            try:
                result = callback(job.update)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                self.stats.callback_errors += 1
                logger.log(
                    logging.ERROR if last else logging.WARNING,
                    "webhook callback %r failed for %s (attempt %d of %d)",
                    callback,
                    describe(job.update),
                    job.attempts,
                    self.policy.attempts,
                    exc_info=True,
                )
                failed.append(callback)
        job.todo = failed
        if not failed and self.metrics is not None:
            self.metrics.delivery(kind_name(job.update), "run")
        return not failed

    def received(self, update: Delivery | None, outcome: str) -> None:
        """Count a delivery received (``update`` None: refused before it was parsed)."""
        if self.metrics is not None:
            kind = "unknown" if update is None else kind_name(update)
            self.metrics.delivery(kind, "received", outcome)

    def given_up(self, job: DeliveryJob) -> None:
        """Count and log a job whose callbacks are given up."""
        self.stats.given_up += 1
        if self.metrics is not None:
            self.metrics.delivery(kind_name(job.update), "given_up")
        logger.error(
            "webhook delivery given up after %d attempt(s), %d callback(s) unfinished: %s",
            job.attempts,
            len(job.todo),
            describe(job.update),
        )


class MemoryBackend:
    """Where a receiver's claimed deliveries are held and run, chosen once, at
    construction: here, in this process, deduplicated over the last ``dedupe_size``
    slots, each run in a task.

    A job gets up to ``policy.attempts`` runs (``attempt``), waiting ``policy.backoff(n)``
    after the n-th failed one on ``clock`` (a virtual one in tests), then is settled
    (``finish``). A job waits for the job before it about the same subject, so retries
    never reorder them. The fleet's ``RedisBackend`` runs its jobs the same way.
    """

    def __init__(
        self,
        callbacks: Callbacks,
        waiters: Waiters,
        *,
        dedupe_size: int = 10_000,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.callbacks = callbacks
        self.waiters = waiters
        self.ledger = MemoryLedger(dedupe_size)
        self.policy = callbacks.policy
        self.clock = clock
        self._runs: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Task[None]] = {}

    def key(self, inbound: Inbound, secret: int) -> DeliveryKey:
        """The key of a delivery that came with the ``secret``-th secret (one process,
        one namespace: the secret does not matter)."""
        del secret
        return inbound.key

    async def claim(self, key: DeliveryKey) -> bool:
        """Take ``key`` for handling: False when it is a duplicate (handled or in hand)."""
        return self.ledger.claim(key)

    def announce(self, update: JobStatusUpdate) -> None:
        """Wake the waiters of a claimed status update."""
        self.waiters.wake(update)

    async def submit(self, job: DeliveryJob) -> None:
        """Queue a claimed job: run its callbacks; with none, it is handled already."""
        if job.todo:
            self.run(job)

    def start(self) -> None:
        """Take shared deliveries and wake-ups from now on: here nothing is shared."""

    def refresh(self) -> None:
        """The callbacks changed: here nothing is shared, nothing to read."""

    @property
    def pending(self) -> int:
        """Jobs queued or running in this process."""
        return len(self._runs)

    def run(self, job: DeliveryJob, *, in_order: bool = True) -> None:
        """Run ``job`` in a task: after the job before it about its subject when
        ``in_order`` (False: the caller keeps the order itself, as a fleet does across
        replicas)."""
        before = self._last.get(job.key.subject) if in_order else None
        task = asyncio.get_running_loop().create_task(self._run(job, before))
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)
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
                if await self.attempt(job):
                    await self.finish(job, True)
                    return
                if job.attempts >= self.policy.attempts:
                    break
                await self.clock.sleep(self.policy.backoff(job.attempts))
        except asyncio.CancelledError:
            await self.finish(job, False)
            raise
        await self.finish(job, False)

    async def attempt(self, job: DeliveryJob) -> bool:
        """Run a job's remaining callbacks once; True when none is left."""
        return await self.callbacks.attempt(job)

    async def finish(self, job: DeliveryJob, done: bool) -> None:
        """Settle in the ledger: handled (the claim stands for it), or given up (a
        redelivery is handled)."""
        if not done:
            self.callbacks.given_up(job)
            self.ledger.release(job.key)

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the jobs queued so far (or until ``timeout``)."""
        if self._runs:
            await wait_tasks(self.clock, self._runs, timeout)

    async def aclose(self, timeout: float | None = 10.0) -> None:
        """Wait for the queued jobs up to ``timeout``, then cancel (give up) the rest."""
        tasks = set(self._runs)
        if not tasks:
            return
        _, late = await wait_tasks(self.clock, tasks, timeout)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
