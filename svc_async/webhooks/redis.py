"""The fleet's delivery backend: replicas acting as one, over Redis.

``RedisBackend`` is the ``Backend`` a ``WebhookReceiver(fleet=...)`` chooses. It routes
each delivery by its key's ``scope`` (the namespace: the account's, or the webhook
secret's the delivery came with, so replicas on ``s1`` and on ``["s1", "s2"]`` share a
rotation), and applies the rules of ``svc_async.webhooks.core`` fleet-wide:

* dedupe (``claim``): a delivery slot is claimed with one atomic script, so the
  same delivery sent to two replicas is taken by one. A claim is remembered for
  ``dedupe_window`` seconds: Redis holds recent history only.
* order and at-least-once (``submit``): a claimed delivery's body, as it was
  received, is sealed (``seal``) and added to its kind's stream with its place in its
  subject's order, in one script. Replicas read only the kinds they have callbacks
  for, so none takes a delivery it cannot run; each entry is parsed once there. A job
  waits for the one before it about the same subject to settle, in whichever replica,
  so order per job holds across the fleet. While a replica holds an entry it renews it
  (``XCLAIM ... JUSTID``) every third of ``claim_after``: only a dead replica's entries
  go idle and are taken over (``XAUTOCLAIM``). A settled entry is acknowledged and
  deleted; the replica that received a delivery keeps it until it has settled
  anywhere, and adds it again if a restarted, empty Redis lost it.

Output-file deliveries run on the replica that received them (deduplicated fleet-wide).
A status update is published (``wake``) so ``jobs.wait`` wakes in every process. With
the store away, deliveries are handled locally and deduplicated in this process only.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from operator import methodcaller
from typing import TYPE_CHECKING, Any

import attrs

from ..clock import Clock
from ..errors import WebhookPayloadError
from ..fleet.keys import GROUP, KINDS, Keys, scope_for
from ..fleet.seal import Seal
from ..fleet.store import Store, cancel_and_wait
from .core import DeliveryKey, Inbound, Secrets
from .delivery import Callbacks, DeliveryJob, MemoryBackend, kind_name
from .payloads import JobStatusUpdate, parse_delivery
from .waiters import Waiters
from .wake import JobWake

if TYPE_CHECKING:  # only a receiver given metrics= imports OpenTelemetry
    from .._pipeline.metrics import Metrics

logger = logging.getLogger(__name__)

DEDUPE_WINDOW = 600.0
"""Seconds a delivery slot is remembered fleet-wide after it was claimed."""

_ORDER_TTL_MS = 6 * 3600 * 1000
"""How long an unread stream, and the order of a subject with deliveries still unsettled,
outlive their last delivery (a subject with none left has no order kept at all)."""

_BLOCK_MS = 200
_BATCH = 32
_TIDY_EVERY = 60.0
_DEAD_CONSUMER_MS = 600_000
"""A consumer idle this long with nothing pending is a replica gone: forgotten."""

_CLAIM = """
-- KEYS: seen (slot -> version), seen:ages (slot by claim time); ARGV: slot, version,
-- window ms, size. The window keeps the last ``size`` slots of the last ``window`` ms.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[3]),
  'LIMIT', 0, 256)
for _, slot in ipairs(old) do
  redis.call('HDEL', KEYS[1], slot)
  redis.call('ZREM', KEYS[2], slot)
end
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if over > 0 then
  local gone = redis.call('ZPOPMIN', KEYS[2], over)
  for i = 1, #gone, 2 do redis.call('HDEL', KEYS[1], gone[i]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
"""

_RELEASE = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 1
"""

_ENQUEUE = """
-- KEYS: stream, order, epoch; ARGV: ttl ms, group, epoch if new, gen if new, then fields
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[2], '0', 'MKSTREAM')
end
local epoch = redis.call('GET', KEYS[3])
if not epoch then
  epoch = ARGV[3]
  redis.call('SET', KEYS[3], epoch)
end
redis.call('PEXPIRE', KEYS[3], ARGV[1])
local seq = redis.call('HINCRBY', KEYS[2], 'seq', 1)
if seq == 1 then redis.call('HSET', KEYS[2], 'done', 0, 'gen', ARGV[4]) end
local gen = redis.call('HGET', KEYS[2], 'gen')
redis.call('PEXPIRE', KEYS[2], ARGV[1])
local fields = {'seq', seq, 'gen', gen}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[1], '*', unpack(fields))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {id, seq, epoch, gen}
"""

_PREPARE = """
-- KEYS: streams; ARGV: group, consumer, idle ms, count, ttl ms
local out = {}
for i, stream in ipairs(KEYS) do
  if redis.call('EXISTS', stream) == 0 then
    redis.call('XGROUP', 'CREATE', stream, ARGV[1], '0', 'MKSTREAM')
    redis.call('PEXPIRE', stream, ARGV[5])
  end
  local stale = redis.call('XAUTOCLAIM', stream, ARGV[1], ARGV[2], ARGV[3], '0-0',
    'COUNT', ARGV[4])
  out[i] = stale[2]
end
return out
"""

_SETTLE = """
-- KEYS: stream, order; ARGV: group, entry id, seq, gen
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
local o = redis.call('HMGET', KEYS[2], 'done', 'seq', 'gen')
if o[3] ~= ARGV[4] then return 1 end  -- the subject's order has moved on meanwhile
local done = math.max(tonumber(o[1]), tonumber(ARGV[3]))
if done >= tonumber(o[2]) then
  redis.call('DEL', KEYS[2])  -- all of the subject's settled: nothing to order now
else
  redis.call('HSET', KEYS[2], 'done', done)
end
return 1
"""

_SWEEP = """
-- KEYS: the epoch, then pairs of (order key, stream); ARGV: for each pair its seq,
-- entry id, epoch and gen. 1: settled; 0: not yet; -1: the store lost it (restarted
-- empty, or failed over before the entry reached the replica now in charge)
local epoch = redis.call('GET', KEYS[1])
local out = {}
for i = 2, #KEYS, 2 do
  local a = (i - 2) * 2 + 1
  local seq, id = tonumber(ARGV[a]), ARGV[a + 1]
  local o = redis.call('HMGET', KEYS[i], 'done', 'gen')
  local done = tonumber(o[1])
  local state = 0
  if epoch ~= ARGV[a + 2] then
    state = -1
  elseif not done or o[2] ~= ARGV[a + 3] or done >= seq then
    state = 1  -- settled (the order of a subject with nothing left is deleted)
  elseif #redis.call('XRANGE', KEYS[i + 1], id, id) == 0 then
    state = -1
    -- next in line: the deliveries after it need not wait for its copy, added anew
    if done == seq - 1 then redis.call('HSET', KEYS[i], 'done', seq) end
  end
  out[#out + 1] = state
end
return out
"""

_TIDY = """
-- KEYS: streams; ARGV: group, idle ms past which a consumer with nothing pending goes
local gone = 0
for _, stream in ipairs(KEYS) do
  if redis.call('EXISTS', stream) == 1 then
    for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', stream, ARGV[1])) do
      local info = {}
      for j = 1, #c, 2 do info[c[j]] = c[j + 1] end
      if info['pending'] == 0 and info['idle'] > tonumber(ARGV[2]) then
        redis.call('XGROUP', 'DELCONSUMER', stream, ARGV[1], info['name'])
        gone = gone + 1
      end
    end
  end
end
return gone
"""


def _seen(scope: str) -> list[str]:
    keys = Keys(scope)
    return [keys.seen, keys.seen_ages]


@attrs.define(eq=False)
class _Held:
    """A stream entry this replica runs: where it is, and its place in its subject."""

    stream: str
    entry_id: bytes
    order: str
    seq: int
    gen: bytes


@attrs.define(eq=False)
class _Sent(_Held):
    """A delivery this replica added to a stream (where, as ``_Held``), kept until it
    settled anywhere."""

    job: DeliveryJob
    epoch: bytes
    added: float


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _fields(raw: Any) -> dict[str, bytes]:
    """A stream entry's fields as a dict (redis-py gives one; a script, a flat list)."""
    if isinstance(raw, dict):
        return {_text(k): v for k, v in raw.items()}
    pairs = list(raw)
    return {_text(pairs[i]): pairs[i + 1] for i in range(0, len(pairs), 2)}


class RedisBackend(MemoryBackend):
    """The fleet's backend for one ``WebhookReceiver``: its dedupe window, streams and
    job wake-ups on the Redis at ``url`` (see the module). Its jobs run in this process
    as ``MemoryBackend`` runs them, each in its turn fleet-wide; the inherited ``ledger``
    is this process's own window (of the same size), which answers while the store is
    away.

    With ``account`` every delivery belongs to the account's namespace; without it, to
    the namespace of the secret it came with (``scope_for``), so replicas that share a
    secret share its deliveries through a rotation.
    """

    def __init__(
        self,
        url: str,
        callbacks: Callbacks,
        waiters: Waiters,
        *,
        secrets: Secrets,
        account: str | None,
        clock: Clock,
        claim_after: float = 30.0,
        dedupe_window: float = DEDUPE_WINDOW,
        dedupe_size: int = 10_000,
        metrics: Metrics | None = None,
    ) -> None:
        super().__init__(callbacks, waiters, dedupe_size=dedupe_size, clock=clock)
        self.seals = [Seal(secret) for secret in secrets.values]
        self._by_kid = {seal.kid: seal for seal in self.seals}
        self._secret_scopes = [scope_for(account, secret) for secret in secrets.values or (b"",)]
        self.scopes = tuple(dict.fromkeys(self._secret_scopes))
        self.store = Store(url, clock=clock, metrics=metrics, role="receiver")
        self.window_ms = int(dedupe_window * 1000)
        self.claim_after = claim_after
        self.consumer = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"
        self.wake = JobWake(self.store, waiters, [Keys(scope).channel for scope in self.scopes])
        """The job wake-ups of this receiver's namespaces."""
        self._held: dict[DeliveryJob, _Held] = {}
        self._sent: dict[DeliveryJob, _Sent] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # settlements and wake-ups being written
        self._readers: dict[str, asyncio.Task[None]] = {}
        self._keeper: asyncio.Task[None] | None = None
        self._closed = False
        self._listening = False
        self._claim = self.store.script(_CLAIM)
        self._release = self.store.script(_RELEASE)
        self._enqueue = self.store.script(_ENQUEUE)
        self._prepare = self.store.script(_PREPARE)
        self._settle = self.store.script(_SETTLE)
        self._sweep = self.store.script(_SWEEP)
        self._tidy = self.store.script(_TIDY)

    def key(self, inbound: Inbound, secret: int) -> DeliveryKey:
        """The key placed in the namespace of the delivery's secret (by its index in the
        receiver's secrets), sealed with that secret's key."""
        kid = self.seals[secret].kid if self.seals else ""
        scope = self._secret_scopes[secret if self.seals else 0]
        return attrs.evolve(inbound.key, scope=scope, kid=kid)

    async def claim(self, key: DeliveryKey) -> bool:
        """True unless the same delivery was claimed by any replica (or, with the store
        away, by this process) within the last ``dedupe_size`` slots and
        ``dedupe_window`` seconds: Redis holds a bounded window, never the history."""
        here = self.ledger.claim(key)
        if self.ledger.size == 0:
            return True
        keys = _seen(key.scope)
        args = [key.slot, key.version, self.window_ms, self.ledger.size]
        answer = await self.store.run(self._claim(keys, args))
        return here if answer is None else bool(answer)

    def announce(self, update: JobStatusUpdate) -> None:
        """Wake this process's waiters now, and every other process's through Redis."""
        super().announce(update)
        self._spawn(self.wake.publish(update.job_id, str(update.status)))

    @property
    def pending(self) -> int:
        """Jobs queued or running in this process (and settlements and wake-ups being
        written)."""
        return super().pending + len(self._tasks)

    # ------------------------------------------------------------ adding

    async def submit(self, job: DeliveryJob) -> None:
        """Add the delivery to its kind's stream, even with no callback here: another
        replica may have one (or run it here: an output file, an entry update with no
        key to seal it, or the store away)."""
        self._take_streams()
        kind = kind_name(job.update)
        seal = self._by_kid.get(job.key.kid)
        here = kind == "output_file" or not job.key.scope or (kind == "entry" and seal is None)
        added = None if here else await self._add(job, kind, seal)
        if added is None:  # run here, or the store is away
            self.run(job)
            return
        self._sent[job] = added
        self._keep()

    async def _add(self, job: DeliveryJob, kind: str, seal: Seal | None) -> _Sent | None:
        keys = Keys(job.key.scope)
        sealed = seal.seal(job.body) if seal is not None else job.body
        stream, order = keys.stream(kind), keys.order(job.key.subject)
        fields: list[str | bytes] = [
            "slot",
            job.key.slot,
            "version",
            job.key.version,
            "subject",
            job.key.subject,
        ]
        fields += ["kid", seal.kid if seal is not None else "", "body", sealed]
        args = [_ORDER_TTL_MS, GROUP, os.urandom(8).hex(), os.urandom(8).hex(), *fields]
        answer = await self.store.run(self._enqueue([stream, order, keys.epoch], args))
        if answer is None:
            return None
        entry_id, seq, epoch, gen = answer
        return _Sent(stream, entry_id, order, int(seq), gen, job, epoch, self.clock.now())

    # ------------------------------------------------------------ reading

    def start(self) -> None:
        """Receive the fleet's job wake-ups and deliveries in this process from now on."""
        self._listening = True
        self.wake.listen()
        self._take_streams()

    def refresh(self) -> None:
        """The receiver gained a callback: if it listens already, take deliveries now."""
        if self._listening:
            self._take_streams()

    def _take_streams(self) -> None:
        """Read this receiver's scopes' streams from now on (once; needs a running loop),
        for the kinds it has callbacks for; a receiver with none takes nothing."""
        if self._closed or not self.callbacks.kinds():
            return
        loop = asyncio.get_running_loop()
        for scope in self.scopes:
            if scope not in self._readers:
                self._readers[scope] = loop.create_task(self._read(scope))
        self._keep()

    async def _read(self, scope: str) -> None:
        """Take over dead replicas' entries, then read new ones; run each as a job."""
        keys = Keys(scope)
        while not self._closed:
            kinds = self.callbacks.kinds()
            streams = {keys.stream(kind): kind for kind in KINDS if kind in kinds}
            if not self.store.available or not streams:
                await self.clock.sleep(self.store.retry_every)
                continue
            stale = await self.store.run(self._take_over(list(streams)))
            if stale is None:
                continue
            for stream, entries in zip(streams, stale, strict=True):
                self._run_entries(scope, stream, entries)
            read = await self.store.run(self._read_new(streams), block=_BLOCK_MS / 1000)
            for stream, entries in read or ():
                self._run_entries(scope, _text(stream), entries)

    def _take_over(self, streams: list[str]) -> Callable[[Any], Any]:
        idle = int(self.claim_after * 1000)
        args = [GROUP, self.consumer, idle, _BATCH, _ORDER_TTL_MS]
        return self._prepare(streams, args)

    def _read_new(self, streams: Mapping[str, str]) -> Callable[[Any], Any]:
        ask = dict.fromkeys(streams, ">")
        return lambda r: r.xreadgroup(GROUP, self.consumer, ask, count=_BATCH, block=_BLOCK_MS)

    def _run_entries(self, scope: str, stream: str, entries: Iterable[Any]) -> None:
        held = {h.entry_id for h in self._held.values()}
        for entry_id, raw in entries:
            if not raw or entry_id in held:
                continue  # deleted meanwhile, or already in hand here
            fields = _fields(raw)
            job = self._job_of(scope, fields)
            if job is None:
                continue
            order = Keys(scope).order(job.key.subject)
            seq, gen = int(fields.get("seq", b"0")), fields.get("gen", b"")
            self._held[job] = _Held(stream, entry_id, order, seq, gen)
            # Ordered by the fleet (``_turn``), not behind this replica's later jobs: a
            # job taken over from a dead replica may come before one already here.
            self.run(job, in_order=False)

    def _job_of(self, scope: str, fields: Mapping[str, bytes]) -> DeliveryJob | None:
        """The job of a stream entry; None when this replica cannot run it (left for one
        that can: another key sealed it) or nobody can (unreadable: logged)."""
        kid = fields.get("kid", b"").decode()
        try:
            body: bytes | None = fields["body"]
            if kid:
                seal = self._by_kid.get(kid)
                if seal is None:
                    return None  # sealed with a secret this replica does not hold
                body = seal.open(fields["body"])
            if body is None:
                raise WebhookPayloadError("sealed body altered")
            update = parse_delivery(body)
            key = DeliveryKey(
                slot=fields["slot"].decode(),
                version=fields.get("version", b"").decode(),
                subject=fields["subject"].decode(),
                scope=scope,
                kid=kid,
            )
        except (WebhookPayloadError, KeyError, UnicodeDecodeError):
            logger.error("fleet delivery unreadable in %s; left pending", scope)
            return None
        job = self.callbacks.job(key, update)
        return job if job.todo else None

    # ------------------------------------------------------------ running in order

    async def attempt(self, job: DeliveryJob) -> bool:
        """Run a job's callbacks once the job before it about its subject has settled."""
        held = self._held.get(job)
        if held is not None and job.attempts == 1:
            await self._turn(held)
        return await super().attempt(job)

    async def _turn(self, held: _Held) -> None:
        """Wait until the delivery before this one settled (or the store lost the order,
        or its holder seems gone for longer than a takeover takes)."""
        if held.seq <= 1:
            return
        give_up = self.clock.now() + max(4 * self.claim_after, 5.0)
        order = held.order
        while self.clock.now() < give_up:
            state = await self.store.run(lambda r: r.hmget(order, "done", "gen"))
            if state is None:
                if not self.store.up:
                    return  # no store: no fleet-wide order to keep
                continue
            done, gen = state
            # gone, or a later life of it: everything before this one has settled
            if done is None or gen != held.gen or int(done) >= held.seq - 1:
                return
            await self.clock.sleep(0.02)
        logger.warning("fleet delivery ran before the one ahead of it settled (%s)", order)

    async def finish(self, job: DeliveryJob, done: bool) -> None:
        """Settle a job: its claim (kept, or released when given up), then its entry."""
        try:
            await super().finish(job, done)
            if not done:  # forgotten fleet-wide too: a redelivery is handled again
                keys, args = _seen(job.key.scope), [job.key.slot, job.key.version]
                await self.store.run(self._release(keys, args))
        finally:
            held = self._held.pop(job, None)
            if held is not None and (done or not self._closed):
                self._spawn(self._settled(held))  # at close, unfinished: left for another

    async def _settled(self, held: _Held) -> None:
        args = [GROUP, held.entry_id, held.seq, held.gen]
        await self.store.run(self._settle([held.stream, held.order], args))

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------ keeping

    def _keep(self) -> None:
        if self._keeper is None or self._keeper.done():
            self._keeper = asyncio.get_running_loop().create_task(self._keep_up())

    async def _keep_up(self) -> None:
        """While this replica holds or sent entries: renew what it holds (a third of
        ``claim_after`` apart), re-add what a restarted store lost, forget dead peers."""
        every = max(0.05, self.claim_after / 3)
        tidied = self.clock.now()
        while not self._closed:
            await self.clock.sleep(every)
            if self._held:
                await self._renew()
            if self._sent:
                await self._sweep_sent()
            if self.clock.now() - tidied >= _TIDY_EVERY and self._readers:
                tidied = self.clock.now()
                await self._forget_dead()

    async def _renew(self) -> None:
        """Reset the idle time of entries this replica holds: it is alive and on them."""
        by_stream: dict[str, list[bytes]] = {}
        for held in self._held.values():
            by_stream.setdefault(held.stream, []).append(held.entry_id)
        for stream, ids in by_stream.items():
            renew = methodcaller("xclaim", stream, GROUP, self.consumer, 0, ids, justid=True)
            await self.store.run(renew)

    async def _sweep_sent(self) -> None:
        by_scope: dict[str, list[_Sent]] = {}
        for item in self._sent.values():  # one script per scope: one cluster slot each
            by_scope.setdefault(item.job.key.scope, []).append(item)
        for scope, sent in by_scope.items():
            await self._sweep_scope(scope, sent)

    async def _sweep_scope(self, scope: str, sent: list[_Sent]) -> None:
        keys = [Keys(scope).epoch, *(key for s in sent for key in (s.order, s.stream))]
        args = [arg for s in sent for arg in (s.seq, s.entry_id, s.epoch, s.gen)]
        states = await self.store.run(self._sweep(keys, args))
        if states is None:
            return
        for item, state in zip(sent, states, strict=True):
            too_old = self.clock.now() - item.added > _ORDER_TTL_MS / 1000
            if int(state) == 1 or too_old:
                self._sent.pop(item.job, None)
            elif int(state) == -1:
                logger.info("fleet delivery lost by a restarted store; added again")
                self._sent.pop(item.job, None)
                self._spawn(self.submit(item.job))

    async def _forget_dead(self) -> None:
        streams = [Keys(scope).stream(kind) for scope in self.scopes for kind in KINDS]
        args = [GROUP, _DEAD_CONSUMER_MS]
        for stream in streams:  # one at a time: each may live in another cluster slot
            await self.store.run(self._tidy([stream], args))

    # ------------------------------------------------------------ ending

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the jobs this process holds (or until ``timeout``)."""
        await super().drain(timeout)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=self.store.timeout * 2)

    async def aclose(self, timeout: float | None = 10.0) -> None:
        """Stop reading, let running jobs finish up to ``timeout``, give up the rest, stop
        listening, close the store."""
        self._closed = True
        for reader in self._readers.values():
            await cancel_and_wait(reader, self.store.timeout)
        await super().aclose(timeout)
        if self._keeper is not None:
            await cancel_and_wait(self._keeper, self.store.timeout)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=self.store.timeout * 2)
        await self.wake.aclose()
        await self.store.aclose()
