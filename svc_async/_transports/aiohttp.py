"""``AiohttpTransport``, the default: one aiohttp ``ClientSession``, and aiohttp's failures
worded as the SDK's ``TransportError`` subclasses.

It routes proxies itself (``proxy.py``) and keeps the session's ``trust_env`` off: see
``proxy.py`` for what aiohttp's own reading of the environment gets wrong.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import yarl

from .._core.compat import abandon
from .._core.headers import header_problem
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
    declared_length,
    failed,
    header_refused,
    timed_out,
    unsendable,
)
from .cutoff import Cut, Cutoffs
from .proxy import Proxies, Route, proxy_refused, proxy_unreachable

__all__ = ["AiohttpTransport"]


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
    included), so the pipeline need not start a second timer: the total of every
    ``send`` and ``stream`` is cut by one timer shared by all in flight (``Cutoffs``)."""

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
        check_settings(
            max_body_size, keepalive_timeout, trust_env, limit=limit, limit_per_host=limit_per_host
        )
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
        """aiohttp's limits for an exchange: connect and read only (``total`` is a cut).

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
        self, request: Request, timeout: Timeout, loop: asyncio.AbstractEventLoop
    ) -> Awaitable[aiohttp.ClientResponse]:
        """Start ``request`` on the session (``loop``: the running one); never redirects.

        A header aiohttp would refuse is refused here first, as ``LocalProtocolError``:
        aiohttp's own refusal is a bare ValueError from deep inside its writer.
        """
        check_headers(request)
        session = self._session
        if session is None or self._closed or self._loop is not loop:
            session = self._get_session()
        limits = self._send_timeout(timeout)
        route = None if self._proxies is None else self._proxies.route(request.url)
        headers: Mapping[str, str] = request.headers
        proxy = proxy_headers = None
        if route is not None:
            proxy, proxy_headers = route.url, route.headers
            if proxy_headers and request.url.scheme == "http":
                # Forwarded as is, so the request itself carries the credentials
                # (aiohttp puts proxy_headers on a CONNECT only).
                headers = {**request.headers, **proxy_headers}
        return session.request(
            request.method,
            request.url,
            headers=headers,
            data=request.content,
            timeout=limits,
            allow_redirects=False,
            proxy=proxy,
            proxy_headers=proxy_headers,
        )

    async def send(self, request: Request) -> Response:
        """Send ``request``; every aiohttp failure comes back as a redacted TransportError.

        ``Request.timeout.total`` is enforced by one timer shared by every send in
        flight (``cutoff.Cutoffs``), not by a timer of aiohttp's per request.
        """
        async with _Exchange(self._cutoffs, self._open, self._route, request, Exception) as resp:
            headers = resp.headers
            length = declared_length(headers)
            if length is not None and length <= self.max_body_size:
                content = await resp.read()  # one read of a body of known, allowed size
            else:
                chunks = capped_chunks(
                    headers, resp.content.iter_any(), self.max_body_size, request
                )
                content = b"".join([chunk async for chunk in chunks])
        return Response(resp.status, headers, content)

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[StreamResponse]:
        """Open ``request`` and yield the response with its body unread.

        The total limit runs until the block ends, reading the body included, cut by the
        same timer as a ``send``'s.
        """
        async with _Exchange(self._cutoffs, self._open, self._route, request, _BODY_ERRORS) as resp:
            read = resp.content.iter_chunked
            yield CappedStream(resp.status, resp.headers, read, self.max_body_size, request)

    def _route(self, request: Request) -> Route | None:
        """The proxy ``request`` goes through (None: direct)."""
        return None if self._proxies is None else self._proxies.route(request.url)

    async def aclose(self) -> None:
        """Close the session if this transport created it."""
        self._closed = True
        if self._session is not None and self._owns_session:
            if self._loop is not None and self._loop.is_closed():
                abandon(self._session)  # its loop is gone: close the sockets directly
            else:
                await self._session.close()
        self._session = None


class _Exchange:
    """One exchange of ``send`` or ``stream``: open, hand the response over, release it;
    cut off at the total limit by the transport's ``cutoffs``. Before the response opens
    every failure is worded as ours; once open, only a ``foreign`` one (aiohttp's):
    anything else raised inside the block is the caller's.

    A class, not an ``asynccontextmanager``: the generator, the loop's hooks for it and
    contextlib's wrapper cost 12,300 instructions of a small call's 451,300 (2.7 %,
    ``bench_instructions``, 2026-12-04).
    """

    __slots__ = (
        "_cut",
        "_cutoffs",
        "_foreign",
        "_open",
        "_request",
        "_response",
        "_route",
        "_total",
    )

    _cut: Cut | None
    _response: aiohttp.ClientResponse
    _total: float | None

    def __init__(
        self,
        cutoffs: Cutoffs,
        opener: _Open,
        route: Callable[[Request], Route | None],
        request: Request,
        foreign: type[BaseException] | tuple[type[BaseException], ...],
    ) -> None:
        self._cutoffs = cutoffs
        self._open = opener
        self._route = route
        self._request = request
        self._foreign = foreign

    async def __aenter__(self) -> aiohttp.ClientResponse:
        request = self._request
        timeout = request.timeout or _DEFAULT_TIMEOUT
        loop = asyncio.get_running_loop()
        self._total = total = timeout.total
        self._cut = None if total is None else self._cutoffs.arm(total, loop)
        try:
            self._response = resp = await self._open(request, timeout, loop)
            if resp.status == 407 and (route := self._route(request)) is not None:
                resp.release()  # a proxy's refusal: a service never sends a 407
                raise proxy_refused(route, request, resp.status, resp.reason or "")
        except BaseException as exc:
            instead = self._instead(exc, Exception)
            if instead is None:
                raise
            raise instead from None
        return resp

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        raised = exc
        try:
            self._response.release()
        except BaseException as late:
            raised = exc or late
        if raised is None:
            self._cutoffs.disarm(self._cut)
            return
        instead = self._instead(raised, self._foreign)
        if instead is not None:
            raise instead from None
        if raised is not exc:
            raise raised

    def _instead(
        self, exc: BaseException, foreign: type[BaseException] | tuple[type[BaseException], ...]
    ) -> BaseException | None:
        """What the exchange raises in place of ``exc`` (None: ``exc`` itself): the timeout
        when its cut fired and the cancellation is the cut's, aiohttp's ``foreign`` failure
        worded as ours; the cut is disarmed either way."""
        request = self._request
        if self._cutoffs.disarm(self._cut):
            return timed_out(request, self._total)
        if isinstance(exc, TransportError) or not isinstance(exc, foreign):
            return None
        return _wrap_error(exc, request, self._route(request))


_Open = Callable[[Request, Timeout, asyncio.AbstractEventLoop], Awaitable[aiohttp.ClientResponse]]
"""The transport's ``_open``: start a request on its session."""

_DEFAULT_TIMEOUT = Timeout()
"""The limits of a request that carries none."""

_BODY_ERRORS = (TimeoutError, aiohttp.ClientError)
"""aiohttp's failures while a stream's body is read."""


def _untimed(timeout: Timeout) -> aiohttp.ClientTimeout:
    """``timeout`` for aiohttp without ``total``: an exchange's total is a ``Cutoffs`` cut."""
    return aiohttp.ClientTimeout(total=None, sock_connect=timeout.connect, sock_read=timeout.read)


def _connect_reason(exc: aiohttp.ClientConnectorError) -> str:
    """Why a connection could not be opened, in a few plain words (no aiohttp repr)."""
    os_error = exc.os_error
    if isinstance(exc, aiohttp.ClientConnectorDNSError) and not isinstance(
        os_error, socket.gaierror
    ):
        detail = os_error.strerror  # aiodns's failure, or "DNS lookup failed"
        return f"host not found ({detail})" if detail else "host not found"
    # ``exc`` is an OSError too: an ``ssl.SSLError`` for aiohttp's TLS failures.
    return connect_reason([exc, os_error]) or redact_text(str(os_error or exc))


def _wrap_error(exc: BaseException, request: Request, route: Route | None = None) -> TransportError:
    """Turn an aiohttp/OS error into ours, with URLs and headers redacted.

    ``route``: the proxy the request went through, if any (its failures are ``ProxyError``).
    """
    refused = unsendable(request)
    if refused is not None:
        return refused
    if isinstance(exc, aiohttp.ClientHttpProxyError):  # a CONNECT answered other than 2xx
        return proxy_refused(route, request, exc.status, exc.message)
    if isinstance(exc, aiohttp.ClientProxyConnectionError) and route is not None:
        return proxy_unreachable(route, request, _connect_reason(exc))
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return connect_timeout(request)
    if isinstance(exc, asyncio.TimeoutError):
        return timed_out(request)
    if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ClientSSLError):
        return cannot_connect(request, _connect_reason(exc))
    if isinstance(exc, aiohttp.ClientError | OSError):
        return connection_lost(request, exc)
    if isinstance(exc, ValueError | TypeError):
        # aiohttp refuses, before writing a byte, a header holding a control character
        # (ValueError) or not a string (TypeError): never sent, and never worth a retry.
        bad = header_problem(request.headers)
        if bad is not None:
            return header_refused(request, bad)
    return failed(request, exc)
