"""Clocks for tests and the timestamp formats of the wire protocol.

Everything time-dependent in the fake (job progress, token expiry, rate-limit windows,
signed-link expiry, ``updatedAt`` stamps, injected latency) reads one ``FakeClock``, so
tests can move time forward with ``advance`` instead of sleeping. ``VirtualClock`` is the
SDK's ``Clock`` on virtual time: give the same one to the fake and the client.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from email.utils import formatdate

from ..clock import SYSTEM_CLOCK, Clock

__all__ = ["FakeClock", "VirtualClock", "format_timestamp", "http_date", "parse_timestamp"]


class VirtualClock:
    """The SDK's ``Clock`` on virtual time, for tests: waits take no real time.

    ``now()`` is the event loop's time and ``sleep`` is ``asyncio.sleep``, so asyncio's
    and aiohttp's timeouts, the SDK's deadlines and the fake share one timeline; the
    loop's time is made virtual by the ``looptime`` pytest plugin (mark the test
    ``@pytest.mark.looptime``): when every task is waiting, the loop jumps to the next
    timer, in order. ``wall()`` is ``start`` (default: the real time when made) plus the
    virtual time elapsed since the clock was first read. Used on a loop whose time is
    real it raises ``RuntimeError`` rather than quietly taking real time.
    """

    def __init__(self, start: float | None = None) -> None:
        self._start = SYSTEM_CLOCK.wall() if start is None else float(start)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._anchor = 0.0  # the loop time at which wall() was _start
        self._last = 0.0  # virtual seconds elapsed when last read

    def __repr__(self) -> str:
        return f"<VirtualClock wall={self._start + self._last:.3f}>"

    def _loop_time(self) -> float:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._anchor + self._last  # no loop: time stands still
        if loop is not self._loop:
            if not getattr(loop, "looptime_on", False):
                raise RuntimeError(
                    "VirtualClock needs an event loop on virtual time:"
                    " mark the test @pytest.mark.looptime (the looptime plugin)"
                )
            self._loop = loop
            self._anchor = loop.time() - self._last  # carry on where the last loop stopped
        return loop.time()

    def now(self) -> float:
        """The loop's (virtual) time."""
        now = self._loop_time()
        self._last = now - self._anchor
        return now

    def wall(self) -> float:
        """``start`` plus the virtual seconds elapsed."""
        self.now()
        return self._start + self._last

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep`` on the virtual loop: instant in real time."""
        self._loop_time()
        await asyncio.sleep(seconds)


class FakeClock:
    """Seconds since the epoch, either following a ``Clock``'s wall time or frozen.

    ``FakeClock()`` follows the system clock's ``wall()`` plus everything passed to
    ``advance``; ``FakeClock(source=VirtualClock())`` follows that clock instead (the
    fake's latency and stalls then sleep on it too); ``FakeClock(start=...)`` is frozen
    at ``start`` and only moves on ``advance`` (fully deterministic tests).
    """

    def __init__(self, start: float | None = None, *, source: Clock | None = None) -> None:
        self._frozen = start is not None
        self._base = start if start is not None else 0.0
        self._offset = 0.0
        self.source: Clock = source or SYSTEM_CLOCK
        """The clock followed (unless frozen) and slept on."""

    @property
    def frozen(self) -> bool:
        """True when the clock only moves on ``advance``."""
        return self._frozen

    def now(self) -> float:
        """The current time on this clock, in epoch seconds."""
        if self._frozen:
            return self._base + self._offset
        return self.source.wall() + self._offset

    async def sleep(self, seconds: float) -> None:
        """Sleep on the source clock (injected latency, stalls, webhook backoff)."""
        await self.source.sleep(seconds)

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (must not be negative)."""
        if seconds < 0:
            raise ValueError("cannot move the clock backwards")
        self._offset += seconds


def format_timestamp(ts: float) -> str:
    """Epoch seconds as the service writes them: ``2024-10-17T14:41:56.000Z``."""
    d = dt.datetime.fromtimestamp(ts, tz=dt.UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> float | None:
    """Parse an ISO 8601 timestamp or ``YYYY-MM-DD`` date (naive means UTC); None if bad."""
    try:
        d = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=dt.UTC)
    return d.timestamp()


def http_date(ts: float) -> str:
    """Epoch seconds as an HTTP ``Date`` header value."""
    return formatdate(ts, usegmt=True)
