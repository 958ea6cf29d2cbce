"""Reading a webhook body whole, however it arrives, within a size cap and a time limit.

``StreamReader.read(n)`` returns what is buffered so far, not ``n`` bytes: a body split
over TCP segments, sent slowly or in chunked encoding comes in pieces. ``read_body``
gathers the pieces until the end of the body, and refuses a body over the cap or one
that stops arriving.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

__all__ = ["BodyIncomplete", "BodyTimeout", "BodyTooLarge", "read_body"]


class BodyTooLarge(Exception):
    """The body is longer than the cap (answered 413)."""


class BodyTimeout(Exception):
    """The body stopped arriving, or took too long as a whole (answered 408)."""


class BodyIncomplete(Exception):
    """The sender went away before the end of the body (answered 400)."""


class _Stream(Protocol):
    async def readany(self) -> bytes: ...


async def read_body(
    stream: _Stream, limit: int, *, read_timeout: float, body_timeout: float
) -> bytes:
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
                    raise BodyTooLarge(f"body over {limit} bytes")
                chunks.append(chunk)
    except TimeoutError:
        raise BodyTimeout(f"body incomplete after {size} bytes") from None
    except (ConnectionError, EOFError) as exc:
        raise BodyIncomplete(f"body incomplete after {size} bytes ({exc})") from None
