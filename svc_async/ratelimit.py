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
import logging
import math
import random
from collections.abc import Mapping

from .clock import SYSTEM_CLOCK, Clock
from .errors import PacingExceedsDeadline
from .models import RateLimit
from .retry import parse_reset, parse_retry_after

_PROBE_WAIT = 1.0
"""Longest the first call of a client holds the others while it learns the budget."""

_SHARED_IN_FLIGHT = 2
"""Calls a pacer lets be in flight at once once it knows the budget is shared."""

_MARGIN = 0.05
"""Seconds added after a reset time, to absorb rounding of the reset header."""


def parse_rate_limit(headers: Mapping[str, str], now: float | None = None) -> RateLimit | None:
    """The rate-limit headers of a response, or None when it has none.

    ``now`` is the wall time an epoch reset is read against (default: the system clock's).
    """
    limit = _int(headers.get("x-ratelimit-limit"))
    remaining = _int(headers.get("x-ratelimit-remaining"))
    reset = parse_reset(headers.get("x-ratelimit-reset"), now, date=headers.get("Date"))
    if limit is None and remaining is None and reset is None:
        return None
    return RateLimit(limit=limit, remaining=remaining, reset=reset)


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)  # surrounding whitespace is allowed
    except ValueError:
        return None
    return number if number >= 0 else None


pacing_logger = logging.getLogger("svc_async.pacing")
"""Logs one INFO line when pacing holds calls for more than ``HOLD_LOG_AFTER`` seconds.

The one logger not named after its module: ``svc_async.pacing`` is a documented channel
(README, "Rate-limit pacing") that applications attach to, so its name is part of the API.

The record carries ``extra={"svc_hold_seconds": ..., "svc_hold_reason": ...}`` so a CLI
can show it (attach a handler to this logger).
"""

HOLD_LOG_AFTER = 1.0


class Pacer:
    """Holds calls back when the budget of the current window is spent.

    It counts its own calls exactly (each ``acquire`` spends one from the estimate) and
    corrects the estimate from every response: a ``remaining`` lower than the estimate
    means someone else shares the budget (the estimate already counts every call in
    flight, answered or not, so alone an answer never falls below it); one higher than
    the estimate plus the calls in flight means the server's window has reset. The
    window's end is the earliest ``receive time + reset`` seen in the window.

    A first answer lower than the limit less the pacer's own calls shows budget spent by
    someone else in this window, maybe a client that has finished: the next call goes
    alone, and its answer tells whether the other spender is still at work, before a
    burst on a count that may already be stale.

    Once the budget is seen to be shared (a 429, or a ``remaining`` below the estimate),
    calls are spread over what is left of the window (``left / remaining`` apart)
    instead of sent in a burst, and wake-ups at a window's end are jittered, so clients
    sharing one budget do not stampede. A wait longer than the caller's deadline raises
    ``PacingExceedsDeadline`` at once instead of sleeping.

    Times are read on ``clock`` (default: the system clock); a ``Client`` makes its
    pacer on the client's clock.
    """

    def __init__(self, *, rng: random.Random | None = None, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SYSTEM_CLOCK
        self._limit: int | None = None
        self._remaining: int | None = None
        self._window_end = math.inf
        self._in_flight = 0
        self._shared = False
        self._next_slot = 0.0
        self._rng = rng or random.Random()
        self._logged_until = 0.0
        self._answered = False
        self._sent = 0
        self._verifying = False
        self._probe_started = 0.0
        self.waits = 0
        self.waited = 0.0

    def __repr__(self) -> str:
        return f"<Pacer remaining={self._remaining} in_flight={self._in_flight}>"

    @property
    def shared(self) -> bool:
        """True once another client is seen spending the same budget."""
        return self._shared

    def _hold(self, now: float) -> float:
        """Seconds the next call must wait (0: it may go now, and it is counted)."""
        if self._remaining is None:
            if self._answered or self._in_flight == 0 or now - self._probe_started > _PROBE_WAIT:
                if self._in_flight == 0:
                    self._probe_started = now
                return 0.0
            # Nothing known yet: let the first call learn the budget before a burst (a
            # client joining a budget someone else drained would draw a 429 per call).
            return 0.005
        if now >= self._window_end:
            if self._limit is None:
                self._remaining = None  # no budget known: assume nothing
                return 0.0
            # The window has reset: the whole budget is back, less the calls in flight.
            self._remaining = max(0, self._limit - self._in_flight)
            self._window_end = math.inf
        if self._remaining > 0:
            if self._verifying and self._in_flight > 0:
                return 0.005  # someone else spent budget: one call tells if they still do
            if self._shared and self._in_flight >= _SHARED_IN_FLIGHT:
                return 0.005  # sharing: few calls in flight, so the answers stay current
            if self._shared and self._window_end != math.inf and now < self._next_slot:
                return self._next_slot - now
            if self._shared and self._window_end != math.inf:
                self._next_slot = now + (self._window_end - now) / (self._remaining + 1)
            self._remaining -= 1
            return 0.0
        if self._window_end == math.inf:
            return 0.0 if self._in_flight == 0 else 0.05
        delay = self._window_end - now
        if self._shared:
            delay += self._rng.uniform(0.0, min(0.5, 0.05 + 0.1 * delay))
        return delay

    def admit(self) -> bool:
        """Count a call as in flight if it may go at once (True); else False: ``acquire``.

        The synchronous fast path of ``acquire``, for the usual case of budget to spare.
        """
        if self._hold(self.clock.now()) > 0.0:
            return False
        self._count_sent()
        return True

    def _count_sent(self) -> None:
        self._in_flight += 1
        self._sent += 1

    async def acquire(
        self, deadline: float | None = None, loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        """Wait until a call fits in the budget, then count it as in flight.

        Raises ``PacingExceedsDeadline`` when the wait would end after ``deadline`` (a
        ``clock.now()`` value of the pacer's clock). ``loop`` is ignored (kept so older
        callers still work).
        """
        clock = self.clock
        started: float | None = None
        while True:
            now = clock.now()
            delay = self._hold(now)
            if delay <= 0.0:
                break
            if deadline is not None:
                left = deadline - now
                if delay >= left:
                    raise PacingExceedsDeadline(delay)
            if started is None:
                started = now
                self._log_hold(delay)
            self.waits += 1
            self.waited += delay
            await clock.sleep(delay)
        self._count_sent()

    def _log_hold(self, delay: float) -> None:
        now = self.clock.now()
        if delay <= HOLD_LOG_AFTER or now < self._logged_until:
            return
        self._logged_until = now + delay
        reason = "budget shared with another client" if self._shared else "window budget spent"
        pacing_logger.info(
            "rate limit: holding calls for %.1fs (%s; limit %s per window)",
            delay,
            reason,
            self._limit,
            extra={"svc_hold_seconds": delay, "svc_hold_reason": reason},
        )

    def release(
        self, headers: Mapping[str, str] | None, status: int | None = None
    ) -> RateLimit | None:
        """Count the call as done and learn from its headers (None: no response came)."""
        self._in_flight -= 1
        if headers is not None:
            self._answered = True
            self._verifying = False  # any answer ends a check; a first one may start it again
        wall = self.clock.wall() if headers is not None else None
        rate = parse_rate_limit(headers, wall) if headers is not None else None
        if status == 429:
            self._shared = True  # our own count said there was budget: someone else spent it
        if rate is None or rate.remaining is None:
            if status == 429 and headers is not None:
                wait = parse_retry_after(headers.get("Retry-After"), wall, date=headers.get("Date"))
                if wait is not None:
                    self._remaining = 0
                    self._window_end = min(self._window_end, self.clock.now() + wait + _MARGIN)
            return rate
        assert headers is not None
        if rate.limit is not None:
            self._limit = rate.limit
        reset = rate.reset
        remaining = 0 if status == 429 else rate.remaining
        if status == 429:
            # Retry-After is the server's most specific word on when to call again.
            retry_after = parse_retry_after(
                headers.get("Retry-After"), wall, date=headers.get("Date")
            )
            if retry_after is not None:
                reset = retry_after if reset is None else min(reset, retry_after)
        end = self.clock.now() + reset + _MARGIN if reset is not None else math.inf
        first = self._remaining is None
        if self._remaining is None or remaining > self._remaining + self._in_flight:
            # First answer, or the server's window reset before ours did.
            self._remaining = max(0, remaining - self._in_flight)
            self._window_end = end
            if first and self._limit is not None and remaining < self._limit - self._sent:
                self._verifying = not self._shared
        else:
            if remaining < self._remaining:
                self._shared = True
            if self._shared:
                # Calls still in flight may not be counted in this answer yet: with
                # another spender on the budget, assume they are not, and leave the
                # last call of the window to whoever else may be racing for it.
                remaining = max(0, remaining - self._in_flight - 1)
            self._remaining = min(self._remaining, remaining)
            self._window_end = min(self._window_end, end)
        return rate
