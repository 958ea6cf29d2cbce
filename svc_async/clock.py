"""The one clock: every deadline, pacing wait, poll, backoff and date read goes through it.

A ``Clock`` has three methods: ``now()`` (monotonic seconds, for deadlines, pacing and
polling), ``wall()`` (epoch seconds, for ``Retry-After`` dates and epoch resets) and
``sleep(seconds)``. ``SystemClock`` is the default; its ``now()`` is the running event
loop's time, so asyncio's own timeouts and the SDK's deadlines share one timeline.
Tests pass another clock (``svc_async.testing.VirtualClock``) to run on virtual time.

The waits bounded by time go through a clock too: ``within`` and ``until`` (a block
cancelled with ``TimeoutError`` after some seconds, or at a deadline, on the clock's
timeline: ``asyncio.timeout`` and ``asyncio.timeout_at`` for a clock that is not the
loop's) and ``wait_tasks`` (``asyncio.wait`` with a ``timeout``). With ``SystemClock``
each is asyncio's own timer; any other clock is waited on with its ``sleep``.
Nothing else in the package reads a clock, sleeps or sets a timer
(``tests/test_architecture.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterable
from typing import Protocol, TypeVar, runtime_checkable

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock", "until", "wait_tasks", "within"]

T = TypeVar("T")


@runtime_checkable
class Clock(Protocol):
    """Where the SDK reads the time and sleeps."""

    def now(self) -> float:
        """Monotonic seconds (deadlines, pacing, polling): only differences mean anything."""
        ...

    def wall(self) -> float:
        """Seconds since the epoch (HTTP dates, epoch reset headers)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock."""
        ...


class SystemClock:
    """The real clock: the event loop's time, ``time.time()`` and ``asyncio.sleep``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<SystemClock>"

    def now(self) -> float:
        """The running loop's time (``time.monotonic()`` outside a loop)."""
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    def wall(self) -> float:
        """``time.time()``."""
        return time.time()

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)``."""
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()
"""The default clock of every client, pacer and poller."""


@contextlib.asynccontextmanager
async def until(clock: Clock, deadline: float | None) -> AsyncIterator[asyncio.Timeout]:
    """``asyncio.timeout_at(deadline)`` on ``clock``'s timeline (None: no deadline).

    The block is cancelled, and ``TimeoutError`` raised from it, once ``clock.now()``
    reaches ``deadline``; the ``asyncio.Timeout`` yielded tells (``expired()``).
    ``SystemClock``'s time is the loop's, so its deadline is the loop's own timer; any
    other clock is waited on with its ``sleep``, by a task beside the block.
    """
    async with asyncio.timeout(None) as timer:
        if deadline is None:
            yield timer
        elif type(clock) is SystemClock:
            timer.reschedule(deadline)
            yield timer
        else:
            alarm = asyncio.ensure_future(_alarm(clock, deadline, timer))
            try:
                yield timer
            finally:
                alarm.cancel()


def within(
    clock: Clock, seconds: float | None
) -> contextlib.AbstractAsyncContextManager[asyncio.Timeout]:
    """``asyncio.timeout(seconds)`` on ``clock``'s timeline (None: no limit); see ``until``."""
    return until(clock, None if seconds is None else clock.now() + seconds)


async def _alarm(clock: Clock, deadline: float, timer: asyncio.Timeout) -> None:
    """Sleep on ``clock`` until ``deadline``, then have ``timer`` expire at once."""
    while (left := deadline - clock.now()) > 0:
        await clock.sleep(left)
    timer.reschedule(asyncio.get_running_loop().time())  # due now: it fires next turn


async def wait_tasks(
    clock: Clock, tasks: Iterable[asyncio.Future[T]], timeout: float | None
) -> tuple[set[asyncio.Future[T]], set[asyncio.Future[T]]]:
    """``asyncio.wait(tasks, timeout=timeout)`` on ``clock``'s timeline: (done, pending).

    Like ``asyncio.wait``, nothing is cancelled; an empty ``tasks`` returns at once.
    """
    waiting = set(tasks)
    if not waiting:
        return set(), set()
    if timeout is None or type(clock) is SystemClock:
        return await asyncio.wait(waiting, timeout=timeout)
    with contextlib.suppress(TimeoutError):
        async with within(clock, timeout):
            await asyncio.wait(waiting)
    done = {task for task in waiting if task.done()}
    return done, waiting - done
