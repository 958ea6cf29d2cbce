"""Organisations: ``GET /api/orgs/me`` on the account host."""

from __future__ import annotations

import builtins
from typing import Unpack

from .._pipeline.answers import Decoder
from ..models import Organisation
from ..types import CallOptions
from ._base import Resource

PATH = "/api/orgs/me"
_ORGS = Decoder(builtins.list[Organisation])


class Orgs(Resource):
    """The organisations the account can access, including child organisations."""

    async def list(self, **options: Unpack[CallOptions]) -> builtins.list[Organisation]:
        """Every organisation the account can access."""
        return await self._send(
            "GET",
            PATH,
            None,
            options,
            decode=_ORGS,
            host="account",
            idempotent=True,
            operation="orgs.list",
        )

    async def children(self, parent_id: int | None = None) -> builtins.list[Organisation]:
        """Organisations whose parent is ``parent_id`` (None: the root organisations)."""
        return [o for o in await self.list() if o.parent_id == parent_id]
