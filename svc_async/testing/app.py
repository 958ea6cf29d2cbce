"""The two ways to reach the core: an aiohttp application and an in-process transport.

Both feed ``RawRequest`` values to the same ``FakeService`` and carry out the outcome:
answer, wait, drop the connection (socket mode: the TCP connection is aborted, so the
client sees ``ServerDisconnectedError``/``ClientOSError``; in-process:
``ConnectionLostError``) or cut a body short.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import attrs
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from .._transports.base import (
    DEFAULT_MAX_BODY,
    Request,
    Response,
    StreamResponse,
    Timeout,
    capped_body,
    capped_chunks,
)
from ..errors import ConnectionLostError, RequestTimeout, TransportError
from .wire import Outcome, RawRequest

__all__ = ["InProcessTransport", "make_app"]

Execute = Callable[[RawRequest], Awaitable[Outcome]]


def make_app(execute: Execute, origin: str = "api") -> web.Application:
    """An aiohttp application answering every path through ``execute`` as ``origin``."""

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        raw = RawRequest(
            method=request.method,
            path=request.path,
            query=dict(request.query),
            headers=CIMultiDict(request.headers),
            body=body,
            base=f"{request.scheme}://{request.host}",
            origin=origin,
        )
        outcome = await execute(raw)
        if outcome.action == "reset":
            _abort(request)
            return web.Response(status=499)  # never sent: the connection is gone
        if outcome.action == "cut_body":
            resp = web.StreamResponse(status=outcome.status, headers=outcome.headers)
            resp.content_length = len(outcome.body)
            await resp.prepare(request)
            await resp.write(outcome.body[: len(outcome.body) // 2])
            _abort(request)
            return resp
        return web.Response(status=outcome.status, headers=outcome.headers, body=outcome.body)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def _abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None:
        transport.abort()


@attrs.define
class _Stream:
    status: int
    headers: CIMultiDictProxy[str]
    content: bytes
    request: Request
    max_body_size: int
    cut: bool = False

    def iter_chunks(self, chunk_size: int, *, capped: bool = True) -> AsyncIterator[bytes]:
        limit = self.max_body_size if capped else None
        return capped_chunks(self.headers, self._chunks(chunk_size), limit, self.request)

    async def _chunks(self, chunk_size: int) -> AsyncIterator[bytes]:
        limit = len(self.content) // 2 if self.cut else len(self.content)
        for start in range(0, limit, chunk_size):
            yield self.content[start : min(start + chunk_size, limit)]
        if self.cut:
            raise ConnectionLostError("connection lost while reading the body (injected fault)")


class InProcessTransport:
    """An SDK transport that calls the fake directly: no sockets, same state and faults.

    Honours ``Request.timeout.total`` (raising ``RequestTimeout``), raises
    ``ConnectionLostError`` for injected resets and cut bodies, and supports ``stream``
    for downloads. ``base_url`` is used for requests whose URL is relative; requests to
    ``files_origin()`` go to the fake's files origin. A body over ``max_body_size``
    raises ``ResponseTooLargeError`` as ``AiohttpTransport`` does (streams: when capped).
    """

    def __init__(
        self,
        execute: Execute,
        *,
        base_url: str = "http://fake.invalid",
        on_close: Callable[[], Awaitable[None]] | None = None,
        files_origin: Callable[[], str] | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
    ) -> None:
        if max_body_size <= 0:
            raise ValueError("max_body_size must be positive")
        self.max_body_size = max_body_size
        self._execute = execute
        self._files_origin = files_origin
        self.base_url = base_url.rstrip("/")
        self._on_close = on_close
        self.closed = False

    def __repr__(self) -> str:
        return f"<InProcessTransport {self.base_url}>"

    async def _outcome(self, request: Request) -> Outcome:
        if self.closed:
            raise TransportError("transport is closed", request=request)
        url = request.url
        base = str(url.origin()) if url.is_absolute() else self.base_url
        raw = RawRequest(
            method=request.method,
            path=url.path,
            query=dict(url.query),
            headers=CIMultiDict(request.headers),
            body=request.content or b"",
            base=base,
            origin="files"
            if self._files_origin is not None and base == self._files_origin()
            else "api",
        )
        total = (request.timeout or Timeout()).total
        try:
            async with asyncio.timeout(total):
                return await self._execute(raw)
        except TimeoutError:
            raise RequestTimeout(
                f"timeout on {request.method} {url.path} (in-process)", request=request
            ) from None

    @staticmethod
    def _headers(outcome: Outcome) -> CIMultiDictProxy[str]:
        headers = CIMultiDict(outcome.headers)
        headers["Content-Length"] = str(len(outcome.body))
        return CIMultiDictProxy(headers)

    async def send(self, request: Request) -> Response:
        """Answer ``request`` from the fake; resets raise ``ConnectionLostError``."""
        outcome = await self._outcome(request)
        if outcome.action in ("reset", "cut_body"):
            raise ConnectionLostError(
                f"connection lost during {request.method} {request.url.path} (injected fault)",
                request=request,
            )
        return Response(
            status=outcome.status,
            headers=self._headers(outcome),
            content=capped_body(outcome.body, self.max_body_size, request),
            request=request,
        )

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[StreamResponse]:
        """Answer ``request`` and yield its body in chunks (a cut body raises midway)."""
        outcome = await self._outcome(request)
        if outcome.action == "reset":
            raise ConnectionLostError(
                f"connection lost during {request.method} {request.url.path} (injected fault)",
                request=request,
            )
        yield _Stream(
            outcome.status,
            self._headers(outcome),
            outcome.body,
            request,
            self.max_body_size,
            outcome.action == "cut_body",
        )

    async def aclose(self) -> None:
        """Mark the transport closed (the fake's own background work stops too)."""
        if self.closed:
            return
        self.closed = True
        if self._on_close is not None:
            await self._on_close()
