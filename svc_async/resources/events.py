"""Events: ``POST /api/public/v1/event`` with an optional limit/offset/organisation body."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal

from .._core import validate as v
from ..converter import structure
from ..models import Event
from ..retry import RetryPolicy
from ..types import AttemptTimeoutArg, TimeoutArg
from ._base import Resource
from .pagination import iter_offset

PATH = "/api/public/v1/event"


class Events(Resource):
    """Events of the account's organisations, page by page or all at once."""

    async def list(
        self,
        *,
        organisation_id: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: TimeoutArg | Literal["default"] = "default",
        attempt_timeout: AttemptTimeoutArg | Literal["default"] = "default",
        retry: RetryPolicy | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, str] | None = None,
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
        data = await self._send(
            "POST",
            PATH,
            body or None,
            idempotent=True,
            timeout=timeout,
            attempt_timeout=attempt_timeout,
            retry=retry,
            extra_headers=extra_headers,
            extra_query=extra_query,
            operation="events.list",
        )
        return structure(data, builtins.list[Event])

    def iter(
        self, *, organisation_id: int | None = None, page_size: int = v.MAX_PAGE_SIZE
    ) -> AsyncIterator[Event]:
        """Every event, fetched page by page until a short page; each event once."""
        v.optional_id(organisation_id, "organisation_id")
        size = v.count(page_size, "page_size", minimum=1, maximum=v.MAX_PAGE_SIZE)

        async def page(limit: int, offset: int) -> builtins.list[Event]:
            return await self.list(organisation_id=organisation_id, limit=limit, offset=offset)

        return iter_offset(page, size)
