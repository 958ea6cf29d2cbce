"""What every sub-client shares: its client and the narrow callable that sends a call."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..types import TimeoutArg

if TYPE_CHECKING:
    from ..client import Client
    from ..clock import Clock
    from ..pipeline import Resolver, StreamDecoder
    from ..retry import RetryPolicy


class Send(Protocol):
    """Run one call through the client's pipeline.

    Returns the decoded data, or with ``reply=True`` a ``Reply``: the data with the
    metadata of the response that carried it.
    """

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        host: Literal["api", "account"] = "api",
        idempotent: bool,
        timeout: TimeoutArg | Literal["default"] = "default",
        retry: RetryPolicy | None = None,
        resolve: Resolver | None = None,
        stream_decode: StreamDecoder | None = None,
        reply: bool = False,
    ) -> Awaitable[Any]: ...


class Resource:
    """Base of the sub-clients; sends through the ``send`` callable its client gives it."""

    def __init__(self, client: Client, send: Send) -> None:
        self._owner = client
        self._send = send

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._owner!r}>"

    @property
    def clock(self) -> Clock:
        """The client's clock (deadlines, polls and sleeps of this sub-client's waits)."""
        return self._owner.clock
