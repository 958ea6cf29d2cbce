"""Entries by event and by season: ``POST .../event/{id}/entries``, ``.../season/{id}/entries``."""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Unpack

from .._core import validate as v
from .._pipeline.incremental import StreamDecode
from ..converter import format_timestamp, structure
from ..models import Entry
from ..types import CallOptions
from ._base import Resource, with_reply

if TYPE_CHECKING:  # bulk and sync load on first use, to keep `import svc_async` light
    from collections.abc import Callable

    from .._pipeline.run import ResponseMeta
    from ..types import Progress
    from .bulk import EntryBatch, Source
    from .sync import SyncResult, SyncState

EVENT_PATH = "/api/public/v1/event/{id}/entries"
SEASON_PATH = "/api/public/v1/season/{id}/entries"
_PATHS = {"event": EVENT_PATH, "season": SEASON_PATH}


def filter_body(
    updated_after: dt.datetime | None, fields: Iterable[Mapping[str, Any]] | None
) -> dict[str, Any] | None:
    """The optional filter body; None when there is no filter (the service then sends all)."""
    body: dict[str, Any] = {}
    if updated_after is not None:
        body["updatedAfter"] = format_timestamp(v.aware_datetime(updated_after, "updated_after"))
    if fields is not None:
        body["fields"] = v.filters(fields)
    return body or None


def parse_entries(data: Any) -> builtins.list[Entry]:
    """Structure an entries answer; the service answers ``{}`` when there are none."""
    if data is None or (type(data) is dict and not data):
        return []
    return structure(data, builtins.list[Entry])


class EntriesDecode(StreamDecode[Entry]):
    """The entries calls' decoder: big answers structured as they stream, ``{}`` none."""

    __slots__ = ()

    def build(self, data: Any, status: int) -> builtins.list[Entry]:
        """The entries of the answer (``{}``, the service's word for none: no entries)."""
        if data is None or (type(data) is dict and not data):
            return []
        return super().build(data, status)


class Entries(Resource):
    """Participants' entries, with their recordings and licence data."""

    async def for_event(
        self,
        event_id: int,
        *,
        updated_after: dt.datetime | None = None,
        fields: Iterable[Mapping[str, Any]] | None = None,
        **options: Unpack[CallOptions],
    ) -> builtins.list[Entry]:
        """Entries of one event; ``updated_after`` (aware datetime) keeps recent changes only."""
        event = v.positive_id(event_id, "event_id")
        return await self._fetch("event", event, filter_body(updated_after, fields), options)

    async def for_season(
        self,
        season_id: int,
        *,
        updated_after: dt.datetime | None = None,
        fields: Iterable[Mapping[str, Any]] | None = None,
        **options: Unpack[CallOptions],
    ) -> builtins.list[Entry]:
        """Entries of one season; filters as for ``for_event``."""
        season = v.positive_id(season_id, "season_id")
        return await self._fetch("season", season, filter_body(updated_after, fields), options)

    async def _fetch(
        self,
        source: Source,
        key: int,
        body: dict[str, Any] | None,
        options: CallOptions | None = None,
    ) -> builtins.list[Entry]:
        """The entries of one event or season; big answers are structured in slices as
        they stream (issue 13)."""
        with EntriesDecode(Entry) as decoder:
            return await self._send(
                "POST",
                _PATHS[source].format(id=key),
                body,
                options,
                idempotent=True,
                decode=decoder,
                operation=f"entries.for_{source}",
            )

    async def _fetch_event(
        self, event_id: int, updated_after: dt.datetime | None
    ) -> tuple[builtins.list[Entry], ResponseMeta | None]:
        """One event's entries with the metadata of their answer (for sync's watermark),
        heard as ``with_raw_response`` hears it."""
        fetch = with_reply(self._fetch, "entries.for_event")
        reply = await fetch(
            "event", v.positive_id(event_id, "event_id"), filter_body(updated_after, None)
        )
        return reply.data, reply.meta

    def for_events(
        self,
        event_ids: Iterable[int],
        *,
        concurrency: int = 8,
        updated_after: dt.datetime | None = None,
        fields: Iterable[Mapping[str, Any]] | None = None,
        raise_on_error: bool = False,
        progress: Progress | Callable[[int, int], object] | None = None,
    ) -> AsyncGenerator[EntryBatch, None]:
        """Entries of many events, at most ``concurrency`` requests at a time.

        Yields one ``EntryBatch`` per event (``batch.event_id``, ``batch.entries`` or
        ``batch.error``) as each completes, so not in input order. Ids are checked now
        (positive ints; duplicates dropped). One event's failure is reported in its
        batch and the others go on; ``raise_on_error=True`` raises it instead and cancels
        the rest. ``progress(done, total)`` is called as each event finishes. Leaving the
        loop early cancels the requests in flight; use ``contextlib.aclosing`` to have
        that happen at once rather than when the generator is garbage-collected.
        """
        from .bulk import entry_batches

        batches = entry_batches(
            self._fetch,
            "event",
            event_ids,
            body=filter_body(updated_after, fields),
            concurrency=concurrency,
            raise_on_error=raise_on_error,
            progress=progress,
        )
        return self._tracker.stepwise("entries.for_events", batches)

    def for_seasons(
        self,
        season_ids: Iterable[int],
        *,
        concurrency: int = 8,
        updated_after: dt.datetime | None = None,
        fields: Iterable[Mapping[str, Any]] | None = None,
        raise_on_error: bool = False,
        progress: Progress | Callable[[int, int], object] | None = None,
    ) -> AsyncGenerator[EntryBatch, None]:
        """Entries of many seasons, as ``for_events`` (batches carry ``season_id``)."""
        from .bulk import entry_batches

        batches = entry_batches(
            self._fetch,
            "season",
            season_ids,
            body=filter_body(updated_after, fields),
            concurrency=concurrency,
            raise_on_error=raise_on_error,
            progress=progress,
        )
        return self._tracker.stepwise("entries.for_seasons", batches)

    async def sync(
        self,
        event_ids: Iterable[int],
        state: SyncState | None = None,
        *,
        concurrency: int = 8,
        margin: dt.timedelta | None = None,
    ) -> SyncResult:
        """What changed in ``event_ids`` since the run that produced ``state``.

        ``state`` None fetches everything. Returns the new or updated entries per event
        and the next ``state`` (``state.to_json()`` / ``SyncState.from_json``).
        Watermarks come from the server's ``Date`` header minus ``margin``, never the
        local clock (``margin`` defaults to two minutes); see ``svc_async.resources.sync``.
        """
        from .sync import DEFAULT_MARGIN, sync_entries

        with self._tracker.operation("entries.sync"):
            return await sync_entries(
                self._fetch_event,
                event_ids,
                state,
                concurrency=concurrency,
                margin=DEFAULT_MARGIN if margin is None else margin,
            )
