"""The SDK's shared type aliases, each stated once: what a callback or an option may be.

Also ``Timeout``, the limits of one HTTP exchange, which those options name: it lives here,
below the transport (which re-exports it), so a sub-client naming an option's type never
reaches the transport.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

import attrs

__all__ = ["AttemptTimeoutArg", "Progress", "Timeout", "TimeoutArg"]


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

TimeoutArg: TypeAlias = float | Timeout | None
"""A call's ``timeout=``: seconds for the **whole call** (every attempt, pacing hold,
auth renewal, backoff and tag search), or None for no bound.

A ``Timeout`` here is deprecated (its old per-attempt meaning: it is taken as
``attempt_timeout`` with a ``DeprecationWarning``). Per-call options write
``TimeoutArg | Literal["default"]``: ``"default"`` is the client's.
"""

AttemptTimeoutArg: TypeAlias = float | Timeout | None
"""An ``attempt_timeout=``: the limit of each HTTP exchange within a call: seconds (its
total), a ``Timeout`` with connect and read parts, or None for none but the call's."""
