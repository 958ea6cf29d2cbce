"""The I/O edge: Request and Response values, the Transport protocol and two transports.

A transport turns one ``Request`` into one ``Response`` and knows nothing of auth,
retries or models. ``AiohttpTransport`` is the default; ``MockTransport`` calls a
function instead of the network, for tests.
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol, runtime_checkable

import aiohttp
import attrs
import orjson
import yarl
from aiohttp import hdrs
from multidict import CIMultiDict, CIMultiDictProxy

from .._core.compat import abandon
from .._core.headers import SendableHeaders, header_problem
from ..clock import running_loop
from ..errors import (
    ConnectError,
    ConnectionLostError,
    ConnectTimeout,
    LocalProtocolError,
    RequestTimeout,
    ResponseTooLargeError,
    TransportError,
)
from ..redact import redact_headers, redact_text, redact_url
from ..types import Timeout as Timeout  # its home was here: the name still works
from .cutoff import Cut, Cutoffs
from .proxy import Proxies, Route, proxy_refused, proxy_unreachable

DEFAULT_MAX_BODY = 256 * 1024 * 1024
"""Largest API response body accepted, after decompression (bytes)."""


def _headers(value: Mapping[str, str] | None) -> CIMultiDictProxy[str]:
    if isinstance(value, CIMultiDictProxy):
        return value
    return CIMultiDictProxy(CIMultiDict(value or {}))


@attrs.frozen(slots=True, repr=False, init=False)
class Request:
    """One HTTP request, fully built: the only thing a transport receives.

    ``headers`` may be any mapping; it is kept as a read-only case-insensitive one.
    """

    method: str
    url: yarl.URL
    headers: CIMultiDictProxy[str]
    content: bytes | None
    timeout: Timeout | None

    def __init__(
        self,
        method: str,
        url: yarl.URL,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        timeout: Timeout | None = None,
    ) -> None:
        # Frozen, yet built by setting each slot directly: one is made per attempt, and
        # attrs' frozen __init__, which sets each field by name through
        # object.__setattr__, took about 40% longer.
        _set_method(self, method)
        _set_url(self, url)
        _set_req_headers(self, _headers(headers))
        _set_req_content(self, content)
        _set_timeout(self, timeout)

    def json(self) -> Any:
        """The body decoded as JSON (None when there is no body)."""
        return None if self.content is None else orjson.loads(self.content)

    def __repr__(self) -> str:
        return f"<Request {self.method} {redact_url(self.url)}>"

    def describe(self) -> dict[str, Any]:
        """A redacted, loggable view of the request."""
        return {
            "method": self.method,
            "url": redact_url(self.url),
            "headers": redact_headers(self.headers),
        }


@attrs.frozen(slots=True, repr=False, init=False)
class Response:
    """One complete HTTP response with its body in memory.

    ``headers`` may be any mapping; it is kept as a read-only case-insensitive one.
    """

    status: int
    headers: CIMultiDictProxy[str]
    content: bytes
    request: Request | None

    def __init__(
        self,
        status: int,
        headers: Mapping[str, str] | None = None,
        content: bytes = b"",
        request: Request | None = None,
    ) -> None:
        _set_status(self, status)  # slots set directly, as in Request
        _set_resp_headers(self, _headers(headers))
        _set_resp_content(self, content)
        _set_request(self, request)

    def json(self) -> Any:
        """The body decoded as JSON (raises orjson.JSONDecodeError on bad input)."""
        return orjson.loads(self.content)

    @property
    def text(self) -> str:
        """The body decoded as UTF-8, with undecodable bytes replaced."""
        return self.content.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"<Response {self.status} {len(self.content)} bytes>"


def _slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    """Set ``name`` on an instance of ``cls`` past its frozen ``__setattr__``."""
    setter: Callable[[Any, Any], None] = cls.__dict__[name].__set__
    return setter


_set_method = _slot_setter(Request, "method")
_set_url = _slot_setter(Request, "url")
_set_req_headers = _slot_setter(Request, "headers")
_set_req_content = _slot_setter(Request, "content")
_set_timeout = _slot_setter(Request, "timeout")
_set_status = _slot_setter(Response, "status")
_set_resp_headers = _slot_setter(Response, "headers")
_set_resp_content = _slot_setter(Response, "content")
_set_request = _slot_setter(Response, "request")


def json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """Build a JSON ``Response``, for MockTransport handlers."""
    merged = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
    return Response(status=status, headers=merged, content=orjson.dumps(data))


class StreamResponse(Protocol):
    """A response whose body is read piece by piece (big answers, downloads)."""

    status: int
    headers: CIMultiDictProxy[str]

    def iter_chunks(self, chunk_size: int, *, capped: bool = True) -> AsyncIterator[bytes]:
        """Yield the body in chunks of at most ``chunk_size`` bytes.

        ``capped`` bodies stop with ``ResponseTooLargeError`` past the transport's body
        cap; only a consumer that keeps nothing in memory (a download to disk) lifts it.
        """
        ...


@runtime_checkable
class Transport(Protocol):
    """What the client needs from the network: send one request, and close."""

    async def send(self, request: Request) -> Response:
        """Send ``request`` and return the complete response (any status)."""
        ...

    async def aclose(self) -> None:
        """Release connections; the transport is not used afterwards."""
        ...


@runtime_checkable
class StreamingTransport(Transport, Protocol):
    """A transport that can also stream a response body (used by ``download``)."""

    def stream(self, request: Request) -> AbstractAsyncContextManager[StreamResponse]:
        """Open ``request`` and give the response with its body unread."""
        ...


def _too_large(limit: int, request: Request, length: int | None = None) -> ResponseTooLargeError:
    size = "response body" if length is None else f"response body of {length} bytes"
    where = f"{request.method} {redact_url(request.url)}"
    return ResponseTooLargeError(
        f"{size} of {where} exceeds max_body_size ({limit} bytes)", request=request
    )


def _declared_length(headers: CIMultiDictProxy[str]) -> int | None:
    """The body's size from Content-Length, when it is the size of what we read.

    With a Content-Encoding, the transport hands over the decoded body and
    Content-Length is the encoded size: it says nothing about the bytes read. (The
    HTTP parser has checked the value; aiohttp's names are ``istr``, looked up without
    lowering a string.)
    """
    if hdrs.CONTENT_ENCODING in headers:
        return None
    length = headers.get(hdrs.CONTENT_LENGTH)
    return None if length is None else int(length)


async def _capped(
    headers: CIMultiDictProxy[str],
    chunks: AsyncIterator[bytes],
    limit: int | None,
    request: Request,
) -> AsyncIterator[bytes]:
    """The one place a body's size is checked: declared first, then as bytes arrive.

    Counts decoded bytes, so a compressed bomb stops at ``limit`` however small it is
    on the wire. ``limit=None`` lifts the cap (a download streamed to disk). Both
    transports read every body through it (``headers``: the response's).
    """
    if limit is not None:
        length = _declared_length(headers)
        if length is not None and length > limit:
            raise _too_large(limit, request, length)
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if limit is not None and total > limit:
            raise _too_large(limit, request)
        yield chunk


def capped_chunks(
    headers: CIMultiDictProxy[str],
    chunks: AsyncIterator[bytes],
    limit: int | None,
    request: Request,
) -> AsyncIterator[bytes]:
    """``chunks`` of a streamed body under the same cap as aiohttp's (``limit=None``: none).

    For transports of your own (and the fake's in-process one): a body over ``limit``
    raises ``ResponseTooLargeError`` exactly as ``AiohttpTransport`` raises it.
    """
    return _capped(headers, chunks, limit, request)


def capped_body(content: bytes, limit: int | None, request: Request) -> bytes:
    """A body held whole, refused past ``limit`` as ``AiohttpTransport`` refuses it
    (``ResponseTooLargeError``, the same words); ``limit=None``: no cap."""
    if limit is not None and len(content) > limit:
        raise _too_large(limit, request, len(content))
    return content


class _AiohttpStream:
    __slots__ = ("_limit", "_request", "_resp", "headers", "status")

    def __init__(self, resp: Any, limit: int, request: Request) -> None:
        self.status = resp.status
        self.headers = resp.headers
        self._resp = resp
        self._limit = limit
        self._request = request

    def iter_chunks(self, chunk_size: int, *, capped: bool = True) -> AsyncIterator[bytes]:
        chunks = self._resp.content.iter_chunked(chunk_size)
        limit = self._limit if capped else None
        return _capped(self.headers, chunks, limit, self._request)


class AiohttpTransport:
    """The default transport: one aiohttp ``ClientSession``, created lazily in the loop.

    Pass ``session=`` to use a session of your own; it is then never closed here.
    Redirects are never followed (a 3xx comes back as a response), so credentials are
    never forwarded to another origin.

    ``proxy="http://user:password@host:port"`` sends every request through that proxy;
    without it, ``trust_env=True`` (the default) takes ``HTTPS_PROXY`` / ``HTTP_PROXY``
    from the environment, read once here, for the hosts ``NO_PROXY`` does not name, and
    ``trust_env=False`` ignores them. A proxy that refuses, or cannot be reached, raises
    ``ProxyError``. (The environment's ``.netrc`` is never read.)
    """

    enforces_timeout = True
    """Each exchange ends at ``Request.timeout`` (connect, sending and reading the body
    included), so the pipeline need not start a second timer: a ``send``'s total is cut
    by one timer shared by every send in flight, a ``stream``'s by aiohttp's own."""

    def __init__(
        self,
        *,
        session: aiohttp.ClientSession | None = None,
        limit: int = 100,
        limit_per_host: int = 0,
        keepalive_timeout: float = 15.0,
        max_body_size: int = DEFAULT_MAX_BODY,
        ssl: Any = True,
        proxy: str | yarl.URL | None = None,
        trust_env: bool = True,
    ) -> None:
        if max_body_size <= 0:
            raise ValueError("max_body_size must be positive")
        self._proxies = Proxies.configure(proxy, trust_env)
        self._session = session
        self._owns_session = session is None
        self._limit = limit
        self._limit_per_host = limit_per_host
        self._keepalive_timeout = keepalive_timeout
        self._ssl = ssl
        self.max_body_size = max_body_size
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timeouts: dict[tuple[float | None, float | None], aiohttp.ClientTimeout] = {}
        self._last_timeout = _DEFAULT_TIMEOUT
        self._last_client_timeout = _untimed(_DEFAULT_TIMEOUT)
        self._cutoffs = Cutoffs()

    def __repr__(self) -> str:
        return f"<AiohttpTransport limit={self._limit} owns_session={self._owns_session}>"

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise TransportError("transport is closed")
        loop = self._loop
        if self._session is not None and self._owns_session and loop and loop.is_closed():
            # Used again after its event loop ended (a second asyncio.run()): the old
            # session's connections died with that loop; start fresh in this one.
            abandon(self._session)
            self._session = None
        if self._session is None:
            self._loop = asyncio.get_running_loop()
            connector = aiohttp.TCPConnector(
                limit=self._limit,
                limit_per_host=self._limit_per_host,
                keepalive_timeout=self._keepalive_timeout,
                ssl=self._ssl,
            )
            # Requests always carry the client's own User-Agent, so no skip_auto_headers:
            # aiohttp takes a slower path for every request when that is set.
            self._session = aiohttp.ClientSession(connector=connector, trust_env=False)
        elif loop is None:
            self._loop = asyncio.get_running_loop()  # the caller's session: its loop is this one
        return self._session

    def _send_timeout(self, timeout: Timeout) -> aiohttp.ClientTimeout:
        """aiohttp's limits for a ``send``: connect and read only (``total`` is a cut).

        Kept by those two: attempts bounded by a call's deadline differ in ``total`` only.
        """
        if timeout is self._last_timeout:  # calls mostly share the client's one Timeout
            return self._last_client_timeout
        key = (timeout.connect, timeout.read)
        cached = self._timeouts.get(key)
        if cached is None:
            if len(self._timeouts) >= 256:
                self._timeouts.clear()
            cached = self._timeouts[key] = _untimed(timeout)
        self._last_timeout, self._last_client_timeout = timeout, cached
        return cached

    def _open(
        self, request: Request, timeout: aiohttp.ClientTimeout, loop: asyncio.AbstractEventLoop
    ) -> Any:
        """Start ``request`` on the session (``loop``: the running one); never redirects.

        A header aiohttp would refuse is refused here first, as ``LocalProtocolError``:
        aiohttp's own refusal is a bare ValueError from deep inside its writer.
        """
        _check_headers(request)
        session = self._session
        if session is None or self._closed or self._loop is not loop:
            session = self._get_session()
        if self._proxies is not None:
            route = self._proxies.route(request.url)
            if route is not None:
                headers: Mapping[str, str] = request.headers
                if route.headers and request.url.scheme == "http":
                    # Forwarded as is, so the request itself carries the credentials
                    # (aiohttp puts proxy_headers on a CONNECT only).
                    headers = {**request.headers, **route.headers}
                return session.request(
                    request.method,
                    request.url,
                    headers=headers,
                    data=request.content,
                    timeout=timeout,
                    allow_redirects=False,
                    proxy=route.url,
                    proxy_headers=route.headers,
                )
        return session.request(
            request.method,
            request.url,
            headers=request.headers,
            data=request.content,
            timeout=timeout,
            allow_redirects=False,
        )

    async def send(self, request: Request) -> Response:
        """Send ``request``; every aiohttp failure comes back as a redacted TransportError.

        ``Request.timeout.total`` is enforced by one timer shared by every send in
        flight (``cutoff.Cutoffs``), not by a timer of aiohttp's per request.
        """
        timeout = request.timeout or _DEFAULT_TIMEOUT
        loop = running_loop(self._loop)
        cut = None if timeout.total is None else self._cutoffs.arm(timeout.total, loop)
        try:
            # Awaited directly rather than through ``async with``: one layer less per call.
            resp = await self._open(request, self._send_timeout(timeout), loop)
            try:
                if resp.status == 407 and self._proxies is not None:
                    self._refused_by_proxy(request, resp)
                headers = resp.headers
                length = _declared_length(headers)
                if length is not None and length <= self.max_body_size:
                    content = await resp.read()  # one read of a body of known, allowed size
                else:
                    chunks = _capped(headers, resp.content.iter_any(), self.max_body_size, request)
                    content = b"".join([chunk async for chunk in chunks])
            finally:
                resp.release()
            response = Response(resp.status, headers, content)
        except BaseException as exc:
            instead = _raised_instead(
                self._cutoffs, cut, exc, request, timeout.total, _wrap_error, self._route
            )
            if instead is None:
                raise
            raise instead from None
        if cut is not None:
            self._cutoffs.disarm(cut)
        return response

    def _route(self, request: Request) -> Route | None:
        """The proxy ``request`` goes through (None: direct)."""
        return None if self._proxies is None else self._proxies.route(request.url)

    def _refused_by_proxy(self, request: Request, resp: aiohttp.ClientResponse) -> None:
        """A 407 to a proxied request is the proxy's (a service never sends one)."""
        route = self._route(request)
        if route is not None:
            raise proxy_refused(route, request, resp.status, resp.reason or "")

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[StreamResponse]:
        """Open ``request`` and yield the response with its body unread."""
        t = request.timeout or _DEFAULT_TIMEOUT
        timeout = aiohttp.ClientTimeout(total=t.total, sock_connect=t.connect, sock_read=t.read)
        try:
            resp = await self._open(request, timeout, running_loop(self._loop))
        except TransportError:
            raise
        except Exception as exc:
            raise _wrap_error(exc, request, self._route(request)) from None
        try:
            if resp.status == 407 and self._proxies is not None:
                self._refused_by_proxy(request, resp)
            yield _AiohttpStream(resp, self.max_body_size, request)
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _wrap_error(exc, request, self._route(request)) from None
        finally:
            resp.release()

    async def aclose(self) -> None:
        """Close the session if this transport created it."""
        self._closed = True
        if self._session is not None and self._owns_session:
            if self._loop is not None and self._loop.is_closed():
                abandon(self._session)  # its loop is gone: close the sockets directly
            else:
                await self._session.close()
        self._session = None


_DEFAULT_TIMEOUT = Timeout()
"""The limits of a request that carries none."""


def _untimed(timeout: Timeout) -> aiohttp.ClientTimeout:
    """``timeout`` for aiohttp without ``total``: a send's total is a ``Cutoffs`` cut."""
    return aiohttp.ClientTimeout(total=None, sock_connect=timeout.connect, sock_read=timeout.read)


def _timed_out(request: Request, seconds: float | None) -> RequestTimeout:
    """The error of a send cut off at its ``Request.timeout.total``."""
    where = f"{request.method} {redact_url(request.url)}"
    return RequestTimeout(f"timeout on {where} after {seconds:g}s", request=request)


def _raised_instead(
    cutoffs: Cutoffs,
    cut: Cut | None,
    exc: BaseException,
    request: Request,
    total: float | None,
    wrap: Callable[[BaseException, Request, Route | None], TransportError],
    route: Callable[[Request], Route | None],
    foreign: type[BaseException] | tuple[type[BaseException], ...] = Exception,
) -> BaseException | None:
    """What a send (or stream) that raised ``exc`` raises instead, both transports' rule:
    the timeout when its cut (at ``total`` seconds) fired, the cancellation being the
    cut's; the transport's ``wrap`` of a ``foreign`` (the HTTP library's) failure, through
    its proxy ``route``; None for ``exc`` itself (ours, a cancellation, the caller's own)."""
    if cutoffs.disarm(cut):
        return _timed_out(request, total)
    if isinstance(exc, TransportError) or not isinstance(exc, foreign):
        return None
    return wrap(exc, request, route(request))


_CONNECT_REASONS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.ETIMEDOUT: "connection timed out",
    errno.ENETUNREACH: "network is unreachable",
    errno.EHOSTUNREACH: "host is unreachable",
}


def _connect_reason(exc: aiohttp.ClientError) -> str:
    """Why a connection could not be opened, in a few plain words (no aiohttp repr)."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return "TLS certificate not trusted"
    if isinstance(exc, aiohttp.ClientSSLError):
        return "TLS handshake failed"
    os_error = getattr(exc, "os_error", None)
    if isinstance(exc, aiohttp.ClientConnectorDNSError) or isinstance(os_error, socket.gaierror):
        detail = getattr(os_error, "strerror", None)
        return f"host not found ({detail})" if detail else "host not found"
    if isinstance(os_error, OSError):
        if os_error.errno in _CONNECT_REASONS:
            return _CONNECT_REASONS[os_error.errno]
        # Every address of the host refused (e.g. localhost's IPv6 and IPv4): asyncio
        # raises one OSError "Multiple exceptions: [Errno 111] ..., [Errno 111] ...".
        text = str(os_error)
        if os_error.errno is None and 0 < text.count("[Errno ") == text.count(
            f"[Errno {errno.ECONNREFUSED}]"
        ):
            return "connection refused"
        if os_error.strerror:
            return os_error.strerror[:1].lower() + os_error.strerror[1:]
    return redact_text(str(os_error or exc))


def _wrap_error(exc: BaseException, request: Request, route: Route | None = None) -> TransportError:
    """Turn an aiohttp/OS error into ours, with URLs and headers redacted.

    ``route``: the proxy the request went through, if any (its failures are ``ProxyError``).
    """
    where = f"{request.method} {redact_url(request.url)}"
    detail = redact_text(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, aiohttp.ClientHttpProxyError):  # a CONNECT answered other than 2xx
        return proxy_refused(route, request, exc.status, exc.message)
    if isinstance(exc, aiohttp.ClientProxyConnectionError) and route is not None:
        return proxy_unreachable(route, request, _connect_reason(exc))
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return ConnectTimeout(f"connect timeout on {where}", request=request)
    if isinstance(exc, asyncio.TimeoutError):
        return RequestTimeout(f"timeout on {where}", request=request)
    if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ClientSSLError):
        origin = redact_url(request.url.origin())
        reason = _connect_reason(exc)
        return ConnectError(
            f"cannot connect to {origin}: {reason} ({request.method} {request.url.path})",
            request=request,
        )
    if isinstance(exc, aiohttp.ClientError | OSError):
        return ConnectionLostError(f"connection lost during {where}: {detail}", request=request)
    if isinstance(exc, ValueError | TypeError):
        # aiohttp refuses, before writing a byte, a header holding a control character
        # (ValueError) or not a string (TypeError): never sent, and never worth a retry.
        bad = header_problem(request.headers)
        if bad is not None:
            return _refused(request, bad)
    return TransportError(f"{where} failed: {detail}", request=request)


def _check_headers(request: Request) -> None:
    """Raise ``LocalProtocolError`` unless aiohttp would send ``request.headers``.

    ``SendableHeaders`` (the pipeline's, checked once when merged) are not scanned again.
    """
    headers = request.headers
    if type(headers) is not SendableHeaders:
        bad = header_problem(headers)
        if bad is not None:
            raise _refused(request, bad)


def _refused(request: Request, header: str) -> LocalProtocolError:
    """The error for a request refused before sending; names the header, never its value."""
    return LocalProtocolError(
        f"{request.method} {redact_url(request.url)} was refused before sending: header"
        f" {header!r:.60} is not a string or holds a control character (CR, LF, NUL or"
        " another)",
        request=request,
    )


Handler = Callable[[Request], "Response | Awaitable[Response]"]


class _MockStream:
    __slots__ = ("content", "headers", "limit", "request", "status")

    def __init__(self, response: Response, limit: int, request: Request) -> None:
        self.status = response.status
        self.headers = response.headers
        self.content = response.content
        self.limit = limit
        self.request = request

    def iter_chunks(self, chunk_size: int, *, capped: bool = True) -> AsyncIterator[bytes]:
        limit = self.limit if capped else None
        return _capped(self.headers, self._chunks(chunk_size), limit, self.request)

    async def _chunks(self, chunk_size: int) -> AsyncIterator[bytes]:
        for start in range(0, len(self.content), chunk_size):
            yield self.content[start : start + chunk_size]


class MockTransport:
    """A transport that calls ``handler(request)`` (sync or async) instead of the network.

    Every request is recorded in ``requests``. A handler may raise a TransportError to
    simulate network failures. A body over ``max_body_size`` raises
    ``ResponseTooLargeError`` as ``AiohttpTransport`` does (streams: when capped).
    """

    def __init__(self, handler: Handler, *, max_body_size: int = DEFAULT_MAX_BODY) -> None:
        if max_body_size <= 0:
            raise ValueError("max_body_size must be positive")
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
        _check_headers(request)  # as aiohttp refuses
        self.requests.append(request)
        result = self.handler(request)
        if inspect.isawaitable(result):
            result = await result
        assert isinstance(result, Response), "MockTransport handler must return a Response"
        return result if result.request is not None else attrs.evolve(result, request=request)

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[StreamResponse]:
        """Answer like ``send`` and yield the body in chunks."""
        response = await self._answer(request)
        yield _MockStream(response, self.max_body_size, request)

    async def aclose(self) -> None:
        """Mark the transport closed."""
        self.closed = True
