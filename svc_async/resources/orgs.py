"""Organisations: ``GET /api/orgs/me`` on the account host."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Literal

from ..converter import structure
from ..models import Organisation
from ..retry import RetryPolicy
from ..types import AttemptTimeoutArg, TimeoutArg
from ._base import Resource

PATH = "/api/orgs/me"


class Orgs(Resource):
    """The organisations the account can access, including child organisations."""

    async def list(
        self,
        *,
        timeout: TimeoutArg | Literal["default"] = "default",
        attempt_timeout: AttemptTimeoutArg | Literal["default"] = "default",
        retry: RetryPolicy | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, str] | None = None,
    ) -> builtins.list[Organisation]:
        """Every organisation the account can access."""
        data = await self._send(
            "GET",
            PATH,
            host="account",
            idempotent=True,
            timeout=timeout,
            attempt_timeout=attempt_timeout,
            retry=retry,
            extra_headers=extra_headers,
            extra_query=extra_query,
            operation="orgs.list",
        )
        return structure(data, builtins.list[Organisation])

    async def children(self, parent_id: int | None = None) -> builtins.list[Organisation]:
        """Organisations whose parent is ``parent_id`` (None: the root organisations)."""
        return [o for o in await self.list() if o.parent_id == parent_id]
