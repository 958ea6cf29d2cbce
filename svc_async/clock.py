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
from threading import get_ident
from typing import Protocol, runtime_checkable

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock", "running_loop"]


def running_loop(hint: asyncio.AbstractEventLoop | None = None) -> asyncio.AbstractEventLoop:
    """The running event loop, as ``asyncio.get_running_loop()`` (RuntimeError when none).

    ``hint`` is the loop the caller expects. When it says it runs in this thread it is
    the running one, known without asking: asking costs a ``getpid`` system call on
    Python 3.11 (a fork check), and the SDK would ask several times per call. asyncio's
    loops say so in ``_thread_id`` (private, set while they run); a loop that does not
    (uvloop), or a wrong hint, is asked about, so the answer is exact either way.
    """
    if hint is not None and getattr(hint, "_thread_id", None) == get_ident():
        return hint
    return asyncio.get_running_loop()


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

    __slots__ = ("_loop",)

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None  # the last one read

    def __repr__(self) -> str:
        return "<SystemClock>"

    def now(self) -> float:
        """The running loop's time (``time.monotonic()`` outside a loop)."""
        try:
            loop = self._loop = running_loop(self._loop)
        except RuntimeError:
            return time.monotonic()
        return loop.time()

    def wall(self) -> float:
        """``time.time()``."""
        return time.time()

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)``."""
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()
"""The default clock of every client, pacer and poller."""
