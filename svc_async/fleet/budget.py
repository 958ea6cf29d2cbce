"""One rate budget for every client of an account, kept in Redis (``FleetPacer``).

Two Lua scripts do the work, each atomic on the server, with the server's clock (so
machines whose clocks differ agree on when a window ends):

* ``take`` grants one call from the account's budget, or says how long to wait: until
  the window's end, or (``answer``) until an answer tells more: the first answer of the
  account, or the end of a window that has just begun.
* ``observe`` corrects the budget from an answer's ``x-ratelimit-*`` headers: a first
  answer sets it; a ``remaining`` above the budget plus the calls in flight means the
  service's window has reset; one below it means a spender outside the fleet, and the
  calls in flight are taken as not yet counted. Answers of an earlier window never
  lower the current one.

Calls in flight are leases in a sorted set, scored by the time each lapses: at a
window's end the budget is the limit less them, as any of them may land in the new
window. A lease is short (``_LEASE``) and its living holder renews it every
``_RENEW_EVERY`` seconds while the call runs, so a process killed mid-call gives its
share back within one lease, not at the end of the longest imaginable call.

The budget never holds a call longer than half the time the call has left: a store too
slow for that call paces it locally (the store's own timeout, not the caller's hurry,
decides whether the store is down), and a grant that arrives after the caller stopped
waiting is handed back.

While the store is unavailable the client paces with its local ``Pacer``, which sees
every answer either way, and rejoins the shared budget when the store is back.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .._pipeline.ratelimit import Pacer, Wakeup, parse_rate_limit
from ..errors import PacingExceedsDeadline
from ..models import RateLimit
from ..retry import parse_retry_after
from .keys import Keys
from .store import Store, cancel_and_wait

if TYPE_CHECKING:  # only a client given metrics= imports OpenTelemetry
    from .._pipeline.metrics import Metrics

_LEASE = 3.0
"""Seconds a call counts as in flight unless its holder renews it (a crashed holder's)."""

_RENEW_EVERY = 1.0
"""Seconds between a living holder's renewals of its leases."""

_PATIENCE = 0.5
"""The share of a call's time left that it may wait for the store's answer."""

_PROBE = 1.0
"""Longest the first call of an account holds the fleet's others while it learns the budget."""

_ANSWER_POLL = 0.02
"""Seconds between looks at the store while the fleet waits for an answer of another process."""

_MARGIN_MS = 50
"""Added after a reset time, to absorb rounding of the reset header."""

_TTL_MS = 3_600_000
"""An account's keys expire an hour after their last use."""

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local inflight = redis.call('ZCARD', KEYS[2])
local b = redis.call('HMGET', KEYS[1], 'limit', 'rem', 'end', 'gen', 'probe', 'done')
local limit, rem, wend = tonumber(b[1]), tonumber(b[2]), tonumber(b[3])
local gen, done = tonumber(b[4]) or 0, tonumber(b[6]) or 0
"""

_TAKE = (
    _NOW
    + """
-- ARGV: grant id, lease ms, probe ms, ttl ms
if rem and wend and now >= wend then
  gen, done, wend = gen + 1, 0, nil
  redis.call('HSET', KEYS[1], 'gen', gen, 'done', 0)
  redis.call('HDEL', KEYS[1], 'end')
  if limit then
    rem = math.max(0, limit - inflight)
    redis.call('HSET', KEYS[1], 'rem', rem)
  else
    rem = nil
    redis.call('HDEL', KEYS[1], 'rem')
  end
end
if not rem then
  local probe = tonumber(b[5])
  if probe and probe > now and inflight > 0 then
    return {0, probe - now, gen, 1, done}
  end
  redis.call('HSET', KEYS[1], 'probe', now + tonumber(ARGV[3]))
elseif rem > 0 then
  redis.call('HSET', KEYS[1], 'rem', rem - 1)
elseif wend then
  return {0, wend - now, gen, 0, done}
elseif inflight > 0 then
  return {0, 0, gen, 1, done}
end
-- (spent, no end known and nothing in flight: one call goes to learn the window)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return {1, 0, gen, 0, done}
"""
)

_OBSERVE = """
-- ARGV: grant id, grant's window, limit, remaining, reset ms, status, retry-after ms,
-- margin ms, answers seen in the window when granted (-1: not given)
redis.call('ZREM', KEYS[2], ARGV[1])
"""
_OBSERVE += _NOW
_OBSERVE += """
local granted_in, seen = tonumber(ARGV[2]), tonumber(ARGV[9])
local new_limit, remaining = tonumber(ARGV[3]), tonumber(ARGV[4])
local reset, status, retry = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local margin = tonumber(ARGV[8])
if new_limit >= 0 then
  limit = new_limit
  redis.call('HSET', KEYS[1], 'limit', limit)
end
local new_end = nil
if reset >= 0 then new_end = now + reset + margin end
if status == 429 and retry >= 0 then
  local e = now + retry + margin
  if not new_end or e < new_end then new_end = e end
  remaining = 0
end
if status == 429 and remaining >= 0 then remaining = 0 end
if remaining < 0 then return 0 end
local counted = 1
if status == 429 then counted = 0 end
-- Answers are applied in any order; a reset shows in one that is above what the calls
-- answered before this one was granted allow, and above the budget plus calls in flight.
local reset_seen = rem and limit and granted_in == gen
  and remaining > limit - seen - 1 and remaining > rem + inflight
if not rem or reset_seen then
  if rem then gen = gen + 1 end
  redis.call('HSET', KEYS[1], 'rem', math.max(0, remaining - inflight), 'gen', gen, 'done', 0)
  if new_end then
    redis.call('HSET', KEYS[1], 'end', new_end)
  else
    redis.call('HDEL', KEYS[1], 'end')
  end
  redis.call('HDEL', KEYS[1], 'probe')
  return 1
end
if granted_in ~= gen then return 0 end
redis.call('HINCRBY', KEYS[1], 'done', counted)
if remaining < rem then
  redis.call('HSET', KEYS[1], 'rem', math.max(0, remaining - inflight))
end
if new_end and (not wend or new_end < wend) then
  redis.call('HSET', KEYS[1], 'end', new_end)
end
return 1
"""


_RENEW = """
-- ARGV: lease ms, then the grant ids still in flight
local t = redis.call('TIME')
local until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[2], 'XX', until_ms, ARGV[i])
end
return #ARGV - 1
"""


@attrs.define(slots=True, frozen=True)
class _Grant:
    """A call admitted from the shared budget (``window`` None: by the local pacer)."""

    id: str
    window: int | None
    seen: int = 0
    """Answers the fleet had seen in the window when this call was granted."""


class FleetPacer:
    """Pacing from the account's budget in Redis; the local ``Pacer`` when it is away.

    Satisfies ``svc_async._pipeline.ratelimit.Pacing``, so the pipeline uses it like the local one.
    ``metrics`` counts each call admitted in ``svc_async.fleet.grants``: from the
    ``shared`` budget, or ``local`` (the store away or too slow for the call).
    """

    def __init__(
        self,
        store: Store,
        namespace: str,
        local: Pacer | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.local = local or Pacer()
        keys = Keys(namespace)
        self._keys = (keys.budget, keys.leases)
        self._take = store.script(_TAKE)
        self._observe = store.script(_OBSERVE)
        self._renew = store.script(_RENEW)
        self._heartbeat: asyncio.Task[None] | None = None
        self._prefix = os.urandom(8).hex()
        self._ids = itertools.count()
        self._grants: dict[Any, list[_Grant]] = {}
        self._writes: set[asyncio.Task[Any]] = set()
        self._wakeup = Wakeup()

    def __repr__(self) -> str:
        return f"<FleetPacer {self.store!r} local={self.local!r}>"

    def admit(self, now: float | None = None) -> bool:
        """Only the local pacer admits synchronously, and only while the store is away."""
        if self.store.available:
            return False
        if self.local.admit(now):
            self._granted(_Grant("", None))
            return True
        return False

    async def acquire(
        self, deadline: float | None = None, loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        """Wait for a call's turn in the shared budget (see ``Pacing.acquire``)."""
        clock = self.local.clock
        while self.store.available:
            left = None if deadline is None else deadline - clock.now()
            grant_id = f"{self._prefix}:{next(self._ids)}"
            args = (grant_id, int(_LEASE * 1000), int(_PROBE * 1000), _TTL_MS)
            answer = await self.store.run(
                self._take(self._keys, args),
                wait=None if left is None else left * _PATIENCE,
                late=functools.partial(self._give_back, grant_id),
            )
            if answer is None:  # the store failed, or is too slow for this call
                break
            granted, wait_ms, window, for_answer, seen = (int(x) for x in answer)
            if granted:
                self.local.count_sent()
                self._granted(_Grant(grant_id, window, seen))
                self._keep_alive()
                return
            wait = wait_ms / 1000.0
            if for_answer:
                wait = min(wait, _ANSWER_POLL) if wait > 0 else _ANSWER_POLL
            if deadline is not None and wait >= deadline - clock.now():
                raise PacingExceedsDeadline(wait)
            await self._wakeup.wait(clock, wait)
        await self.local.acquire(deadline)  # the store is away, or too slow for this call
        self._granted(_Grant("", None))

    async def _give_back(self, grant_id: str, answer: Any) -> None:
        """A grant that came after its caller stopped waiting: end its lease now."""
        if int(answer[0]):
            # ``observe`` with nothing learnt only removes the lease; the call it granted
            # stays counted as spent (the budget errs on the side of no 429).
            args = (grant_id, -1, -1, -1, -1, 0, -1, _MARGIN_MS, 0)
            await self.store.run(self._observe(self._keys, args))

    def _keep_alive(self) -> None:
        """Renew this process's leases while it holds any (one task, started on demand)."""
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.get_running_loop().create_task(self._renew_leases())

    def _held(self) -> list[str]:
        """The ids of shared-budget grants whose calls still run (a finished task's are
        dropped: its call was cancelled before it could release them)."""
        for task in [t for t in self._grants if t is not None and t.done()]:
            del self._grants[task]
        return [g.id for stack in self._grants.values() for g in stack if g.window is not None]

    async def _renew_leases(self) -> None:
        clock = self.local.clock
        while held := self._held():
            await clock.sleep(_RENEW_EVERY)
            held = self._held()
            if held:
                renew = (int(_LEASE * 1000), *held)
                await self.store.run(self._renew(self._keys, renew))

    def _granted(self, grant: _Grant) -> None:
        """Hold ``grant`` for the current task's call, and count it."""
        self._grants.setdefault(asyncio.current_task(), []).append(grant)
        if self.metrics is not None:
            self.metrics.granted("local" if grant.window is None else "shared")

    def _pop(self) -> _Grant | None:
        task = asyncio.current_task()
        stack = self._grants.get(task)
        if not stack:
            return None
        grant = stack.pop()
        if not stack:
            del self._grants[task]
        return grant

    def release(self, headers: Mapping[str, str] | None, status: int | None = None) -> None:
        """End the call: the local pacer learns from it, and the store in the background."""
        grant = self._pop()
        self.local.release(headers, status)
        if grant is not None and grant.window is not None:
            wall = self.local.clock.wall()
            rate = None if headers is None else parse_rate_limit(headers, wall)
            args = _observation(grant, rate, headers, status, wall)
            task = asyncio.get_running_loop().create_task(self._write(args))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)
        self._wakeup.notify()

    async def _write(self, args: tuple[Any, ...]) -> None:
        await self.store.run(self._observe(self._keys, args))
        self._wakeup.notify()

    async def flush(self) -> None:
        """Wait until the answers released so far are written (each bounded by the timeout)."""
        while self._writes:
            await asyncio.wait(set(self._writes), timeout=self.store.timeout * 2)

    async def aclose(self) -> None:
        """Let the answers still being written reach the store, then close it."""
        await self.flush()
        if self._heartbeat is not None:
            await cancel_and_wait(self._heartbeat, self.store.timeout)
        await self.store.aclose()


def _observation(
    grant: _Grant,
    rate: RateLimit | None,
    headers: Mapping[str, str] | None,
    status: int | None,
    wall: float,
) -> tuple[Any, ...]:
    """The ``observe`` script's arguments for one answer (-1: not given)."""
    retry = None
    if headers is not None:  # read as the local pacer reads it: against the answer's Date
        retry = parse_retry_after(headers.get("Retry-After"), wall, date=headers.get("Date"))

    def ms(value: float | None) -> int:
        return -1 if value is None else int(value * 1000)

    limit = -1 if rate is None or rate.limit is None else rate.limit
    remaining = -1 if rate is None or rate.remaining is None else rate.remaining
    reset = ms(None if rate is None else rate.reset)
    status_code = status or 0
    return (
        grant.id,
        grant.window,
        limit,
        remaining,
        reset,
        status_code,
        ms(retry),
        _MARGIN_MS,
        grant.seen,
    )
