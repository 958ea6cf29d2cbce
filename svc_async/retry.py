"""RetryPolicy: what is retried, how long to wait, and the client-wide retry budget.

The arithmetic here is pure (no sleeping, no I/O); the client's send pipeline applies it.
Vocabulary after hynek's stamina, shared with ``PollPolicy``: attempts, timeout,
wait_initial, wait_exp_base, wait_max, wait_jitter.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import math
import random
import threading
from collections.abc import Collection, Mapping

import attrs

from .clock import SYSTEM_CLOCK

RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504})
"""Statuses after which a request that is safe to repeat is sent again."""

EPOCH_THRESHOLD = 1_000_000_000
"""A reset or Retry-After value above this is an epoch time, not a number of seconds."""

EPOCH_MS_THRESHOLD = 100_000_000_000
"""Above this, an epoch time is in milliseconds."""

MAX_SERVER_WAIT = 86_400.0
"""The pacer does not believe a window reset more than a day away (it stands aside).

A retry never sleeps that long either: ``RetryPolicy.max_server_wait`` is at most this,
and a wait the server names beyond it raises at once, however large (see ``decide``).
"""

REFUSAL_FLOOR = 0.5
"""After a 429 or 503 that names no usable wait, the backoff is drawn from at least this
fraction of its ceiling, so a refusal is never retried at once."""


_INF = float("inf")


def _reference(now: float | None, date: str | None) -> float:
    """The clock a date or epoch time is read against: the answer's own ``Date`` header.

    A server's ``Retry-After`` date and its ``Date`` come from the same clock, so their
    difference is right even when the client's clock is off; without a valid ``Date``
    the client's clock (``now``, else the system clock's wall time) is used.
    """
    if date is not None:
        parsed = _http_date(date)
        if parsed is not None:
            return parsed
    return SYSTEM_CLOCK.wall() if now is None else now


def parse_http_date(value: str | None) -> dt.datetime | None:
    """An HTTP date (``Date``, ``Retry-After``) as an aware datetime (a date without a
    zone is UTC); None when absent or not a date."""
    if not isinstance(value, str):
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):  # Overflow: a huge year or zone
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def _http_date(value: str) -> float | None:
    """An HTTP date as epoch seconds; None if not one (or beyond the epoch's range)."""
    parsed = parse_http_date(value)
    try:
        return None if parsed is None else parsed.timestamp()
    except (OverflowError, ValueError, OSError):
        return None


def read_wait(
    value: str | None, now: float | None = None, *, date: str | None = None, dates: bool = True
) -> float | None:
    """Seconds from now that a ``Retry-After`` or ``x-ratelimit-reset`` value names, as given.

    A number is seconds, or an epoch time above 10**9 (milliseconds above 10**11); with
    ``dates`` an HTTP date is read too. Dates and epoch times are read against ``date``
    (the answer's ``Date`` header) when valid, else the client's clock. The result may
    be negative (in the past) and is never capped; None when the value is no number or
    date at all (missing, empty, garbage, NaN, infinite).
    """
    if value is None:
        return None
    value = str(value).strip()  # a transport of your own may hand a number
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        if not dates:
            return None
        when = _http_date(value)
        return None if when is None else when - _reference(now, date)
    if seconds != seconds or seconds in (_INF, -_INF):
        return None
    if seconds > EPOCH_MS_THRESHOLD:
        seconds /= 1000.0
    if seconds > EPOCH_THRESHOLD:
        seconds -= _reference(now, date)
    return seconds


_testing = False


def set_testing(enabled: bool) -> None:
    """Zero every backoff wait (not the attempt counts): for your test suites."""
    global _testing
    _testing = enabled


def is_testing() -> bool:
    """Whether ``set_testing(True)`` is in force."""
    return _testing


@attrs.frozen(slots=True, kw_only=True)
class RetryPolicy:
    """How a failed request is retried, in stamina's words.

    ``attempts`` is the most attempts a call makes (1: no retries). Backoff is
    exponential: the ceiling after attempt ``n`` is ``min(wait_max, wait_initial *
    wait_exp_base ** (n - 1))``, and ``wait_jitter`` is the fraction of it drawn at
    random: the wait is uniform in ``[ceiling * (1 - wait_jitter), ceiling]``, so the
    default 1.0 is full jitter and 0.0 waits exactly the ceiling. A server-directed wait
    (``Retry-After``, or ``x-ratelimit-reset`` on 429) is honoured up to
    ``max_server_wait`` seconds (at most a day); a longer one is raised as
    ``RateLimitError`` instead of being slept through. ``retry_wait`` is the whole rule
    for how long a retry waits. How long a call may take in all is the call's
    ``timeout`` (or the client's), never the policy's.
    """

    attempts: int = 4
    wait_initial: float = 0.5
    wait_max: float = 8.0
    wait_exp_base: float = 2.0
    wait_jitter: float = 1.0
    max_server_wait: float = 60.0
    statuses: frozenset[int] = RETRYABLE_STATUSES

    def __attrs_post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise TypeError("attempts must be an int")
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        for name in ("wait_initial", "wait_max", "wait_exp_base", "max_server_wait"):
            _finite(getattr(self, name), name)
        if self.wait_initial < 0 or self.wait_max < 0 or self.wait_exp_base < 1:
            raise ValueError("waits must be non-negative and wait_exp_base at least 1")
        statuses = self.statuses
        if isinstance(statuses, str | bytes) or not isinstance(statuses, Collection):
            raise TypeError(f"statuses must be a collection of ints, got {statuses!r}")
        if not all(type(status) is int for status in statuses):
            raise TypeError(f"statuses must hold ints (HTTP statuses), got {statuses!r}")
        if isinstance(self.wait_jitter, bool) or not 0 <= self.wait_jitter <= 1:
            raise ValueError(f"wait_jitter must be a fraction in [0, 1], got {self.wait_jitter!r}")
        if not 0 <= self.max_server_wait <= MAX_SERVER_WAIT:
            raise ValueError(
                f"max_server_wait must be between 0 and {MAX_SERVER_WAIT:g} seconds (a day),"
                f" got {self.max_server_wait!r}"
            )

    def ceiling(self, attempt: int) -> float:
        """The longest wait after failed attempt ``attempt`` (1-based): no jitter."""
        if _testing:
            return 0.0
        try:
            grown = self.wait_initial * self.wait_exp_base ** (attempt - 1)
        except OverflowError:  # beyond any float, so beyond wait_max, unless it starts at 0
            grown = _INF if self.wait_initial else 0.0
        return min(self.wait_max, grown)

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return jittered(self.ceiling(attempt), self.wait_jitter, rng)

    def retry_wait(
        self, attempt: int, backoff: float, server_wait: float | None, *, refused: bool
    ) -> float:
        """How long to wait before retrying after failed attempt ``attempt``: the one rule.

        ``backoff`` is what ``backoff(attempt)`` drew. With a usable server wait the
        retry waits that plus the backoff, so clients told the same wait do not wake
        together. A refusal (429, 503) naming no usable wait lifts the backoff to at least
        ``REFUSAL_FLOOR`` of its ceiling, keeping it jittered: never an immediate retry.
        Anything else waits the backoff.
        """
        if server_wait is not None:
            return server_wait + backoff
        if refused:
            return self.ceiling(attempt) * REFUSAL_FLOOR + backoff * (1.0 - REFUSAL_FLOOR)
        return backoff


def _finite(value: object, name: str) -> None:
    """``TypeError`` unless ``value`` is a number, ``ValueError`` unless a finite one:
    a NaN wait never ends (a NaN timer never fires), an infinite one neither."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def jittered(wait: float, wait_jitter: float, rng: random.Random | None = None) -> float:
    """``wait`` with the fraction ``wait_jitter`` of it drawn at random, never above it.

    The one meaning of ``wait_jitter`` in ``RetryPolicy`` and ``PollPolicy``: the result
    is uniform in ``[wait * (1 - wait_jitter), wait]`` (1.0: full jitter; 0.0: none).
    """
    if not wait_jitter:
        return wait
    return (rng or random).uniform(wait * (1.0 - wait_jitter), wait)


def parse_retry_after(
    value: str | None, now: float | None = None, *, date: str | None = None
) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date.

    Negative values and dates in the past give 0; garbage, and waits beyond
    ``MAX_SERVER_WAIT``, give None (what the pacer believes; the retry decision reads
    the value whole through ``server_wait``).
    """
    seconds = read_wait(value, now, date=date)
    if seconds is None or seconds > MAX_SERVER_WAIT:
        return None
    return max(0.0, seconds)


def parse_reset(
    value: str | None, now: float | None = None, *, date: str | None = None
) -> float | None:
    """Seconds until the rate window resets, from ``x-ratelimit-reset``.

    The service sends seconds until reset (``60``); a value that looks like an epoch
    time (above 10**9; above 10**11 in milliseconds) is read as one, against ``date``
    (the answer's ``Date``) when given. Negative, garbage and absurd values (more than
    a day away) give None; an epoch time in the past gives 0.
    """
    if value is None:
        return None
    until = read_wait(value, now, date=date, dates=False)
    if until is None or until > MAX_SERVER_WAIT or float(str(value)) < 0:
        return None  # garbage, NaN, infinite, absurd, or a negative number of seconds
    return max(0.0, until)  # an epoch time in the past is due now


def server_wait(status: int, headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a refusal names, in seconds, or None when it names no usable wait.

    ``Retry-After``, else on a 429 ``x-ratelimit-reset``; dates and epoch times are read
    against the answer's ``Date``. Only a positive wait counts: zero, negative, a past
    date, garbage and a missing header are all "no usable wait". Nothing is capped: a
    wait of two days is two days (the retry decision raises it at once). ``now`` is the
    client's wall time, used only when the answer has no valid ``Date``.
    """
    date = headers.get("Date")
    wait = read_wait(headers.get("Retry-After"), now, date=date)
    if (wait is None or wait <= 0) and status == 429:
        wait = read_wait(headers.get("x-ratelimit-reset"), now, date=date, dates=False)
    return wait if wait is not None and wait > 0 else None


class RetryBudget:
    """A token bucket shared by one client so an outage does not become a retry storm.

    Each retry spends ``retry_cost`` tokens (``timeout_cost`` after a timeout), each
    success returns ``refill`` tokens; with too few tokens a failure is raised at once.
    """

    def __init__(
        self,
        capacity: int = 500,
        *,
        retry_cost: int = 5,
        timeout_cost: int = 10,
        refill: int = 1,
    ) -> None:
        for name, value in (
            ("capacity", capacity),
            ("retry_cost", retry_cost),
            ("timeout_cost", timeout_cost),
            ("refill", refill),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
            if value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")
        self.capacity = capacity
        self.retry_cost = retry_cost
        self.timeout_cost = timeout_cost
        self.refill = refill
        self._tokens = capacity
        self._lock = threading.Lock()

    @property
    def tokens(self) -> int:
        """Tokens left."""
        return self._tokens

    def cost(self, *, timeout: bool = False) -> int:
        """The tokens one retry costs (``timeout_cost`` after a timeout)."""
        return self.timeout_cost if timeout else self.retry_cost

    def spend(self, cost: int) -> None:
        """Take ``cost`` tokens for a retry the pipeline decided it can afford.

        Never below zero: clients in other threads sharing the budget may have spent
        the same tokens since the check.
        """
        with self._lock:
            self._tokens = max(0, self._tokens - cost)

    def try_spend(self, *, timeout: bool = False) -> bool:
        """Take the cost of one retry; False when the budget cannot afford it."""
        cost = self.cost(timeout=timeout)
        with self._lock:
            if self._tokens < cost:
                return False
            self._tokens -= cost
            return True

    def record_success(self) -> None:
        """Give back ``refill`` tokens, up to capacity."""
        if self._tokens < self.capacity:
            with self._lock:
                self._tokens = min(self.capacity, self._tokens + self.refill)
