"""Reading a streamed webhook body whole, within a size cap and two time limits.

A body split over TCP segments, sent slowly or in chunked encoding comes in pieces.
``read_body`` gathers them until the end of the body, and refuses a body over
``MAX_BODY`` (413: ``TOO_LARGE``), one that stops arriving (408), or one the sender
abandons (400). Only an adapter that streams the body (aiohttp's) can refuse a slow one:
a server that reads the body before it calls the application has already waited for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable

from .core import MAX_BODY, TOO_LARGE, Answer, refusal

__all__ = ["read_body"]


async def read_body(
    chunks: AsyncIterable[bytes], *, read_timeout: float, body_timeout: float
) -> bytes | Answer:
    """All of ``chunks`` up to ``MAX_BODY`` bytes, or the answer refusing them; each piece
    must come within ``read_timeout`` seconds and the whole body within ``body_timeout``."""
    pieces = aiter(chunks)
    got: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(body_timeout):
            while True:
                async with asyncio.timeout(read_timeout):
                    chunk = await anext(pieces, b"")
                if not chunk:
                    return b"".join(got)
                size += len(chunk)
                if size > MAX_BODY:
                    return TOO_LARGE
                got.append(chunk)
    except TimeoutError:
        reason = f"webhook body incomplete after {size} bytes (too slow)"
        return refusal(408, reason, close=True)
    except (ConnectionError, EOFError) as exc:
        return refusal(400, f"webhook body incomplete after {size} bytes ({exc})", close=True)
