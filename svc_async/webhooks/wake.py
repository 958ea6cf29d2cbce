"""Job wake-ups across processes: a status update received anywhere wakes every waiter.

The replica that takes a status update publishes ``"<job id> <status>"`` on its
namespaces' channels; every receiver (and every fleet client) listens on its own (from
its first subscriber on) and hands the update to its local subscriptions, so
``jobs.wait`` wakes in every process. A wake-up
only makes the waiter look at the job now; one lost while the store is away costs a poll
interval, never a result. Job ids and statuses are all the channel carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis.exceptions import RedisError

from ..errors import WebhookPayloadError
from ..fleet.store import Store, cancel_and_wait
from .payloads import JobStatusUpdate, parse_status_update

logger = logging.getLogger(__name__)


class JobWake:
    """Publishes status updates and hands the fleet's to ``deliver`` (see the module).

    The channel is the namespace's own: receivers of another account (other webhook
    secrets) on the same Redis never wake this one's waiters.
    """

    def __init__(
        self, store: Store, deliver: Callable[[JobStatusUpdate], None], channels: Sequence[str]
    ) -> None:
        self.store = store
        self.channels = tuple(channels)
        self._deliver = deliver
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()
        """Set while this process is subscribed (tests wait for it)."""

    async def publish(self, job_id: int, status: str) -> None:
        """Tell every listening process (never raises; store away: nobody is told)."""
        message = f"{job_id} {status}"
        for channel in self.channels:
            await self.store.run(functools.partial(_publish, channel=channel, message=message))

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
            except (RedisError, OSError, TimeoutError) as exc:
                self.ready.clear()
                self.store.failed(exc, epoch)  # the subscription dropped: an outage
                await clock.sleep(self.store.retry_every)
            finally:
                self.ready.clear()
                with contextlib.suppress(RedisError, OSError, TimeoutError):
                    await pubsub.aclose()

    def _handle(self, data: Any) -> None:
        try:
            job_id, status = bytes(data).decode().split(" ", 1)
            update = parse_status_update({"id": int(job_id), "status": status})
        except (ValueError, TypeError, WebhookPayloadError):
            logger.debug("fleet job wake-up unreadable: %r", data)
            return
        self._deliver(update)

    async def aclose(self) -> None:
        """Stop listening."""
        if self._task is not None:
            await cancel_and_wait(self._task, self.store.timeout)
            self._task = None


async def _publish(redis: Any, *, channel: str, message: str) -> None:
    await redis.publish(channel, message)


def _subscriber(pubsub: Any, channels: Sequence[str]) -> Callable[[Any], Awaitable[bool]]:
    async def subscribe(_: Any) -> bool:
        await pubsub.subscribe(*channels)
        return True

    return subscribe
