"""The webhook rules, without I/O: a request's parts in, a delivery or an answer out.

Like gidgethub's ``sansio.Event.from_http``, nothing here reads a socket, sleeps or
starts a task; every adapter (aiohttp today) and both delivery backends (memory, Redis)
apply these rules, stated once:

* **Secret.** The ``secret_param`` query parameter must equal one of the secrets (several
  during a rotation), compared in constant time; a missing or repeated parameter is
  refused. Refused: 401.
* **Body.** At most ``MAX_BODY`` bytes (413), a JSON object of one of the three kinds of
  ``payloads`` (400 otherwise). Accepted: 204, once the delivery is queued.
* **Dedupe.** A delivery's ``DeliveryKey``: its *slot* (what it is about and says) and,
  for an entry, a *version* (its content digest). The same slot with the same version
  is a duplicate while the slot is remembered: from the delivery's arrival, over the
  last ``dedupe_size`` slots (and, in a fleet, ``dedupe_window`` seconds), and no
  longer once its callbacks were given up, so a redelivery is handled anew.
  ``MemoryLedger`` is that rule in this process; the fleet runs the same rule in one
  Redis script.
* **Order.** Deliveries of one *subject* (a job, an output file, an entry) reach their
  callbacks in the order they arrived, retries included: each waits until the one
  before it about the same subject has settled (here, or on any replica of a fleet).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import attrs
import orjson

from ..errors import WebhookPayloadError
from .payloads import (
    Delivery,
    EntryUpdate,
    JobStatusUpdate,
    OutputFileUpdate,
    decode_body,
    delivery_of,
)

__all__ = [
    "DEFAULT_PATH",
    "MAX_BODY",
    "Answer",
    "DeliveryKey",
    "Inbound",
    "MemoryLedger",
    "Receiving",
    "Secrets",
    "delivery_key",
    "refusal",
]

DEFAULT_PATH = "/webhooks/svc"
"""Where ``WebhookReceiver.routes`` and ``app`` mount the handler by default."""

MAX_BODY = 4 * 1024 * 1024
"""Largest delivery body accepted: a status update is a few dozen bytes, but an entry
update carries the whole Entry with its songs and licence data."""

_TEXT = {"Content-Type": "text/plain; charset=utf-8"}


@attrs.frozen(slots=True, kw_only=True)
class Answer:
    """What a receiver answers a request: ``status``, ``headers`` and ``body`` (bytes).

    ``close`` asks the adapter to close the connection: the body was not read whole.
    """

    status: int
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: bytes = b""
    close: bool = False


@attrs.frozen(slots=True, kw_only=True)
class RequestView:
    """What a ``verifier`` sees of a delivery's request, the same in every framework."""

    method: str
    path: str
    query: Any
    """A multi-mapping of the query (the secret among it)."""
    headers: Mapping[str, str]


class Receiving(Protocol):
    """What the adapters (aiohttp, ASGI, WSGI) use of a ``WebhookReceiver`` (a protocol:
    no import circle)."""

    max_body: int

    def warn_if_open(self) -> None: ...

    def start(self) -> None: ...

    async def aclose(self, timeout: float | None = 10.0) -> None: ...

    async def receive(
        self, body: Any, query: Any, headers: Mapping[str, str], *, request: Any = None
    ) -> Answer: ...


def refusal(status: int, reason: str, *, close: bool = False) -> Answer:
    """A plain-text refusal (``reason`` is log-safe: it never holds the secret)."""
    return Answer(status=status, headers=_TEXT, body=reason.encode(), close=close)


ACCEPTED = Answer(status=204)
"""A delivery queued (or dropped as a test delivery or a duplicate)."""
UNAUTHORIZED = refusal(401, "unauthorized")
"""A wrong, missing or repeated secret, or a verifier's refusal."""
CLOSING = Answer(status=503, headers={"Retry-After": "5"})
"""The receiver is closing: the service is to send the delivery again later."""
NOT_POST = Answer(status=405, headers={"Allow": "POST"})
"""Deliveries are POSTed."""


TOO_LARGE = refusal(413, f"webhook body over {MAX_BODY} bytes", close=True)
"""A body over ``MAX_BODY`` (the connection is closed: the rest is not read)."""


class Secrets:
    """The accepted webhook secrets (several during a rotation; none: every request is
    accepted) and the query parameter that carries one."""

    __slots__ = ("param", "values")

    def __init__(self, secret: str | Sequence[str] | None, param: str = "key") -> None:
        if not isinstance(param, str) or not param:
            raise ValueError("secret_param must be a non-empty string")
        self.param = param
        self.values = _secrets(secret)

    def __bool__(self) -> bool:
        return bool(self.values)

    def __repr__(self) -> str:
        return f"<Secrets {len(self.values)} param={self.param!r}>"

    def index(self, value: str | None) -> int | None:
        """Which secret ``value`` is (0 with none configured; None: refused), compared in
        constant time with every secret."""
        if not self.values:
            return 0
        if value is None:
            return None
        given = value.encode()
        found = None
        for index, secret in enumerate(self.values):
            if hmac.compare_digest(given, secret):
                found = index
        return found

    def of_query(self, query: Any) -> int | None:
        """The secret a request's ``query`` carries (see ``query_values``): exactly one
        ``param`` value, an accepted one; None otherwise."""
        values = query_values(query, self.param)
        return self.index(values[0] if len(values) == 1 else None)


def _secrets(secret: str | Sequence[str] | None) -> tuple[bytes, ...]:
    if secret is None:
        return ()
    items = [secret] if isinstance(secret, str) else list(secret)
    if not items:
        raise ValueError("secret must be a non-empty string or a non-empty list of them")
    out = []
    for item in items:
        if not isinstance(item, str) or not item:
            raise ValueError("each webhook secret must be a non-empty string")
        out.append(item.encode())
    return tuple(out)


def query_values(query: Any, name: str) -> list[str]:
    """Every value of ``name`` in a query multi-mapping, repeats kept: a multidict
    (``getall``: aiohttp, yarl), ``getlist`` (Starlette, Werkzeug, Django), a mapping of
    lists (``urllib.parse.parse_qs``) or of strings, or (name, value) pairs."""
    for method in ("getall", "getlist"):
        getter = getattr(query, method, None)
        if getter is not None:
            return list(getter(name, []) if method == "getall" else getter(name))
    if isinstance(query, Mapping):
        value = query.get(name)
        if value is None:
            return []
        return [value] if isinstance(value, str) else list(value)
    pairs: Iterable[tuple[str, str]] = query
    return [value for key, value in pairs if key == name]


@attrs.frozen(slots=True, kw_only=True)
class DeliveryKey:
    """What makes two deliveries the same, as strings a shared store can hold.

    ``slot`` is what a delivery is about and says (``status:42:Processed``); the same
    slot with the same ``version`` is a duplicate (``version`` is the entry's content
    digest, empty for the other kinds). Deliveries of one ``subject`` (a job, an output
    file, an entry) reach their callbacks in the order they arrived.
    """

    slot: str
    version: str = ""
    subject: str
    scope: str = ""
    """The fleet namespace the delivery belongs to (empty: this process only)."""
    kid: str = ""
    """The name of the key that seals the delivery in a fleet (empty: none)."""


def delivery_key(update: Delivery) -> DeliveryKey:
    """The dedupe key of a delivery: job and status; output file and status; an entry
    (in its event or season) and its content."""
    return Inbound.of(update).key


def _key(update: Delivery, entry: Any) -> DeliveryKey:
    """The key of ``update``; ``entry``: its entry as JSON data (entry updates only)."""
    if isinstance(update, JobStatusUpdate):
        subject = f"job:{update.job_id}"
        return DeliveryKey(slot=f"status:{update.job_id}:{update.status}", subject=subject)
    if isinstance(update, OutputFileUpdate):
        output = update.output_file
        return DeliveryKey(
            slot=f"output:{output.id}:{output.status}", subject=f"output:{output.id}"
        )
    scope = (
        f"event:{update.event_id}" if update.event_id is not None else f"season:{update.season_id}"
    )
    slot = f"entry:{scope}:{update.entry.id}"
    return DeliveryKey(slot=slot, version=_digest(entry), subject=slot)


def _digest(entry: Any) -> str:
    """A short digest of an entry's content (its JSON, keys sorted), to tell a
    redelivery from a new change."""
    try:
        raw = orjson.dumps(entry, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        raw = repr(entry).encode()
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


@attrs.frozen(slots=True, kw_only=True)
class Inbound:
    """A delivery decoded once: the ``update``, its dedupe ``key``, and ``body``, the
    delivery as JSON bytes (what a shared store carries to the replica that runs it)."""

    update: Delivery
    key: DeliveryKey
    body: bytes

    @classmethod
    def from_body(cls, body: bytes, headers: Mapping[str, str] | None = None) -> Inbound:
        """Parse a request body (``WebhookPayloadError`` when it is no delivery).

        ``headers`` is accepted for a future signature scheme and not read today.
        """
        del headers
        if len(body) > MAX_BODY:
            raise WebhookPayloadError(f"webhook body over {MAX_BODY} bytes")
        data = decode_body(body)
        update = delivery_of(data)
        return cls(update=update, key=_key(update, data.get("entry")), body=bytes(body))

    @classmethod
    def of(cls, update: Delivery) -> Inbound:
        """An update parsed elsewhere (``accept``): its entry unstructured once, for the
        key and the body."""
        from ..converter import unstructure

        if isinstance(update, JobStatusUpdate):
            wire: dict[str, Any] = {"id": update.job_id, "status": str(update.status)}
        elif isinstance(update, EntryUpdate):
            scope = "eventId" if update.event_id is not None else "seasonId"
            where = update.event_id if update.event_id is not None else update.season_id
            wire = {"entry": unstructure(update.entry), scope: where}
        else:
            wire = unstructure(update.output_file)
        if update.is_test:
            wire["isTest"] = True
        return cls(update=update, key=_key(update, wire.get("entry")), body=_dumps(wire))


def _dumps(wire: dict[str, Any]) -> bytes:
    """``wire`` as JSON; with the standard library when an id is beyond 64 bits."""
    try:
        return orjson.dumps(wire)
    except TypeError:
        return json.dumps(wire, separators=(",", ":")).encode()


class MemoryLedger:
    """The dedupe rule in this process: the last ``size`` delivery slots (0: no dedupe).

    A slot holds the version last claimed; claimed and completed look the same to a
    duplicate (one in hand will be handled), and a release forgets the slot unless a
    newer version took it meanwhile.
    """

    def __init__(self, size: int = 10_000) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError("dedupe_size must be a non-negative int")
        self.size = size
        self._slots: OrderedDict[str, str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._slots)

    def claim(self, key: DeliveryKey) -> bool:
        """Take ``key`` for handling: False when it is a duplicate (handled or in hand)."""
        if self.size == 0:
            return True
        duplicate = key.slot in self._slots and self._slots[key.slot] == key.version
        self._slots[key.slot] = key.version
        self._slots.move_to_end(key.slot)
        while len(self._slots) > self.size:
            self._slots.popitem(last=False)
        return not duplicate

    def release(self, key: DeliveryKey) -> None:
        """``key`` was given up: a redelivery of it is handled again."""
        if self._slots.get(key.slot) == key.version:
            del self._slots[key.slot]
