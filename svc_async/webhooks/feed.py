"""Entry updates feeding an incremental sync's state (``entries.sync``).

The state is ``svc_async.resources.sync.SyncState``; it is known here by its shape (its
``events`` and ``cursor``), so the webhooks never import the sub-clients, which import
the webhooks' payloads.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import attrs

from .payloads import EntryUpdate

__all__ = ["feed_sync_state"]


@runtime_checkable
class _Cursor(Protocol):
    @property
    def since(self) -> dt.datetime | None: ...

    @property
    def seen(self) -> frozenset[tuple[int, dt.datetime | None]]: ...


@runtime_checkable
class _State(Protocol):
    @property
    def events(self) -> Mapping[int, Any]: ...

    def cursor(self, event_id: int) -> Any: ...


_S = TypeVar("_S", bound=_State)


def feed_sync_state(state: _S, update: EntryUpdate) -> _S:
    """``state`` (a ``SyncState``) advanced by an entry update, so the next
    ``entries.sync`` does not report the delivered version of the entry again (a later
    change still is).

    Only events the state already tracks are fed: an event never synced is fetched in
    full by its first sync anyway, and season updates have no sync cursor. Test
    deliveries change nothing. The state is immutable: use the returned one.
    """
    if not isinstance(state, _State) or not attrs.has(type(state)):
        raise TypeError(f"state must be a SyncState, got {type(state).__name__}")
    if not isinstance(update, EntryUpdate):
        raise TypeError(f"update must be an EntryUpdate, got {type(update).__name__}")
    if update.is_test or update.event_id is None:
        return state
    cursor: _Cursor | None = state.cursor(update.event_id)
    if cursor is None:
        return state
    recording = update.entry.sound_recording
    stamp = None if recording is None else recording.updated_at
    # The same (entry id, recording updatedAt) pairs the sync uses to drop repeats; a
    # version at or before the watermark is not fetched again and needs no record.
    if cursor.since is not None and (stamp is None or stamp <= cursor.since):
        return state
    pair = (update.entry.id, stamp)
    if pair in cursor.seen:
        return state
    events = dict(state.events)
    events[update.event_id] = attrs.evolve(cast(Any, cursor), seen=cursor.seen | {pair})
    return cast(_S, attrs.evolve(cast(Any, state), events=events))
