"""Entries by event and by season: ``POST .../event/{id}/entries``, ``.../season/{id}/entries``."""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from .. import _validate as v
from ..converter import format_timestamp, structure
from ..models import Entry
from ..retry import RetryPolicy
from ._base import Resource, TimeoutOpt

EVENT_PATH = "/api/public/v1/event/{id}/entries"
SEASON_PATH = "/api/public/v1/season/{id}/entries"


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


class Entries(Resource):
    """Participants' entries, with their recordings and licence data."""

    async def for_event(
        self,
        event_id: int,
        *,
        updated_after: dt.datetime | None = None,
        fields: Iterable[Mapping[str, Any]] | None = None,
        timeout: TimeoutOpt = "default",
        retry: RetryPolicy | None = None,
    ) -> builtins.list[Entry]:
        """Entries of one event; ``updated_after`` (aware datetime) keeps recent changes only."""
        path = EVENT_PATH.format(id=v.positive_id(event_id, "event_id"))
        return await self._fetch(path, filter_body(updated_after, fields), timeout, retry)

    async def for_season(
        self,
        season_id: int,
        *,
        updated_after: dt.datetime | None = None,
        fields: Iterable[Mapping[str, Any]] | None = None,
        timeout: TimeoutOpt = "default",
        retry: RetryPolicy | None = None,
    ) -> builtins.list[Entry]:
        """Entries of one season; filters as for ``for_event``."""
        path = SEASON_PATH.format(id=v.positive_id(season_id, "season_id"))
        return await self._fetch(path, filter_body(updated_after, fields), timeout, retry)

    async def _fetch(
        self,
        path: str,
        body: dict[str, Any] | None,
        timeout: TimeoutOpt,
        retry: RetryPolicy | None,
    ) -> builtins.list[Entry]:
        data = await self._client._call(
            "POST", path, body, idempotent=True, timeout=timeout, retry=retry
        )
        return parse_entries(data)
