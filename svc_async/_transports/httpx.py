"""``HttpxTransport``: the second real transport, on httpx (HTTP/2 with ``http2=True``).

Install it with the ``httpx`` extra (``pip install "svc-async[httpx]"``; for HTTP/2 the
``http2`` extra, which adds ``h2``). Only this module imports httpx, and ``svc_async``
loads it only when ``HttpxTransport`` is first used.

It keeps every promise of ``AiohttpTransport``: each exchange ends at
``Request.timeout`` (connect, read and total, the body included); a body is decoded
(gzip, deflate) a bounded piece at a time and stops at ``max_body_size`` with
``ResponseTooLargeError``; redirects are never followed; the same failures raise the
same ``TransportError`` subclasses with the same wording; and proxies come from
``proxy=`` or, with ``trust_env``, from ``HTTPS_PROXY``, ``HTTP_PROXY`` and
``NO_PROXY``, routed by the same rule (``ProxyError`` when a proxy refuses).

The body is decoded here, not by httpx, because httpx's decoders break the promise of
a bounded read: its ``GZipDecoder`` and ``DeflateDecoder`` call zlib's ``decompress``
on each network read with no ``max_length``, so one 64 KB read of a gzip bomb becomes
about 64 MB in memory before any size can be checked (``aiter_bytes(chunk_size)`` only
cuts what is already inflated). ``_decoded`` inflates at most ``_PIECE`` bytes a step.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

try:
    import httpx
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError('HttpxTransport needs httpx: pip install "svc-async[httpx]"') from exc
import yarl
from multidict import CIMultiDict, CIMultiDictProxy

from ..errors import TransportError
from ..redact import redact_text
from ..types import Timeout
from .base import (
    DEFAULT_MAX_BODY,
    CappedStream,
    Request,
    Response,
    StreamResponse,
    cannot_connect,
    capped_chunks,
    check_headers,
    check_settings,
    connect_reason,
    connect_timeout,
    connection_lost,
    failed,
    timed_out,
    tls_failure,
    unsendable,
)
from .cutoff import Cutoffs, raised_instead
from .proxy import Proxies, Route, proxy_refused, proxy_unreachable

__all__ = ["HttpxTransport"]

_LIBRARY_ERRORS = (httpx.HTTPError, OSError)
"""What a stream's block may raise that is httpx's (wrapped), not the caller's own."""

_DEFAULT_TIMEOUT = Timeout()
_ACCEPT_ENCODING = (b"Accept-Encoding", b"gzip, deflate")
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_PIECE = 64 * 1024
"""The most bytes one step of decompression gives: a bomb never unpacks whole."""


class HttpxTransport:
    """A transport on httpx: HTTP/1.1, or HTTP/2 over TLS with ``http2=True``.

    ``limit`` is the most connections open at once (0: no limit), ``keepalive_timeout``
    how long an idle one is kept; ``verify`` is ``True`` (httpx's trust store),
    ``False``, an ``ssl.SSLContext`` or the path of a CA bundle. ``proxy`` and
    ``trust_env`` work as in ``AiohttpTransport``. With ``http2=True`` an HTTPS origin
    that offers HTTP/2 (ALPN) gets one connection carrying every call at once;
    plain ``http://`` stays HTTP/1.1. Pick it for HTTP/2, or to share httpx's
    connection handling with the rest of a program; ``AiohttpTransport`` is faster per
    call (see the transports guide).

    Used again in a new event loop after its first loop closed (a second
    ``asyncio.run()``), it opens fresh connections there; unlike ``AiohttpTransport`` it
    cannot close the old loop's sockets (httpx offers no way to without that loop), so
    each is closed when collected, with a ``ResourceWarning``. Close the client in the
    loop that used it.
    """

    enforces_timeout = True
    """Each exchange ends at ``Request.timeout``: connect and read by httpx, the total
    (the body included) by one timer shared by every exchange in flight."""

    def __init__(
        self,
        *,
        http2: bool = False,
        limit: int = 100,
        keepalive_timeout: float = 15.0,
        max_body_size: int = DEFAULT_MAX_BODY,
        verify: ssl.SSLContext | bool | str = True,
        proxy: str | yarl.URL | None = None,
        trust_env: bool = True,
    ) -> None:
        check_settings(max_body_size, keepalive_timeout, trust_env, limit=limit)
        if http2:
            _require_h2()
        self.http2 = http2
        self.max_body_size = max_body_size
        self._limit = limit
        self._limits = httpx.Limits(
            max_connections=limit or None,
            max_keepalive_connections=limit or None,
            keepalive_expiry=keepalive_timeout,
        )
        self._verify = (
            ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify
        )
        self._trust_env = trust_env
        self._proxies = Proxies.configure(proxy, trust_env)
        self._pools: dict[Route | None, httpx.AsyncHTTPTransport] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._cutoffs = Cutoffs()

    def __repr__(self) -> str:
        return f"<HttpxTransport http2={self.http2} limit={self._limit}>"

    # ------------------------------------------------------------------ sending

    async def send(self, request: Request) -> Response:
        """Send ``request``; every httpx failure comes back as a redacted TransportError."""
        async with self._exchange(request, Exception) as (resp, headers):
            chunks = capped_chunks(headers, _decoded(resp, request), self.max_body_size, request)
            content = b"".join([chunk async for chunk in chunks])
        return Response(resp.status_code, headers, content)

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[StreamResponse]:
        """Open ``request`` and yield the response with its body unread.

        The total limit runs until the block ends, reading the body included.
        """
        async with self._exchange(request, _LIBRARY_ERRORS) as (resp, headers):
            read = functools.partial(_sliced, resp, request)
            yield CappedStream(resp.status_code, headers, read, self.max_body_size, request)

    @asynccontextmanager
    async def _exchange(
        self, request: Request, foreign: type[BaseException] | tuple[type[BaseException], ...]
    ) -> AsyncIterator[tuple[httpx.Response, CIMultiDictProxy[str]]]:
        """One exchange of ``send`` or ``stream``: open, yield the response and its headers,
        close; cut off at the total limit, and a ``foreign`` (httpx's) failure wrapped."""
        timeout = request.timeout or _DEFAULT_TIMEOUT
        loop = asyncio.get_running_loop()
        cut = None if timeout.total is None else self._cutoffs.arm(timeout.total, loop)
        try:
            resp, route = await self._open(request, timeout, loop)
            try:
                yield resp, _headers_of(resp, route, request)
            finally:
                await resp.aclose()
        except BaseException as exc:
            instead = raised_instead(
                self._cutoffs, cut, exc, request, timeout.total, _wrap_error, self._route, foreign
            )
            if instead is None:
                raise  # ours, or the caller's own from inside the block
            raise instead from None
        if cut is not None:
            self._cutoffs.disarm(cut)

    async def _open(
        self, request: Request, timeout: Timeout, loop: asyncio.AbstractEventLoop
    ) -> tuple[httpx.Response, Route | None]:
        """Start ``request`` (its headers checked first, as aiohttp's are); never redirects."""
        check_headers(request)
        route = self._route(request)
        pool = self._pool(route, loop)
        # As aiohttp sends them (h11 refuses what is around a value: RFC 9110 5.5 makes
        # it no part of it); names and values were checked by check_headers.
        headers = [(k.encode(), v.strip(" \t").encode()) for k, v in request.headers.items()]
        if "Accept-Encoding" not in request.headers:
            headers.append(_ACCEPT_ENCODING)  # what it decodes, as aiohttp asks by itself
        outgoing = httpx.Request(
            request.method,
            str(request.url),
            headers=headers,
            content=request.content,
            # httpx's limits: connect and read (each wait for data); write and pool unset:
            # the total is a cut.
            extensions={"timeout": {"connect": timeout.connect, "read": timeout.read}},
        )
        return await pool.handle_async_request(outgoing), route

    def _route(self, request: Request) -> Route | None:
        return None if self._proxies is None else self._proxies.route(request.url)

    def _pool(
        self, route: Route | None, loop: asyncio.AbstractEventLoop
    ) -> httpx.AsyncHTTPTransport:
        """The connection pool for ``route`` (direct or one proxy), made on first use."""
        if self._closed:
            raise TransportError("transport is closed")
        if loop is not self._loop:
            if self._loop is not None and self._loop.is_closed():
                # Used again after its event loop ended (a second asyncio.run()): the old
                # connections died with that loop; start fresh in this one.
                self._pools = {}
            self._loop = loop
        pool = self._pools.get(route)
        if pool is None:
            proxy = None if route is None else httpx.Proxy(str(route.url), headers=route.headers)
            pool = self._pools[route] = httpx.AsyncHTTPTransport(
                verify=self._verify,
                http2=self.http2,
                limits=self._limits,
                proxy=proxy,
                trust_env=self._trust_env,
            )
        return pool

    async def aclose(self) -> None:
        """Close every connection; the transport is not used afterwards."""
        self._closed = True
        pools, self._pools = self._pools, {}
        if self._loop is not None and self._loop.is_closed():
            return  # their loop is gone, and their sockets with it
        for pool in pools.values():
            await pool.aclose()


def _require_h2() -> None:
    """``ImportError`` now, not at the first call, when HTTP/2 cannot be spoken."""
    try:
        import h2  # noqa: F401
    except ImportError:
        raise ImportError(
            'HttpxTransport(http2=True) needs h2: pip install "svc-async[http2]"'
        ) from None


async def _sliced(resp: httpx.Response, request: Request, size: int) -> AsyncIterator[bytes]:
    """The body, decoded (``_decoded``), cut to at most ``size`` bytes a chunk."""
    async for chunk in _decoded(resp, request):
        for start in range(0, len(chunk), size):
            yield chunk[start : start + size]


def _headers_of(
    resp: httpx.Response, route: Route | None, request: Request
) -> CIMultiDictProxy[str]:
    """The response's headers as the SDK reads them (aiohttp's decoding: UTF-8).

    A 407 to a proxied request is the proxy's (a service never sends one): ``ProxyError``.
    """
    if resp.status_code == 407 and route is not None:
        raise proxy_refused(
            route, request, 407, resp.extensions.get("reason_phrase", b"").decode("latin-1")
        )
    pairs = [
        (k.decode("latin-1"), v.decode("utf-8", "surrogateescape")) for k, v in resp.headers.raw
    ]
    return CIMultiDictProxy(CIMultiDict(pairs))


async def _decoded(resp: httpx.Response, request: Request) -> AsyncIterator[bytes]:
    """The body as sent, decoded from gzip or deflate a bounded piece at a time.

    httpx's own decoder inflates each network read whole, without a bound (a 64 KB read
    of a gzip bomb is about 64 MB); here no step gives more than ``_PIECE`` bytes, so
    the cap stops a bomb in time. An encoding not asked for (not gzip or deflate) is
    passed on as sent.
    """
    encoding = resp.headers.get("content-encoding", "").strip().lower()
    if encoding not in _WBITS:
        async for chunk in resp.aiter_raw():
            yield chunk
        return
    inflater = _Inflater(encoding, request)
    async for chunk in resp.aiter_raw():
        for piece in inflater.feed(chunk):
            yield piece
    inflater.finish()


class _Inflater:
    """gzip or deflate (zlib-wrapped, or raw as some servers send it), step by step, as
    aiohttp's decoder reads them: a stream's end starts the next member (gzip(1)
    concatenates them); bytes after the end that are no member, or a deflate body that
    stops short of its end, are a body that cannot be decoded."""

    __slots__ = ("_encoding", "_obj", "_request", "_started", "_wbits")

    def __init__(self, encoding: str, request: Request) -> None:
        self._encoding = encoding
        self._request = request
        self._wbits = _WBITS[encoding]
        self._obj = zlib.decompressobj(self._wbits)
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Decompress ``data``, yielding at most ``_PIECE`` bytes at a time."""
        while True:
            if data and self._obj.eof:  # a member ended; these bytes are the next one
                self._obj = zlib.decompressobj(self._wbits)
            try:
                piece = self._obj.decompress(data, _PIECE)
            except zlib.error:
                if self._started or self._encoding != "deflate":
                    raise self._broken() from None
                self._wbits = -zlib.MAX_WBITS  # raw deflate
                self._obj = zlib.decompressobj(self._wbits)
                self._started = True
                continue
            self._started = True
            if piece:
                yield piece
            data = self._obj.unused_data if self._obj.eof else self._obj.unconsumed_tail
            if not data and len(piece) < _PIECE:
                return

    def finish(self) -> None:
        """At the body's end: a deflate body must have reached its own (aiohttp's rule;
        a gzip one cut short of its trailer passes, in both)."""
        if self._encoding == "deflate" and self._started and not self._obj.eof:
            raise self._broken()

    def _broken(self) -> TransportError:
        return connection_lost(self._request, f"the {self._encoding} body cannot be decoded")


# ------------------------------------------------------------------ errors


def _wrap_error(exc: BaseException, request: Request, route: Route | None) -> TransportError:
    """Turn an httpx/OS error into the same error ``AiohttpTransport`` raises."""
    refused = unsendable(request)
    if refused is not None:
        return refused
    if isinstance(exc, httpx.ProxyError):
        status, reason = _proxy_answer(str(exc))
        return proxy_refused(route, request, status, reason)
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return connect_timeout(request)
    if isinstance(exc, httpx.TimeoutException):
        return timed_out(request)
    if isinstance(exc, httpx.ConnectError):
        errors = [error for error in _causes(exc) if isinstance(error, OSError)]
        reason = connect_reason(errors) or redact_text(str(exc)) or type(exc).__name__
        if route is not None and tls_failure(errors) is None:
            return proxy_unreachable(route, request, reason)  # not the origin's TLS
        return cannot_connect(request, reason)
    if isinstance(exc, httpx.TransportError | httpx.DecodingError | OSError):
        return connection_lost(request, exc)
    return failed(request, exc)


def _proxy_answer(message: str) -> tuple[int, str]:
    """The status and reason of a refused ``CONNECT`` from httpcore's "407 Reason"."""
    code, _, reason = message.partition(" ")
    return (int(code), reason) if code.isascii() and code.isdigit() else (502, message)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, what caused it, and each error of an exception group, depth first."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(reversed(current.exceptions))
        for linked in (current.__context__, current.__cause__):
            if linked is not None:
                stack.append(linked)
