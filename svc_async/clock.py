"""The one clock: every deadline, pacing wait, poll, backoff and date read goes through it.

A ``Clock`` has three methods: ``now()`` (monotonic seconds, for deadlines, pacing and
polling), ``wall()`` (epoch seconds, for ``Retry-After`` dates and epoch resets) and
``sleep(seconds)``. ``SystemClock`` is the default; its ``now()`` is the running event
loop's time, so asyncio's own timeouts and the SDK's deadlines share one timeline.
Tests pass another clock (``svc_async.testing.VirtualClock``) to run on virtual time.
Nothing else in the package reads a clock or sleeps (``tests/test_architecture.py``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]


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
