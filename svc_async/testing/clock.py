"""The fake's clock and the timestamp formats of the wire protocol.

Everything time-dependent in the fake (job progress, token expiry, rate-limit windows,
signed-link expiry, ``updatedAt`` stamps) reads one ``FakeClock``, so tests can move time
forward with ``advance`` instead of sleeping.
"""

from __future__ import annotations

import datetime as dt
import time
from email.utils import formatdate

__all__ = ["FakeClock", "format_timestamp", "http_date", "parse_timestamp"]


class FakeClock:
    """Seconds since the epoch, either following wall time or frozen.

    ``FakeClock()`` follows ``time.time()`` plus everything passed to ``advance``;
    ``FakeClock(start=...)`` is frozen at ``start`` and only moves on ``advance``
    (fully deterministic tests).
    """

    def __init__(self, start: float | None = None) -> None:
        self._frozen = start is not None
        self._base = start if start is not None else 0.0
        self._offset = 0.0

    @property
    def frozen(self) -> bool:
        """True when the clock only moves on ``advance``."""
        return self._frozen

    def now(self) -> float:
        """The current time on this clock, in epoch seconds."""
        if self._frozen:
            return self._base + self._offset
        return time.time() + self._offset

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
