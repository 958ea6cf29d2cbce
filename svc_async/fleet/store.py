"""The fleet's connection to Redis: short timeouts, one warning per outage, no flapping.

Every fleet feature runs its Redis commands through ``Store.run``, which never raises:
a store that is down, slow (past ``timeout``) or restarted answers None, the caller falls
back to local behaviour, and the first failure of an outage logs one WARNING. While the
store is down it is tried again at most once per ``retry_every`` seconds; the first
success logs an INFO line and the fleet rejoins.

Only the store's own failure marks it down (not a process busy with more than
``MAX_COMMANDS`` commands at once, which wait their turn). A caller in a hurry passes ``wait``: it
stops waiting after that many seconds (and carries on without the store), while the
command runs on under the store's own timeout and decides alone whether the store is
slow. A command that started before the last recovery cannot open a second outage with
its late failure, and pooled connections a restarted server closed are replaced quietly
(``connect.redis_client``), so one outage is one WARNING and one INFO line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from redis.exceptions import MaxConnectionsError

from ..clock import SYSTEM_CLOCK, Clock, wait_tasks
from .connect import check_url, describe, redis_client, store_errors

if TYPE_CHECKING:  # only a client or receiver given metrics= imports OpenTelemetry
    from .._pipeline.metrics import Metrics

__all__ = ["DEFAULT_TIMEOUT", "Store"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
Command = Callable[[Any], Awaitable[T]]
"""What ``Store.run`` runs: a coroutine function of the store's redis-py client."""

DEFAULT_TIMEOUT = 0.5
"""Seconds one store command may take before the fleet acts without it."""

_RETRY_EVERY = 1.0

MAX_COMMANDS = 64
"""Commands a process runs on the store at once; the rest wait their turn (redis-py's
pool holds 100 connections, and a full pool is an error, not a wait)."""

_FAILURES = store_errors()


async def cancel_and_wait(task: asyncio.Task[Any], every: float, tries: int = 10) -> None:
    """Cancel ``task`` and wait until it ends, cancelling it again every ``every`` seconds.

    redis-py can swallow a cancellation that races with a read's own timeout (likely on
    a loaded machine): the read then waits on, and a close that awaited the task once
    hung for ever. A task that outlives ``tries`` cancellations is left behind.
    """
    for _ in range(tries):
        if task.done():
            break
        task.cancel()
        await asyncio.wait({task}, timeout=every)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: what a closing task raised is of no use now


class Store:
    """A Redis client that degrades instead of failing (see the module docstring).

    ``metrics`` (``Client(metrics=...)``, ``WebhookReceiver(metrics=...)``) counts each
    outage in ``svc_async.fleet.store.outages``, its ``svc_async.fleet.role`` the
    ``role`` given: ``budget``, ``wake`` or ``receiver``.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float | None = None,
        retry_every: float = _RETRY_EVERY,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        role: str = "store",
    ) -> None:
        self.url = check_url(url)
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        """Seconds a command may take (None: ``DEFAULT_TIMEOUT``, read when the store is made)."""
        self.retry_every = retry_every
        self.redis: Any = redis_client(url, timeout=self.timeout)
        self.up = True
        """False from a failed command until one succeeds again."""
        self._retry_at = 0.0
        self.epoch = 0
        """How many times the store came back so far: a command (or a subscription's
        connection) remembers the one it started in (see ``failed``)."""
        self.outages = 0
        self.metrics = metrics
        self.role = role
        self._late: set[asyncio.Task[Any]] = set()
        self._slots = asyncio.Semaphore(MAX_COMMANDS)

    def __repr__(self) -> str:
        state = "up" if self.up else "down"
        return f"<Store {describe(self.url)} {state}>"

    def script(self, source: str) -> Callable[[Sequence[str], Sequence[Any]], Command[Any]]:
        """Register the Lua ``source`` on the store's client; what comes back makes the
        ``run`` command that runs it on some ``keys`` with some ``args`` (the budget's and
        the webhooks' scripts)."""
        registered = self.redis.register_script(source)
        return lambda keys, args: lambda redis: registered(keys=keys, args=args, client=redis)

    @property
    def available(self) -> bool:
        """Whether a command is worth trying now (up, or down long enough to try again)."""
        return self.up or self.clock.now() >= self._retry_at

    async def run(
        self,
        command: Command[T],
        *,
        wait: float | None = None,
        block: float = 0.0,
        late: Callable[[T], Coroutine[Any, Any, None]] | None = None,
    ) -> T | None:
        """The command's answer, or None when the store is down, slow or failing.

        ``block`` adds the seconds a blocking command (a stream read) may wait on
        purpose. ``wait`` bounds the caller's wait only: past it the caller gets None,
        the command runs on in the background, and ``late`` (if given) receives its
        answer, so what it did can be undone.
        """
        if not self.available:
            return None
        if not self.up:
            self._retry_at = self.clock.now() + self.retry_every  # one try per interval
        attempt = self._attempt(command, self.timeout + block)
        if wait is None or wait >= self.timeout + block:
            return await attempt
        task = asyncio.get_running_loop().create_task(attempt)
        done, _ = await wait_tasks(self.clock, {task}, max(0.0, wait))  # the caller's
        if done:
            return task.result()
        self._late.add(task)
        task.add_done_callback(self._late.discard)
        if late is not None:
            task.add_done_callback(lambda t: self._hand_late(t, late))
        return None

    async def _attempt(self, command: Command[T], bound: float) -> T | None:
        epoch = self.epoch
        try:
            async with asyncio.timeout(bound):
                await self._slots.acquire()
        except TimeoutError:
            return None  # this process is busy with the store: not the store's failure
        try:
            async with asyncio.timeout(bound):
                result = await command(self.redis)
        except MaxConnectionsError:
            return None  # the pool is full here (the slots keep it from it): not an outage
        except _FAILURES as exc:
            self.failed(exc, epoch)
            return None
        finally:
            self._slots.release()
        if not self.up:
            self.up = True
            self.epoch += 1
            logger.info("fleet store %s is back: sharing state again", describe(self.url))
        return result

    def _hand_late(
        self, task: asyncio.Task[Any], late: Callable[[Any], Coroutine[Any, Any, None]]
    ) -> None:
        if task.cancelled() or task.result() is None:
            return
        follow = asyncio.get_running_loop().create_task(late(task.result()))
        self._late.add(follow)
        follow.add_done_callback(self._late.discard)

    def failed(self, exc: BaseException, epoch: int) -> None:
        """Mark the store down after a failure of a command (or a subscription's
        connection) made in ``epoch``, unless that failure belongs to an outage already
        over: one from before the last recovery is ignored."""
        if epoch != self.epoch:
            return  # started before the store came back: the old outage's straggler
        self._retry_at = self.clock.now() + self.retry_every
        if self.up:
            self.up = False
            self.outages += 1
            if self.metrics is not None:
                self.metrics.outage(self.role)
            logger.warning(
                "fleet store %s unavailable (%s); carrying on locally until it is back",
                describe(self.url),
                type(exc).__name__,
            )

    async def aclose(self) -> None:
        """Wait briefly for late commands, then close the connections (never raises)."""
        if self._late:
            await asyncio.wait(set(self._late), timeout=self.timeout * 2)
        with contextlib.suppress(*_FAILURES):
            await self.redis.aclose()
