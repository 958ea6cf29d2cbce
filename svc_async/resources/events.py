"""Events: ``POST /api/public/v1/event`` with an optional limit/offset/organisation body."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from typing import Any, Unpack

from .._core import validate as v
from .._pipeline.answers import Decoder
from ..models import Event
from ..types import CallOptions
from ._base import Resource
from .pagination import iter_offset

PATH = "/api/public/v1/event"
_EVENTS = Decoder(builtins.list[Event])


class Events(Resource):
    """Events of the account's organisations, page by page or all at once."""

    async def list(
        self,
        *,
        organisation_id: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
        **options: Unpack[CallOptions],
    ) -> builtins.list[Event]:
        """One page of events (the service's default page is 25, its maximum 100).

        ``limit`` is 1 to 100, as in ``jobs.search`` and the command line: a page of
        nothing is never what a caller means.
        """
        body: dict[str, Any] = {}
        if limit is not None:
            body["limit"] = v.count(limit, "limit", minimum=1, maximum=v.MAX_PAGE_SIZE)
        if offset is not None:
            body["offset"] = v.count(offset, "offset")
        if organisation_id is not None:
            body["organisationId"] = v.positive_id(organisation_id, "organisation_id")
        return await self._send(
            "POST",
            PATH,
            body or None,
            options,
            decode=_EVENTS,
            idempotent=True,
            operation="events.list",
        )

    def iter(
        self, *, organisation_id: int | None = None, page_size: int = v.MAX_PAGE_SIZE
    ) -> AsyncIterator[Event]:
        """Every event, fetched page by page until a short page; each event once."""
        v.optional_id(organisation_id, "organisation_id")
        size = v.count(page_size, "page_size", minimum=1, maximum=v.MAX_PAGE_SIZE)

        async def page(limit: int, offset: int) -> builtins.list[Event]:
            return await self.list(organisation_id=organisation_id, limit=limit, offset=offset)

        return self._tracker.stepwise("events.iter", iter_offset(page, size))
