"""What every sub-client shares: its client and the narrow callable that sends a call."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, Required, TypedDict, Unpack

from ..types import AttemptTimeoutArg, TimeoutArg

if TYPE_CHECKING:
    from .._pipeline.run import Decoder, StreamDecoder
    from ..clock import Clock
    from ..retry import RetryPolicy


class CallOptions(TypedDict, total=False):
    """A call's options, declared once: what a sub-client may give ``Send``.

    The pipeline's ``Call`` has a field of each name (``host`` becomes its URL, ``retry``
    its ``policy``); what is left out takes the client's default.
    """

    host: Literal["api", "account"]
    """Which base URL: the verification host (default) or the account host."""
    idempotent: Required[bool]
    """Whether the call is safe to repeat (retries may send it again)."""
    timeout: TimeoutArg | Literal["default"]
    """Bound of the whole call, in seconds (None: none)."""
    attempt_timeout: AttemptTimeoutArg | Literal["default"]
    """Limit of each HTTP exchange (seconds or a ``Timeout``)."""
    retry: RetryPolicy | None
    """How failures are retried (None: the client's policy)."""
    authenticate: bool
    """Send the client's credentials (False: login and refresh)."""
    ambiguous: bool
    """Return ``pipeline.Ambiguous`` (the failure and the deadline) instead of raising
    when a call unsafe to repeat failed in a way that may have been processed."""
    decode: Decoder | None
    """Turns a 2xx body into data (None: JSON)."""
    stream_decode: StreamDecoder | None
    """Receives a 2xx response streamed, body unread."""
    reply: bool
    """Return a ``Reply`` (data and response metadata), not the data alone."""
    operation: str
    """The SDK call this is (``jobs.get``): traces name their spans after it."""
    extra_headers: Mapping[str, str] | None
    """Headers of this call's own, over the client's (never its authentication)."""
    extra_query: Mapping[str, str] | None
    """Query parameters added to this call's URL."""


class Send(Protocol):
    """Run one call through the client's pipeline.

    Returns the decoded data, or with ``reply=True`` a ``Reply``: the data with the
    metadata of the response that carried it.
    """

    def __call__(
        self, method: str, path: str, body: Any = None, /, **options: Unpack[CallOptions]
    ) -> Awaitable[Any]: ...


class Owner(Protocol):
    """What a sub-client reads of the client that made it (a ``Client``, known by this
    shape so that the client imports its sub-clients and never the other way round)."""

    @property
    def clock(self) -> Clock: ...
    @property
    def webhooks(self) -> object: ...
    @property
    def creation_tags(self) -> bool: ...


class Resource:
    """Base of the sub-clients; sends through the ``send`` callable its client gives it."""

    def __init__(self, client: Owner, send: Send) -> None:
        self._owner = client
        self._send = send

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._owner!r}>"

    @property
    def clock(self) -> Clock:
        """The client's clock (deadlines, polls and sleeps of this sub-client's waits)."""
        return self._owner.clock
