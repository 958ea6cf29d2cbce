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
import contextlib
import logging
import math
import random
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import PacingExceedsDeadline
from ..models import RateLimit
from ..retry import parse_reset, parse_retry_after

_PROBE_WAIT = 1.0
"""Longest the first call of a client holds the others while it learns the budget."""

_FAR = 4
"""With another spender, calls go unhindered while the estimated budget left is at least
``_FAR`` times the spenders' calls that may be in flight; nearer its end they spread."""

_ANSWER_WAIT = 1.0
"""Longest a call waits for an answer that tells the budget (woken by the answer)."""

_MARGIN = 0.05
"""Seconds added after a reset time, to absorb rounding of the reset header."""

_SLACK = 0.001
"""A slot or window end this close is due now: a shorter sleep may not move the clock
(a loop's time is coarse, or virtual), and the pacer would spin on it."""


_LIMIT, _REMAINING, _RESET = "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"


def parse_rate_limit(headers: Mapping[str, str], now: float | None = None) -> RateLimit | None:
    """The rate-limit headers of a response, or None when it has none.

    ``now`` is the wall time an epoch reset is read against (default: the system clock's).
    """
    limit = header_count(headers.get(_LIMIT))
    remaining = header_count(headers.get(_REMAINING))
    reset = parse_reset(headers.get(_RESET), now, date=headers.get("Date"))
    if limit is None and remaining is None and reset is None:
        return None
    return RateLimit(limit=limit, remaining=remaining, reset=reset)


def header_count(value: str | None) -> int | None:
    """A rate-limit header's count (None: absent, or no count of 0 or more), as the
    pacer, ``parse_rate_limit`` and the metrics read it."""
    if value is None:
        return None
    try:
        number = int(value)  # surrounding whitespace is allowed
    except ValueError:
        return None
    return number if number >= 0 else None


class _RateHeaders:
    """Reads answers' limit and reset headers as ``parse_rate_limit`` does, parsing only
    what changed.

    Answers in a row repeat the limit and mostly the reset (``remaining`` changes every
    time, and is parsed every time): a limit, or a reset in seconds, the same string as
    the last answer's is not parsed again. A reset that is an epoch time is read
    against the clock each time. Kept for its figure: parsing both anew on every answer
    took the default client from 0.81 of the typed ceiling to 0.76 and 0.77
    (``bench_paired``, small answers at c=32, 2026-12-04): 6 % of a paced call's time,
    though only 1.8 % of its instructions (444,600 against 452,800).
    """

    __slots__ = ("_limit", "_limit_raw", "_reset", "_reset_raw")

    def __init__(self) -> None:
        self._limit_raw: str | None = None
        self._limit: int | None = None
        self._reset_raw: str | None = None
        self._reset: float | None = None

    def limit(self, headers: Mapping[str, str]) -> int | None:
        """``x-ratelimit-limit`` (None: absent or not a count)."""
        raw = headers.get(_LIMIT)
        if raw != self._limit_raw:
            self._limit_raw, self._limit = raw, header_count(raw)
        return self._limit

    def reset(self, headers: Mapping[str, str], clock: Clock) -> float | None:
        """Seconds to ``x-ratelimit-reset`` (None: absent or unusable); an epoch time is
        read against ``clock``'s wall time (or the answer's ``Date``)."""
        raw = headers.get(_RESET)
        if raw is None:
            return None
        if raw == self._reset_raw:
            return self._reset
        reset = parse_reset(raw, clock.wall(), date=headers.get("Date"))
        if reset is not None and reset == float(raw):  # seconds, not an epoch time: keep it
            self._reset_raw, self._reset = raw, reset
        return reset


@runtime_checkable
class Pacing(Protocol):
    """What the pipeline asks of pacing: the local ``Pacer`` and a fleet's shared budget.

    ``admit`` counts a call that may go at once (the synchronous fast path); otherwise
    ``acquire`` waits until it may, raising ``PacingExceedsDeadline`` when that would be
    past ``deadline``; ``release`` ends the call, learning from its answer's headers.
    ``release`` is called by the task that admitted the call (the client parses the
    headers for ``rate_limit`` itself, when asked). ``admit`` is handed the
    time when the caller has just read it on the pacer's ``clock`` (the pipeline does
    when that is the client's clock), None otherwise: one clock read less per call.
    """

    def admit(self, now: float | None = None) -> bool: ...

    async def acquire(
        self, deadline: float | None = None, loop: asyncio.AbstractEventLoop | None = None
    ) -> None: ...

    def release(self, headers: Mapping[str, str] | None, status: int | None = None) -> None: ...


class Wakeup:
    """Waiters that sleep until a deadline or until ``notify`` (an answer came), if sooner.

    Pacing waits on events: an answer may free budget or tell when the window ends, so
    every waiter looks again when one arrives instead of polling.
    """

    __slots__ = ("_waiters",)

    def __init__(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []

    async def wait(self, clock: Clock, timeout: float) -> None:
        """Return after ``timeout`` seconds on ``clock``, or at the next ``notify``."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        sleeper = asyncio.ensure_future(clock.sleep(max(0.0, timeout)))
        try:
            await asyncio.wait((future, sleeper), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            future.cancel()
            with contextlib.suppress(ValueError):
                self._waiters.remove(future)

    def notify(self) -> None:
        """Wake every waiter."""
        if self._waiters:
            waiters, self._waiters = self._waiters, []
            for future in waiters:
                if not future.done():
                    future.set_result(None)


pacing_logger = logging.getLogger("svc_async.pacing")
"""Logs one INFO line when pacing holds calls for more than ``HOLD_LOG_AFTER`` seconds.

The one logger not named after its module: ``svc_async.pacing`` is a documented channel
(the docs' "Rate-limit pacing" guide) that applications attach to, so its name is part of the API.

The record carries ``extra={"svc_hold_seconds": ..., "svc_hold_reason": ...}`` so a CLI
can show it (attach a handler to this logger).
"""

HOLD_LOG_AFTER = 1.0


class Pacer:
    """Holds calls back when the budget of the current window is spent.

    It counts its own calls exactly (each ``acquire`` spends one from the estimate) and
    corrects the estimate from the responses: a ``remaining`` lower than the estimate
    means someone else shares the budget (the estimate already counts every call in
    flight, answered or not, so alone an answer never falls below it); one higher than
    the estimate plus the calls in flight means the server's window has reset. The
    window's end is the earliest ``receive time + reset`` seen in the window.

    Every answer is read (reading one in eight, while alone and far from the window's
    end, saved 1.5 % of a small call's instructions: under the 5 % a special case must
    buy).

    A first answer lower than the limit less the pacer's own calls shows budget spent by
    someone else in this window, maybe a client that has finished: the next call goes
    alone, and its answer tells whether the other spender is still at work, before a
    burst on a count that may already be stale.

    Once the budget is seen to be shared (a 429, or a ``remaining`` below the estimate),
    the pacer estimates how many spenders share it (``spenders``: the calls spent per
    call of its own). While the budget left is far above what they may have in flight,
    calls go unhindered; nearer the window's end, they are spread over what is left of it
    (this client's share: ``remaining / spenders``), wake-ups at a window's end are
    jittered, and the first call of a new window goes alone to learn what is left, so
    clients sharing one budget do not stampede. Waits end early when an answer comes
    (``Wakeup``): nothing polls. A wait longer than the caller's deadline raises
    ``PacingExceedsDeadline`` at once instead of sleeping.

    Times are read on ``clock`` (default: the system clock); a ``Client`` makes its
    pacer on the client's clock.
    """

    def __init__(self, *, rng: random.Random | None = None, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or SYSTEM_CLOCK
        self._limit: int | None = None
        self._remaining: int | None = None
        self._window_end = math.inf
        self._end_reset: float | None = None
        """The reset whose end, read when its answer came, ``_window_end`` is no later than."""
        self._in_flight = 0
        self._shared = False
        self._next_slot = 0.0
        self._rng = rng or random.Random()
        self._logged_until = 0.0
        self._answered = False
        self._verifying = False
        self._probe_started = 0.0
        self._mine = 0.0
        self._others = 0.0
        self._wakeup = Wakeup()
        self._headers = _RateHeaders()
        self.waits = 0
        self.waited = 0.0

    def __repr__(self) -> str:
        return f"<Pacer remaining={self._remaining} in_flight={self._in_flight}>"

    @property
    def shared(self) -> bool:
        """True once another client is seen spending the same budget."""
        return self._shared

    @property
    def spenders(self) -> float:
        """Estimated spenders of the budget, this client counting one (1.0: alone)."""
        if not self._shared:
            return 1.0
        return max(2.0, 1.0 + self._others / max(1.0, self._mine))

    def _hold(self, now: float) -> float:
        """Seconds the next call must wait (0: it may go now, and it is counted).

        A wait for an answer (the budget's first, or a check) is ended early by it.
        """
        if self._remaining is None:
            return self._hold_unknown(now)
        if now >= self._window_end - _SLACK:
            if self._limit is None:
                self._remaining = None  # no budget known: assume nothing
                return 0.0
            self._next_window(self._limit)
        if self._remaining <= 0:
            return self._hold_spent(now)
        if self._verifying and self._in_flight > 0:
            return _ANSWER_WAIT  # someone else spent budget: one call tells if they still do
        if self._shared and self._window_end != math.inf:
            delay = self._spread(now, self._remaining)
            if delay > 0.0:
                return delay
        self._remaining -= 1
        return 0.0

    def _hold_unknown(self, now: float) -> float:
        """``_hold`` before the budget is known."""
        probed = now - self._probe_started > _PROBE_WAIT - _SLACK
        if self._answered or self._in_flight == 0 or probed:
            if self._in_flight == 0:
                self._probe_started = now
            return 0.0
        # Nothing known yet: let the first call learn the budget before a burst (a
        # client joining a budget someone else drained would draw a 429 per call).
        return self._probe_started + _PROBE_WAIT - now

    def _next_window(self, limit: int) -> None:
        """The window has reset: the whole budget is back, less the calls in flight."""
        self._remaining = max(0, limit - self._in_flight)
        self._window_end = math.inf
        self._end_reset = None
        self._mine, self._others = self._mine / 2, self._others / 2  # the past fades
        if self._shared:
            self._verifying = True  # others race for it too: one call learns what is left

    def _spread(self, now: float, remaining: int) -> float:
        """Seconds a call waits, with other spenders, for this client's share (0: none).

        Far from the window's end calls go unhindered; near it, this client's share of
        what is left is spread over the rest of the window.
        """
        spenders = self.spenders
        if remaining >= _FAR * spenders * (self._in_flight + 1):
            return 0.0
        if now < self._next_slot - _SLACK:
            return self._next_slot - now
        share = remaining / spenders
        left = self._window_end - now
        if share < 1.0 and self._rng.random() >= share:
            # Less than a call's share left: this client takes it with that
            # chance, else sits the window out (the spenders' sum: the budget).
            self._next_slot = self._window_end
            return left
        self._next_slot = now + left / (share + 1.0)
        return 0.0

    def _hold_spent(self, now: float) -> float:
        """``_hold`` once the window's budget is spent: until it ends, or an answer comes."""
        if self._window_end == math.inf:
            return 0.0 if self._in_flight == 0 else _ANSWER_WAIT
        delay = self._window_end - now
        if self._shared:
            delay += self._rng.uniform(0.0, min(0.5, 0.05 + 0.1 * delay))
        return delay

    def admit(self, now: float | None = None) -> bool:
        """Count a call as in flight if it may go at once (True); else False: ``acquire``.

        The synchronous fast path of ``acquire``, for the usual case of budget to spare.
        ``now`` is the time on ``clock`` if the caller has just read it (None: read it).
        """
        if self._hold(self.clock.now() if now is None else now) > 0.0:
            return False
        self.count_sent()
        return True

    def count_sent(self) -> None:
        """Count a call admitted elsewhere (a fleet's budget) as in flight."""
        self._in_flight += 1
        self._mine += 1

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
            await self._wakeup.wait(clock, delay)  # an answer may end the wait early
        self.count_sent()

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

    def release(self, headers: Mapping[str, str] | None, status: int | None = None) -> None:
        """Count the call as done and learn from its headers (None: no response came)."""
        self._in_flight -= 1
        self._wakeup.notify()
        if status == 429:
            self._shared = True  # our own count said there was budget: someone else spent it
        if headers is None:
            return
        self._answered = True
        self._verifying = False  # any answer ends a check; a first one may start it again
        if status == 429:
            self._refused(headers)
            return
        remaining = header_count(headers.get(_REMAINING))
        if remaining is not None:
            reader = self._headers
            self._learn(reader.limit(headers), remaining, reader.reset(headers, self.clock))

    def _refused(self, headers: Mapping[str, str]) -> None:
        """Learn from a 429: nothing left until the reset, or ``Retry-After`` if sooner."""
        wall = self.clock.wall()
        rate = parse_rate_limit(headers, wall)
        # Retry-After is the server's most specific word on when to call again.
        wait = parse_retry_after(headers.get("Retry-After"), wall, date=headers.get("Date"))
        if rate is not None and rate.remaining is not None:
            reset = rate.reset
            if wait is not None:
                reset = wait if reset is None else min(reset, wait)
            self._learn(rate.limit, 0, reset)
        elif wait is not None:
            self._remaining = 0
            self._window_end = min(self._window_end, self.clock.now() + wait + _MARGIN)

    def _learn(self, limit: int | None, remaining: int, reset: float | None) -> None:
        """Correct the estimate from an answer's ``remaining`` and seconds to ``reset``."""
        if limit is not None:
            self._limit = limit
        if self._remaining is None or remaining > self._remaining + self._in_flight:
            # The first answer, or the server's window reset first.
            self._restart(remaining, self._end(reset))
        else:
            self._correct(self._remaining, remaining, reset)

    def _end(self, reset: float | None) -> float:
        """The window's end by an answer received now that says ``reset`` (inf: none said)."""
        self._end_reset = reset
        return math.inf if reset is None else self.clock.now() + reset + _MARGIN

    def _restart(self, remaining: int, end: float) -> None:
        """A window begins at the server's word: its ``remaining``, ending at ``end``."""
        first = self._remaining is None
        self._remaining = max(0, remaining - self._in_flight)
        self._window_end = end
        # Before the first window nothing has halved ``_mine``: it is every call sent.
        if first and self._limit is not None and remaining < self._limit - self._mine:
            self._verifying = not self._shared
            self._others += self._limit - self._mine - remaining  # spent before us

    def _correct(self, estimate: int, remaining: int, reset: float | None) -> None:
        """An answer of the current window: less left than the estimate is someone else's."""
        if remaining < estimate:
            self._shared = True
            self._others += estimate - remaining
        if self._shared:
            # Calls still in flight may not be counted in this answer yet: with
            # other spenders on the budget, assume they are not, ours nor theirs
            # (one each).
            others = max(1, round(self.spenders - 1.0))
            remaining = max(0, remaining - self._in_flight - others)
        self._remaining = min(estimate, remaining)
        if reset is not None and (self._end_reset is None or reset < self._end_reset):
            self._window_end = min(self._window_end, self._end(reset))
        # Else the end stays: an earlier answer said as few seconds or fewer
        # (``_end_reset``), and it came sooner; this one's end can only be later.
