"""Incremental entry sync: what changed in some events since the last run.

Each run asks every event for the entries updated after that event's watermark
(``updatedAfter``) and remembers a new watermark taken from the **server's** clock: the
``Date`` header of the run's first response, minus ``margin`` (default 2 minutes). The
local clock is never used, so a client whose clock is minutes off loses nothing.

The first call of a run is made alone; the other events are fetched after it, so every
one of them is answered after that ``Date``. The margin covers the first call's own
processing time, writes that commit with a slightly older ``updatedAt``, and the
``Date`` header's one-second resolution. Entries updated inside the margin are returned
again by the next run; the state remembers the ``(entry id, recording updatedAt)`` pairs
of that overlap and drops them, so each change is reported once. An entry updated again
gets a new ``updatedAt`` and is reported again.

What "updated" means is the service's call: it filters on the recording's
``updatedAt``, so an entry without a recording is reported by the first (full) run of
its event and not by later runs.

Events are independent: one that fails keeps its old watermark (it is fetched from the
same point next run) while the others advance. ``SyncState`` is plain data and
serialises to JSON, so a bot can store it and resume after a restart.
"""

from __future__ import annotations

import builtins
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from ..converter import format_timestamp, parse_timestamp
from ..errors import SvcError
from ..models import Entry
from ..retry import parse_http_date
from . import bulk

if TYPE_CHECKING:
    from .._pipeline.run import ResponseMeta

FetchEvent = Callable[
    [int, "dt.datetime | None"], Awaitable["tuple[builtins.list[Entry], ResponseMeta | None]"]
]
"""Fetch one event's entries updated after a time, with the answer's metadata."""

logger = logging.getLogger(__name__)

DEFAULT_MARGIN = dt.timedelta(minutes=2)
"""How far before the server's ``Date`` the next run starts looking."""

STATE_VERSION = 1
"""Version of the JSON that ``SyncState.to_json`` writes."""

Seen = frozenset[tuple[int, dt.datetime | None]]
"""(entry id, recording updatedAt) pairs; None for an entry without a recording."""


@attrs.frozen(kw_only=True)
class EventCursor:
    """Where one event's sync stands.

    ``since``: the next run asks for entries updated after it (None: everything).
    ``seen``: the (entry id, recording updatedAt) pairs already reported that the next
    run will be sent again (updated after ``since``); they are not reported twice.
    """

    since: dt.datetime | None = None
    seen: Seen = frozenset()


@attrs.frozen(kw_only=True)
class SyncState:
    """Per-event cursors of an incremental sync; store ``to_json()`` between runs."""

    events: Mapping[int, EventCursor] = attrs.field(factory=dict)

    def cursor(self, event_id: int) -> EventCursor | None:
        """The cursor of ``event_id``, or None when it was never synced."""
        return self.events.get(event_id)

    def to_json(self) -> str:
        """The state as JSON text (stable: ids and pairs are sorted)."""
        events = {
            str(event_id): {
                "since": None if cursor.since is None else format_timestamp(cursor.since),
                "seen": [
                    [entry_id, None if stamp is None else format_timestamp(stamp)]
                    for entry_id, stamp in sorted(cursor.seen, key=_pair_order)
                ],
            }
            for event_id, cursor in sorted(self.events.items())
        }
        return orjson.dumps({"version": STATE_VERSION, "events": events}).decode()

    @classmethod
    def from_json(cls, text: str | bytes) -> SyncState:
        """Read a state written by ``to_json``; ValueError when it is not one."""
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"sync state is not JSON: {exc.msg}") from None
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ValueError(f"sync state must be an object with version {STATE_VERSION}")
        events = data.get("events")
        if not isinstance(events, dict):
            raise ValueError("sync state has no 'events' object")
        try:
            return cls(events={int(key): _cursor(value) for key, value in events.items()})
        except (TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"sync state is malformed: {exc}") from None


@attrs.frozen(kw_only=True)
class SyncResult:
    """One run's outcome.

    ``changes``: for every event fetched successfully, its entries that are new or
    updated since the last run (an empty list when nothing changed; everything on the
    first run). ``errors``: the events that failed, with the error; they are fetched
    from the same point next run. ``state``: pass it to the next run. ``server_time``:
    the server's ``Date`` the new watermarks derive from (None when no response had one;
    the watermarks then stay where they were).
    """

    changes: dict[int, list[Entry]]
    errors: dict[int, SvcError]
    state: SyncState
    server_time: dt.datetime | None = None

    @property
    def entries(self) -> list[Entry]:
        """Every changed entry, event by event."""
        return [entry for changed in self.changes.values() for entry in changed]

    @property
    def ok(self) -> bool:
        """True when every event was fetched."""
        return not self.errors


async def sync_entries(
    fetch_event: FetchEvent,
    event_ids: Iterable[int],
    state: SyncState | None = None,
    *,
    concurrency: int = 8,
    margin: dt.timedelta = DEFAULT_MARGIN,
) -> SyncResult:
    """Fetch what changed in ``event_ids`` since ``state`` (None: everything).

    ``fetch_event(event_id, updated_after)`` returns an event's entries with the
    metadata of the response that carried them (its ``date`` is the server's clock).
    """
    ids = bulk.unique_ids(event_ids, "event_ids")
    limit = bulk.check_concurrency(concurrency)
    state = _checked_state(state, margin)
    cursors = dict(state.events)
    if not ids:
        return SyncResult(changes={}, errors={}, state=state)

    async def fetch(event_id: int) -> builtins.list[Entry]:
        entries, _ = await fetch_event(event_id, _since(cursors.get(event_id)))
        return entries

    changes: dict[int, list[Entry]] = {}
    errors: dict[int, SvcError] = {}
    # The first call alone: every other event is then answered after its Date.
    first, rest = ids[0], ids[1:]
    fetched, server_date = await _fetch_first(fetch_event, first, cursors.get(first))
    server_time = parse_http_date(server_date)
    watermark = None if server_time is None else server_time - margin
    if server_time is None:
        logger.warning("no Date header from the service; sync watermarks stay where they were")

    def record(event_id: int, outcome: list[Entry] | SvcError) -> None:
        if isinstance(outcome, SvcError):
            errors[event_id] = outcome
            return
        changed, cursors[event_id] = advance(cursors.get(event_id), outcome, watermark)
        changes[event_id] = changed

    record(first, fetched)
    if rest:
        batches = bulk.batches(
            "event", rest, fetch, concurrency=limit, raise_on_error=False, progress=None
        )
        async with aclosing(batches):
            async for batch in batches:
                record(batch.source_id, batch.error or batch.entries)
    ordered = {event_id: changes[event_id] for event_id in ids if event_id in changes}
    return SyncResult(
        changes=ordered,
        errors=errors,
        state=SyncState(events=cursors),
        server_time=server_time,
    )


def _checked_state(state: SyncState | None, margin: dt.timedelta) -> SyncState:
    """``sync_entries``' ``state`` (None: a first run's) and ``margin``, checked."""
    if state is None:
        state = SyncState()
    elif not isinstance(state, SyncState):
        raise TypeError(f"state must be a SyncState or None, got {type(state).__name__}")
    if not isinstance(margin, dt.timedelta):
        raise TypeError("margin must be a datetime.timedelta")
    if margin < dt.timedelta(0):
        raise ValueError("margin must not be negative")
    return state


def _since(cursor: EventCursor | None) -> dt.datetime | None:
    """What an event's entries are asked for updates after (None: all of them)."""
    return None if cursor is None else cursor.since


async def _fetch_first(
    fetch_event: FetchEvent, event_id: int, cursor: EventCursor | None
) -> tuple[list[Entry] | SvcError, str | None]:
    """The first event's entries, or its error, and the server's Date that came with them."""
    try:
        entries, meta = await fetch_event(event_id, _since(cursor))
    except SvcError as exc:
        # An error answer carries the server's clock too (a 500 still has a Date).
        headers = getattr(exc, "headers", None)
        return exc, headers.get("Date") if isinstance(headers, Mapping) else None
    return entries, None if meta is None else meta.date


def advance(
    cursor: EventCursor | None, entries: list[Entry], watermark: dt.datetime | None
) -> tuple[list[Entry], EventCursor]:
    """The entries not reported before, and the event's next cursor.

    ``entries`` answered a query for updates after ``cursor.since``; ``watermark`` is
    the new ``since`` (None: keep the old one).
    """
    before = cursor.seen if cursor is not None else frozenset()
    changed = [entry for entry in entries if _key(entry) not in before]
    since = watermark if watermark is not None else (cursor.since if cursor else None)
    seen = frozenset(
        key
        for key in map(_key, entries)
        if since is None or (key[1] is not None and key[1] > since)
    )
    return changed, EventCursor(since=since, seen=seen)


def _key(entry: Entry) -> tuple[int, dt.datetime | None]:
    recording = entry.sound_recording
    return entry.id, None if recording is None else recording.updated_at


def _pair_order(pair: tuple[int, dt.datetime | None]) -> tuple[int, float]:
    return pair[0], -1.0 if pair[1] is None else pair[1].timestamp()


def _cursor(value: Any) -> EventCursor:
    if not isinstance(value, dict):
        raise ValueError("each event's cursor must be an object")
    since = value.get("since")
    pairs = value.get("seen", [])
    if not isinstance(pairs, list):
        raise ValueError("'seen' must be a list")
    seen: set[tuple[int, dt.datetime | None]] = set()
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], int)):
            raise ValueError("each 'seen' item must be [entry id, updatedAt or null]")
        seen.add((pair[0], None if pair[1] is None else parse_timestamp(pair[1])))
    return EventCursor(
        since=None if since is None else parse_timestamp(since), seen=frozenset(seen)
    )


__all__ = [
    "DEFAULT_MARGIN",
    "EventCursor",
    "SyncResult",
    "SyncState",
    "advance",
    "sync_entries",
]
