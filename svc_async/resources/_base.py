"""What every sub-client shares: a reference to its client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..transport import Timeout

if TYPE_CHECKING:
    from ..client import Client

TimeoutOpt = float | Timeout | None | Literal["default"]
"""Per-call timeout: seconds, a Timeout, None for no limit, or the client's default."""


class Resource:
    """Base of the sub-clients; holds the client whose pipeline they use."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._client!r}>"
