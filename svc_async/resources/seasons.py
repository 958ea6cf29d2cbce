"""Seasons: ``GET /api/public/v1/season``."""

from __future__ import annotations

import builtins
from typing import Unpack

from .._pipeline.answers import Decoder
from ..models import Season
from ..types import CallOptions
from ._base import Resource

PATH = "/api/public/v1/season"
_SEASONS = Decoder(builtins.list[Season])


class Seasons(Resource):
    """All seasons the account can access, including child organisations' seasons."""

    async def list(self, **options: Unpack[CallOptions]) -> builtins.list[Season]:
        """Every season the account can access."""
        return await self._send(
            "GET", PATH, None, options, decode=_SEASONS, idempotent=True, operation="seasons.list"
        )
