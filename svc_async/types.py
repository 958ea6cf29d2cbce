"""The SDK's shared type aliases, each stated once: what a callback or an option may be.

Also ``Timeout``, the limits of one HTTP exchange, which those options name: it lives here,
below the transport (which re-exports it), so a sub-client naming an option's type never
reaches the transport.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, TypeAlias, TypedDict

import attrs

from .retry import RetryPolicy

__all__ = ["AttemptTimeoutArg", "CallOptions", "Progress", "Timeout", "TimeoutArg"]


@attrs.frozen(slots=True, kw_only=True, cache_hash=True)
class Timeout:
    """Time limits for one HTTP exchange, in seconds (None: no limit).

    ``connect`` covers opening the connection, ``read`` each wait for data, ``total``
    the whole exchange including reading the body.
    """

    total: float | None = 30.0
    connect: float | None = 10.0
    read: float | None = None


Progress: TypeAlias = Callable[[int, "int | None"], object]
"""``progress(done, total)``, sync or async (an awaitable result is awaited).

Downloads count bytes and pass ``total=None`` when the size is unknown; bulk reads
count events or seasons and always know the total, so they also take a callback whose
``total`` is typed ``int``.
"""

TimeoutArg: TypeAlias = float | None
"""A call's ``timeout=``: seconds for the **whole call** (every attempt, pacing hold,
auth renewal, backoff and tag search), or None for no bound. (The limits of each HTTP
exchange, a ``Timeout``, are ``attempt_timeout=``.) Per-call options write
``TimeoutArg | Literal["default"]``: ``"default"`` is the client's.
"""

AttemptTimeoutArg: TypeAlias = float | Timeout | None
"""An ``attempt_timeout=``: the limit of each HTTP exchange within a call: seconds (its
total), a ``Timeout`` with connect and read parts, or None for none but the call's."""


class CallOptions(TypedDict, total=False):
    """The five options every call of a sub-client takes, declared once.

    Each method writes ``**options: Unpack[CallOptions]``: a type checker knows the names
    and their types, and the client checks both at run time, before anything is sent (a
    misspelt name is a ``TypeError`` naming it). An option left out, or ``"default"``
    for the two timeouts, takes the client's setting (or its ``with_options`` view's).
    """

    timeout: TimeoutArg | Literal["default"]
    """Bound of the whole call, in seconds (None: none)."""
    attempt_timeout: AttemptTimeoutArg | Literal["default"]
    """Limit of each HTTP exchange within the call: seconds or a ``Timeout``."""
    retry: RetryPolicy | None
    """How this call's failures are retried (None: the client's policy)."""
    extra_headers: Mapping[str, str] | None
    """Headers of this call's own, over the client's (never its authentication)."""
    extra_query: Mapping[str, str] | None
    """Query parameters added to this call's URL."""
