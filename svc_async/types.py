"""The SDK's shared type aliases, each stated once: what a callback or an option may be."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from .transport import Timeout

__all__ = ["Progress", "TimeoutArg"]

Progress: TypeAlias = Callable[[int, "int | None"], object]
"""``progress(done, total)``, sync or async (an awaitable result is awaited).

Downloads count bytes and pass ``total=None`` when the size is unknown; bulk reads
count events or seasons and always know the total, so they also take a callback whose
``total`` is typed ``int``.
"""

TimeoutArg: TypeAlias = float | Timeout | None
"""A timeout as callers give it: seconds, a ``Timeout``, or None for no limit.

Per-call options write ``TimeoutArg | Literal["default"]``: ``"default"`` is the client's.
"""
