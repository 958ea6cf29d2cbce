"""Seasons: ``GET /api/public/v1/season``."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Literal

from ..converter import structure
from ..models import Season
from ..retry import RetryPolicy
from ..types import AttemptTimeoutArg, TimeoutArg
from ._base import Resource

PATH = "/api/public/v1/season"


class Seasons(Resource):
    """All seasons the account can access, including child organisations' seasons."""

    async def list(
        self,
        *,
        timeout: TimeoutArg | Literal["default"] = "default",
        attempt_timeout: AttemptTimeoutArg | Literal["default"] = "default",
        retry: RetryPolicy | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_query: Mapping[str, str] | None = None,
    ) -> builtins.list[Season]:
        """Every season the account can access."""
        data = await self._send(
            "GET",
            PATH,
            idempotent=True,
            timeout=timeout,
            attempt_timeout=attempt_timeout,
            retry=retry,
            extra_headers=extra_headers,
            extra_query=extra_query,
            operation="seasons.list",
        )
        return structure(data, builtins.list[Season])
