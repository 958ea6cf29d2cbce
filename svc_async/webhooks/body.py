"""Reading a webhook body whole, however it arrives, within a size cap and a time limit.

``StreamReader.read(n)`` returns what is buffered so far, not ``n`` bytes: a body split
over TCP segments, sent slowly or in chunked encoding comes in pieces. ``read_body``
gathers the pieces until the end of the body, and refuses a body over the cap, one that
stops arriving, or one the sender abandons.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import attrs

__all__ = ["BodyRefused", "read_body"]


@attrs.frozen(slots=True, kw_only=True)
class BodyRefused:
    """Why a body was not read: 413 (over the cap), 408 (too slow), 400 (cut short)."""

    status: int
    reason: str


class _Stream(Protocol):
    async def readany(self) -> bytes: ...


async def read_body(
    stream: _Stream, limit: int, *, read_timeout: float, body_timeout: float
) -> bytes | BodyRefused:
    """All of ``stream`` up to ``limit`` bytes; each piece must come within
    ``read_timeout`` seconds and the whole body within ``body_timeout``."""
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(body_timeout):
            while True:
                async with asyncio.timeout(read_timeout):
                    chunk = await stream.readany()
                if not chunk:
                    return b"".join(chunks)
                size += len(chunk)
                if size > limit:
                    return BodyRefused(status=413, reason=f"body over {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        return BodyRefused(status=408, reason=f"body incomplete after {size} bytes (too slow)")
    except (ConnectionError, EOFError) as exc:
        return BodyRefused(status=400, reason=f"body incomplete after {size} bytes ({exc})")
