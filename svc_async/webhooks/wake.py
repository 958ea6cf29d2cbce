"""Job wake-ups across processes: a status update received anywhere wakes every waiter.

The replica that takes a status update publishes ``"<job id> <status>"`` on its
namespaces' channels; every receiver (and every fleet client) listens on its own (from
its first subscriber on) and hands the update to its local subscriptions, so
``jobs.wait`` wakes in every process. A wake-up
only makes the waiter look at the job now; one lost while the store is away costs a poll
interval, never a result. Job ids and statuses are all the channel carries.

``FleetWake`` is the wake-up source a ``Client(fleet=..., account=...)`` keeps: the
account's wake-ups alone, with no receiver behind them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from operator import methodcaller
from typing import TYPE_CHECKING, Any

from ..clock import Clock
from ..errors import WebhookPayloadError
from ..fleet.connect import store_errors
from ..fleet.keys import Keys, scope_for
from ..fleet.store import Store, cancel_and_wait
from .payloads import parse_status_update
from .waiters import JobSubscription, Waiters

if TYPE_CHECKING:  # only a client given metrics= imports OpenTelemetry
    from .._pipeline.metrics import Metrics

logger = logging.getLogger(__name__)

_FAILURES = store_errors()


class JobWake:
    """Publishes status updates and hands the fleet's to ``waiters`` (see the module).

    The channel is the namespace's own: receivers of another account (other webhook
    secrets) on the same Redis never wake this one's waiters.
    """

    def __init__(self, store: Store, waiters: Waiters, channels: Sequence[str]) -> None:
        self.store = store
        self.channels = tuple(channels)
        self.waiters = waiters
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()
        """Set while this process is subscribed (tests wait for it)."""

    async def publish(self, job_id: int, status: str) -> None:
        """Tell every listening process (never raises; store away: nobody is told)."""
        message = f"{job_id} {status}"
        for channel in self.channels:
            await self.store.run(methodcaller("publish", channel, message))

    def listen(self) -> None:
        """Start listening in this process (once; needs a running loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        clock = self.store.clock
        while True:
            pubsub: Any = self.store.redis.pubsub(ignore_subscribe_messages=True)
            epoch = self.store.epoch
            try:
                if await self.store.run(_subscriber(pubsub, self.channels)) is None:
                    await clock.sleep(self.store.retry_every)
                    continue
                epoch = self.store.epoch  # the connection belongs to this spell of the store
                self.ready.set()
                while True:
                    message = await pubsub.get_message(timeout=self.store.timeout * 0.8)
                    if message is not None:
                        self._handle(message.get("data"))
            except _FAILURES as exc:
                self.ready.clear()
                self.store.failed(exc, epoch)  # the subscription dropped: an outage
                await clock.sleep(self.store.retry_every)
            finally:
                self.ready.clear()
                with contextlib.suppress(*_FAILURES):
                    await pubsub.aclose()

    def _handle(self, data: Any) -> None:
        try:
            job_id, status = bytes(data).decode().split(" ", 1)
            update = parse_status_update({"id": int(job_id), "status": status})
        except (ValueError, TypeError, WebhookPayloadError):
            logger.debug("fleet job wake-up unreadable: %r", data)
            return
        self.waiters.wake(update)

    async def aclose(self) -> None:
        """Stop listening."""
        if self._task is not None:
            await cancel_and_wait(self._task, self.store.timeout)
            self._task = None


class FleetWake(Waiters):
    """A ``WakeSource`` of the fleet at ``url``: the status updates any receiver of
    ``account`` takes wake this process's subscriptions (from the first one on)."""

    def __init__(
        self, url: str, *, account: str, clock: Clock, metrics: Metrics | None = None
    ) -> None:
        super().__init__()
        store = Store(url, clock=clock, metrics=metrics, role="wake")
        self._wake = JobWake(store, self, [Keys(scope_for(account, b"")).channel])

    @property
    def ready(self) -> asyncio.Event:
        """Set while this process is subscribed to the fleet's wake-ups."""
        return self._wake.ready

    def subscribe(self, job_id: int, event: asyncio.Event | None = None) -> JobSubscription:
        """Register interest in ``job_id``; ``event`` (shared or new) is set on each update."""
        self._wake.listen()
        return super().subscribe(job_id, event)

    async def aclose(self) -> None:
        """Stop listening and close the store."""
        await self._wake.aclose()
        await self._wake.store.aclose()


def _subscriber(pubsub: Any, channels: Sequence[str]) -> Callable[[Any], Awaitable[bool]]:
    async def subscribe(_: Any) -> bool:
        await pubsub.subscribe(*channels)
        return True

    return subscribe
