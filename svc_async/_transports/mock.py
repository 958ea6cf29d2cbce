"""``MockTransport``: a transport that answers from a function instead of the network."""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import attrs

from ..errors import TransportError
from .base import (
    DEFAULT_MAX_BODY,
    CappedStream,
    Request,
    Response,
    StreamResponse,
    answer_of,
    capped_body,
    check_headers,
    check_size,
)

__all__ = ["Handler", "MockTransport"]

Handler = Callable[[Request], "Response | Awaitable[Response]"]


class MockTransport:
    """A transport that calls ``handler(request)`` (sync or async) instead of the network.

    Every request is recorded in ``requests``. A handler may raise a TransportError to
    simulate network failures. A body over ``max_body_size`` raises
    ``ResponseTooLargeError`` as ``AiohttpTransport`` does (streams: when capped).
    """

    def __init__(self, handler: Handler, *, max_body_size: int = DEFAULT_MAX_BODY) -> None:
        check_size(max_body_size)
        self.max_body_size = max_body_size
        self.handler = handler
        self.requests: list[Request] = []
        self.closed = False

    def __repr__(self) -> str:
        return f"<MockTransport requests={len(self.requests)}>"

    async def send(self, request: Request) -> Response:
        """Record ``request`` and answer with the handler's response (body capped)."""
        response = await self._answer(request)
        capped_body(response.content, self.max_body_size, request)
        return response

    async def _answer(self, request: Request) -> Response:
        if self.closed:
            raise TransportError("transport is closed")
        check_headers(request)  # as aiohttp refuses
        self.requests.append(request)
        result = self.handler(request)
        if inspect.isawaitable(result):
            result = await result
        answer = answer_of(result, "MockTransport handler")
        return answer if answer.request is not None else attrs.evolve(answer, request=request)

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[StreamResponse]:
        """Answer like ``send`` and yield the body in chunks."""
        response = await self._answer(request)
        read = functools.partial(_slices, response.content)
        yield CappedStream(response.status, response.headers, read, self.max_body_size, request)

    async def aclose(self) -> None:
        """Mark the transport closed."""
        self.closed = True


async def _slices(content: bytes, size: int) -> AsyncIterator[bytes]:
    """``content`` in pieces of at most ``size`` bytes."""
    for start in range(0, len(content), size):
        yield content[start : start + size]
