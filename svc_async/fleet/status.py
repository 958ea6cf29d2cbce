"""An operator's view of a live fleet: what its Redis holds now, read without changing it.

``fleet_status(url)`` reads each namespace (one given, or every one found with ``SCAN``)
and returns plain frozen values: the shared rate budget and its leases, the delivery
streams with their pending entries and consumers, the job wake-up listeners, and the
memory the namespace's keys use. Ages are taken on the Redis server's clock (``TIME``),
the clock the fleet's scripts use, so a machine whose clock is off reads them right.

``namespace_for`` computes a namespace from what a person knows (an account name, a base
URL and credential, a webhook secret) with the fleet's own formulas; the namespace is a
digest, so nothing secret is shown or sent. ``svc-async fleet status`` prints the same.
Only ``TIME``, ``SCAN`` and read commands are run: looking never disturbs the fleet.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from .._core import validate
from ..errors import FleetStoreError
from ..redact import redact_url
from .connect import check_url, describe, redis_client, store_errors
from .keys import GROUP, KINDS, Keys, account_namespace, credential_identity, scope_for

__all__ = [
    "BudgetStatus",
    "ConsumerStatus",
    "FleetStatus",
    "FleetStoreError",
    "KeyGroup",
    "MemoryStatus",
    "StreamStatus",
    "client_namespace",
    "fleet_status",
    "is_dead",
    "namespace_for",
    "webhook_namespace",
]

DEFAULT_TIMEOUT = 5.0
"""Seconds each Redis command of ``fleet_status`` may take."""

LONG_IDLE_FACTOR = 10
"""A consumer idle this many times ``claim_after`` is dead even without pending entries
(a replica that stopped; its name stays in the group until removed)."""

_SCAN_COUNT = 1000
_BATCH = 500
"""Keys measured per pipelined round of ``MEMORY USAGE``."""

_KEY = re.compile(r"^svc:\{([^{}]+)\}:([^:]*)")
_NAMESPACE = re.compile(r"[0-9A-Za-z_.-]+")


@attrs.frozen(slots=True)
class BudgetStatus:
    """The account's shared rate budget (``svc:{ns}:budget``) and calls in flight."""

    limit: int | None
    """Calls the service allows per window, as its last answer said (None: not learnt yet)."""
    remaining: int | None
    """Calls the fleet may still start in this window (None: not learnt yet)."""
    granted: int | None
    """``limit - remaining``: calls counted against the window (in flight, answered, or
    spent by a client outside the fleet)."""
    answered: int
    """Answers the fleet has counted in this window (not the one that set the window)."""
    in_flight: int
    """Live leases: calls granted and not answered yet, their holders alive."""
    lapsed: int
    """Leases past their expiry, not yet swept: calls of a holder that stopped renewing
    (a crashed process). The next grant sweeps them and their share returns."""
    window: int
    """The window's number: it goes up at each reset the fleet sees."""
    window_ends_in: float | None
    """Seconds until the window ends (negative: it has ended and no call has started
    the next; None: the end is not known)."""
    probe_ends_in: float | None
    """Seconds the first call learning the budget still holds the others (None: none)."""


@attrs.frozen(slots=True)
class ConsumerStatus:
    """A consumer of the ``callbacks`` group: one replica's reader of one stream."""

    name: str
    """``<hostname>:<pid>:<random hex>``."""
    host: str | None
    """The host part of the name (None: a name of another form)."""
    pid: int | None
    """The process id part of the name (None: a name of another form)."""
    pending: int
    """Entries it has read and not acknowledged: deliveries in its hands."""
    idle: float
    """Seconds since it last read, renewed or acknowledged."""
    dead: bool
    """Idle past ``claim_after`` with entries pending (they will be taken over), or idle
    ``LONG_IDLE_FACTOR`` times that long."""


@attrs.frozen(slots=True)
class StreamStatus:
    """One delivery stream (``svc:{ns}:deliveries:<kind>``) and its consumer group."""

    kind: str
    """The delivery kind (``"status"`` or ``"entry"``)."""
    length: int
    """Entries in the stream: waiting for a replica, or in one's hands (handled entries
    are deleted)."""
    pending: int
    """Entries read by a replica and not acknowledged yet."""
    unread: int
    """Entries no replica has read yet (``length - pending``)."""
    oldest_pending_age: float | None
    """Seconds since the oldest pending entry was added (None: nothing pending)."""
    oldest_pending_idle: float | None
    """Seconds since the oldest pending entry was last read or renewed."""
    oldest_unread_age: float | None
    """Seconds since the oldest unread entry was added (None: nothing unread)."""
    group: bool
    """Whether the ``callbacks`` group exists (a replica with callbacks made it)."""
    consumers: tuple[ConsumerStatus, ...]
    """The group's consumers, live and dead, by name."""

    @property
    def held_by_dead(self) -> int:
        """Pending entries held by dead consumers: to be taken over by a live replica."""
        return sum(c.pending for c in self.consumers if c.dead)


@attrs.frozen(slots=True)
class KeyGroup:
    """Keys of one sort (``budget``, ``leases``, ``deliveries``, ``seen``, ``order``...)."""

    name: str
    keys: int
    bytes: int


@attrs.frozen(slots=True)
class MemoryStatus:
    """Memory of the namespace's keys, by ``MEMORY USAGE`` (sampled for large values)."""

    keys: int
    """Keys found by ``SCAN MATCH svc:{ns}:*``."""
    bytes: int
    """Their ``MEMORY USAGE``, summed."""
    groups: tuple[KeyGroup, ...]
    """The same by sort of key, largest first."""


@attrs.frozen(slots=True)
class FleetStatus:
    """One namespace of a fleet, as its Redis holds it now."""

    namespace: str
    """The namespace: a digest of an account, credential or webhook secret."""
    server_time: float
    """When it was read: seconds since the epoch on the Redis server's clock."""
    claim_after: float
    """The receivers' ``claim_after`` the consumers were judged by (seconds)."""
    budget: BudgetStatus | None
    """The shared rate budget (None: no client of this namespace has called yet, or its
    keys expired after an hour unused)."""
    streams: tuple[StreamStatus, ...]
    """The delivery streams that exist, by kind."""
    wake_listeners: int
    """Processes subscribed to the job wake-up channel (``PUBSUB NUMSUB``)."""
    memory: MemoryStatus
    """What the namespace's keys take."""

    @property
    def dead_consumers(self) -> tuple[ConsumerStatus, ...]:
        """Every stream's dead consumers."""
        return tuple(c for s in self.streams for c in s.consumers if c.dead)


def is_dead(idle: float, pending: int, claim_after: float) -> bool:
    """Whether a consumer idle ``idle`` seconds with ``pending`` entries is a dead replica's.

    A live replica renews its entries every third of ``claim_after`` (and reads several
    times a second), so its idle time stays well under ``claim_after``; one idle longer
    while holding entries has stopped, and one idle ``LONG_IDLE_FACTOR`` times longer has
    stopped whatever it holds.
    """
    return (idle > claim_after and pending > 0) or idle > claim_after * LONG_IDLE_FACTOR


def namespace_for(
    *,
    account: str | None = None,
    base_url: str | None = None,
    token: str | None = None,
    auth: Any = None,
    webhook_secret: str | None = None,
) -> str:
    """The namespace of an explicit ``account`` name, of a client's ``base_url`` and
    credential (``token``, or ``auth``: a ``BearerAuth`` or ``ApiKeyAuth``), or of a
    webhook receiver's ``webhook_secret``: exactly one of the three."""
    given = [account is not None, base_url is not None, webhook_secret is not None]
    if sum(given) != 1:
        raise ValueError(
            "pass exactly one of account, base_url (with a credential), webhook_secret"
        )
    if base_url is None and (token is not None or auth is not None):
        raise ValueError("a credential names a client's namespace with its base_url")
    if account is not None:
        if not isinstance(account, str) or not account:
            raise ValueError("account must be a non-empty string")
        return account_namespace("account", account)
    if webhook_secret is not None:
        return webhook_namespace(webhook_secret)
    assert base_url is not None
    return client_namespace(base_url, token=token, auth=auth)


def client_namespace(base_url: str, *, token: str | None = None, auth: Any = None) -> str:
    """The namespace of a ``Client`` without an account name: its base URL (as the
    client keeps it) and its credential's identity (a digest)."""
    import yarl

    if (token is None) == (auth is None):
        raise ValueError("a base URL needs exactly one credential: token or auth")
    if token is not None:
        from ..auth import BearerAuth

        auth = BearerAuth(token)
    parsed = yarl.URL(str(base_url))
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"base_url must be an absolute http(s) URL, got {redact_url(parsed)!r}")
    identity = credential_identity(auth)
    if identity is None:
        raise ValueError("this credential names no account: pass the account's name instead")
    return account_namespace(str(parsed).rstrip("/"), identity)


def webhook_namespace(secret: str) -> str:
    """The namespace of a ``WebhookReceiver`` without an account name: the one of its
    deliveries that came with ``secret`` (each secret of a rotation has its own)."""
    if not isinstance(secret, str) or not secret:
        raise ValueError("webhook_secret must be a non-empty string")
    return scope_for(None, secret.encode())


async def fleet_status(
    url: str,
    *,
    namespace: str | None = None,
    claim_after: float = 30.0,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[FleetStatus]:
    """The status of ``namespace``, or of every namespace in the fleet's Redis at ``url``.

    ``claim_after`` is the receivers' own (30 s by default): a consumer idle longer with
    entries pending is reported dead. Each Redis command may take ``timeout`` seconds.
    A Redis that cannot be reached, or refuses a command, raises ``FleetStoreError``.
    """
    validate.seconds(claim_after, "claim_after")  # a number (TypeError), finite
    validate.positive_seconds(claim_after, "claim_after")
    validate.positive_seconds(timeout, "timeout")
    if namespace is not None and not _NAMESPACE.fullmatch(namespace):
        raise ValueError("namespace must be letters, digits, '_', '.' or '-'")
    check_url(url)
    client: Any = None
    try:
        client = redis_client(url, timeout=timeout)
        found = [namespace] if namespace is not None else await _namespaces(client)
        return [await _status(client, ns, float(claim_after)) for ns in found]
    except store_errors() as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise FleetStoreError(f"fleet store {describe(url)}: {reason}") from None
    finally:
        if client is not None:
            with contextlib.suppress(*store_errors()):
                await client.aclose()


def _ms(time: Sequence[int]) -> int:
    seconds, micros = time
    return int(seconds) * 1000 + int(micros) // 1000


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _seconds(from_ms: int | None, to_ms: int | None) -> float | None:
    """Seconds from ``from_ms`` to ``to_ms``, in milliseconds (None: either is None)."""
    return None if from_ms is None or to_ms is None else round((to_ms - from_ms) / 1000.0, 3)


def _id_ms(entry_id: Any) -> int:
    return int(_text(entry_id).partition("-")[0])


async def _namespaces(client: Any) -> list[str]:
    found: set[str] = set()
    async for key in client.scan_iter(match="svc:{*}:*", count=_SCAN_COUNT):
        match = _KEY.match(_text(key))
        if match is not None:
            found.add(match.group(1))
    return sorted(found)


async def _status(client: Any, namespace: str, claim_after: float) -> FleetStatus:
    keys = Keys(namespace)
    now_ms = _ms(await client.time())  # each namespace's ages from its own reading
    names = [key async for key in client.scan_iter(match=keys.prefix + "*", count=_SCAN_COUNT)]
    existing = {_text(name) for name in names}
    streams = []
    for kind in KINDS:
        if keys.stream(kind) in existing:
            stream = await _stream(client, keys.stream(kind), kind, now_ms, claim_after)
            if stream is not None:
                streams.append(stream)
    listeners = await client.pubsub_numsub(keys.channel)
    return FleetStatus(
        namespace=namespace,
        server_time=now_ms / 1000.0,
        claim_after=claim_after,
        budget=await _budget(client, keys, now_ms),
        streams=tuple(streams),
        wake_listeners=int(listeners[0][1]) if listeners else 0,
        memory=await _memory(client, names),
    )


def _int(fields: dict[str, str], name: str) -> int | None:
    value = fields.get(name)
    return None if value is None else int(float(value))


async def _budget(client: Any, keys: Keys, now_ms: int) -> BudgetStatus | None:
    fields = {_text(k): _text(v) for k, v in (await client.hgetall(keys.budget)).items()}
    live = int(await client.zcount(keys.leases, f"({now_ms}", "+inf"))
    lapsed = int(await client.zcount(keys.leases, "-inf", now_ms))
    if not fields and not live and not lapsed:
        return None
    limit, remaining = _int(fields, "limit"), _int(fields, "rem")
    probe = _int(fields, "probe")
    return BudgetStatus(
        limit=limit,
        remaining=remaining,
        granted=None if limit is None or remaining is None else limit - remaining,
        answered=_int(fields, "done") or 0,
        in_flight=live,
        lapsed=lapsed,
        window=_int(fields, "gen") or 0,
        window_ends_in=_seconds(now_ms, _int(fields, "end")),
        probe_ends_in=_seconds(now_ms, probe) if probe is not None and probe > now_ms else None,
    )


async def _stream(
    client: Any, key: str, kind: str, now_ms: int, claim_after: float
) -> StreamStatus | None:
    from redis.exceptions import ResponseError

    try:
        groups = await client.xinfo_groups(key)
    except ResponseError:
        if await client.exists(key):
            raise
        return None  # expired or deleted since the scan
    length = int(await client.xlen(key))
    group = next((g for g in groups if _text(g.get("name")) == GROUP), None)
    if group is None:  # no replica with callbacks has read it yet
        oldest = await _oldest(client, key, "-", now_ms)
        return StreamStatus(kind, length, 0, length, None, None, oldest, False, ())
    pending = await client.xpending(key, GROUP)
    count = int(pending["pending"])
    oldest_age = oldest_idle = None
    if count:
        oldest_age = _seconds(_id_ms(pending["min"]), now_ms)
        first = await client.xpending_range(key, GROUP, pending["min"], pending["min"], 1)
        if first:
            oldest_idle = round(int(first[0]["time_since_delivered"]) / 1000.0, 3)
    after = "(" + _text(group.get("last-delivered-id") or "0-0")
    consumers = tuple(_consumer(c, claim_after) for c in await client.xinfo_consumers(key, GROUP))
    return StreamStatus(
        kind=kind,
        length=length,
        pending=count,
        unread=max(0, length - count),
        oldest_pending_age=oldest_age,
        oldest_pending_idle=oldest_idle,
        oldest_unread_age=await _oldest(client, key, after, now_ms),
        group=True,
        consumers=tuple(sorted(consumers, key=lambda c: c.name)),
    )


async def _oldest(client: Any, key: str, after: str, now_ms: int) -> float | None:
    first = await client.xrange(key, after, "+", count=1)
    return _seconds(_id_ms(first[0][0]), now_ms) if first else None


def _consumer(info: dict[str, Any], claim_after: float) -> ConsumerStatus:
    name = _text(info.get("name", b""))
    host, pid = _host_pid(name)
    pending = int(info.get("pending", 0))
    idle = round(int(info.get("idle", 0)) / 1000.0, 3)
    return ConsumerStatus(name, host, pid, pending, idle, is_dead(idle, pending, claim_after))


def _host_pid(name: str) -> tuple[str | None, int | None]:
    parts = name.rsplit(":", 2)
    if len(parts) == 3 and parts[0] and parts[1].isdigit():
        return parts[0], int(parts[1])
    return None, None


async def _memory(client: Any, names: Iterable[Any]) -> MemoryStatus:
    names = list(names)
    sizes: list[int | None] = []
    for start in range(0, len(names), _BATCH):
        pipe = client.pipeline(transaction=False)
        for name in names[start : start + _BATCH]:
            pipe.memory_usage(name)
        sizes.extend(await pipe.execute())
    keys: Counter[str] = Counter()
    used: Counter[str] = Counter()
    for name, size in zip(names, sizes, strict=True):
        if size is None:
            continue  # gone since the scan
        match = _KEY.match(_text(name))
        sort = match.group(2) if match is not None else "other"
        keys[sort] += 1
        used[sort] += int(size)
    groups = [KeyGroup(sort, keys[sort], used[sort]) for sort in keys]
    groups.sort(key=lambda group: (-group.bytes, group.name))  # largest first
    return MemoryStatus(keys=keys.total(), bytes=used.total(), groups=tuple(groups))
