"""Client-side pacing from the ``x-ratelimit-*`` headers, shared by all calls of a client.

The service grants a budget (``x-ratelimit-limit``) per window; each response says what
is left (``x-ratelimit-remaining``) and the seconds until the window resets
(``x-ratelimit-reset``, assumed to be seconds; an epoch-looking value is read as an epoch
time). The pacer lets calls through while budget remains, counting calls in flight as
spent, and holds further calls until the window resets, so a long bulk fetch uses the
whole budget without drawing a 429. Before the first response it assumes nothing.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping

from .models import RateLimit
from .retry import parse_reset, parse_retry_after

_MARGIN = 0.05
"""Seconds added after a reset time, to absorb rounding of the reset header."""


def parse_rate_limit(headers: Mapping[str, str]) -> RateLimit | None:
    """The rate-limit headers of a response, or None when it has none."""
    limit = _int(headers.get("x-ratelimit-limit"))
    remaining = _int(headers.get("x-ratelimit-remaining"))
    reset = parse_reset(headers.get("x-ratelimit-reset"))
    if limit is None and remaining is None and reset is None:
        return None
    return RateLimit(limit=limit, remaining=remaining, reset=reset)


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        return None
    return number if number >= 0 else None


class Pacer:
    """Holds calls back when the budget of the current window is spent.

    It counts its own calls exactly (each ``acquire`` spends one from the estimate) and
    corrects the estimate from every response: a ``remaining`` lower than the estimate
    means someone else shares the budget; one higher than the estimate plus the calls
    in flight means the server's window has reset. The window's end is the earliest
    ``receive time + reset`` seen in the window.
    """

    def __init__(self) -> None:
        self._limit: int | None = None
        self._remaining: int | None = None
        self._window_end = math.inf
        self._in_flight = 0
        self.waits = 0
        self.waited = 0.0

    def __repr__(self) -> str:
        return f"<Pacer remaining={self._remaining} in_flight={self._in_flight}>"

    async def acquire(self) -> None:
        """Wait until a call fits in the budget, then count it as in flight."""
        while self._remaining is not None:
            now = time.monotonic()
            if now >= self._window_end:
                if self._limit is None:
                    self._remaining = None  # no budget known: assume nothing
                    break
                # The window has reset: the whole budget is back, less the calls in flight.
                self._remaining = max(0, self._limit - self._in_flight)
                self._window_end = math.inf
            if self._remaining > 0:
                self._remaining -= 1
                break
            if self._window_end == math.inf:
                if self._in_flight == 0:
                    break  # no reset time known and nothing in flight to learn one from
                delay = 0.05
            else:
                delay = self._window_end - now
            self.waits += 1
            self.waited += delay
            await asyncio.sleep(delay)
        self._in_flight += 1

    def release(
        self, headers: Mapping[str, str] | None, status: int | None = None
    ) -> RateLimit | None:
        """Count the call as done and learn from its headers (None: no response came)."""
        self._in_flight -= 1
        rate = parse_rate_limit(headers) if headers is not None else None
        if rate is None or rate.remaining is None:
            return rate
        assert headers is not None
        if rate.limit is not None:
            self._limit = rate.limit
        reset = rate.reset
        if status == 429:
            # Retry-After is the server's most specific word on when to call again.
            retry_after = parse_retry_after(headers.get("Retry-After"))
            if retry_after is not None:
                reset = retry_after if reset is None else min(reset, retry_after)
        end = time.monotonic() + reset + _MARGIN if reset is not None else math.inf
        if self._remaining is None or rate.remaining > self._remaining + self._in_flight:
            # First answer, or the server's window reset before ours did.
            self._remaining = max(0, rate.remaining - self._in_flight)
            self._window_end = end
        else:
            self._remaining = min(self._remaining, rate.remaining)
            self._window_end = min(self._window_end, end)
        return rate
