"""What every transport shares: the Request and Response values, the protocols, one body cap.

A transport turns one ``Request`` into one ``Response`` and knows nothing of auth,
retries or models. ``aiohttp.py`` holds the default, ``httpx.py`` the second real one,
``mock.py`` one that calls a function instead of the network. What they have in common
lives here, so that each keeps the same promises in the same words: every body is read
through ``capped_chunks`` (or held whole under ``capped_body``), headers are checked by
``check_headers`` before anything is sent, and failures are worded by the error makers
below (``connect_timeout``, ``cannot_connect``, ``connection_lost`` and the rest), a
connect failure's reason by ``connect_reason``.
"""

from __future__ import annotations

import errno
import re
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

import attrs
import orjson
import yarl
from aiohttp import hdrs
from multidict import CIMultiDict, CIMultiDictProxy

from .._core.headers import TOKEN, SendableHeaders, header_problem
from ..errors import (
    ConnectError,
    ConnectionLostError,
    ConnectTimeout,
    LocalProtocolError,
    RequestTimeout,
    ResponseTooLargeError,
    TransportError,
)
from ..redact import SDK_REQUEST_HEADERS, redact_request_headers, redact_text, redact_url
from ..types import Timeout as Timeout  # re-exported: the type of Request.timeout

DEFAULT_MAX_BODY = 256 * 1024 * 1024
"""Largest API response body accepted, after decompression (bytes)."""


def _headers(value: Mapping[str, str] | None) -> CIMultiDictProxy[str]:
    """Any mapping (or None) as a read-only case-insensitive one."""
    if isinstance(value, CIMultiDictProxy):
        return value
    return CIMultiDictProxy(CIMultiDict(value or {}))


@attrs.frozen(slots=True, repr=False)
class Request:
    """One HTTP request, fully built: the only thing a transport receives.

    ``headers`` may be any mapping; it is kept as a read-only case-insensitive one.
    """

    method: str
    url: yarl.URL
    headers: CIMultiDictProxy[str] = attrs.field(default=None, converter=_headers)
    content: bytes | None = None
    timeout: Timeout | None = None

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
            "headers": redact_request_headers(self.headers),
        }


@attrs.frozen(slots=True, repr=False)
class Response:
    """One complete HTTP response with its body in memory.

    ``headers`` may be any mapping; it is kept as a read-only case-insensitive one.
    """

    status: int
    headers: CIMultiDictProxy[str] = attrs.field(default=None, converter=_headers)
    content: bytes = b""
    request: Request | None = None

    def json(self) -> Any:
        """The body decoded as JSON (raises orjson.JSONDecodeError on bad input)."""
        return orjson.loads(self.content)

    @property
    def text(self) -> str:
        """The body decoded as UTF-8, with undecodable bytes replaced."""
        return self.content.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"<Response {self.status} {len(self.content)} bytes>"


def answer_of(result: object, who: str) -> Response:
    """``result``, the answer of ``who`` (a ``MockTransport`` handler, a transport of
    one's own), as the SDK reads it: a ``Response`` with an ``int`` status and a
    ``bytes`` body, else a ``TypeError`` naming what is wrong before anything reads it."""
    if not isinstance(result, Response):
        raise TypeError(f"{who} must return a Response, got {type(result).__name__}")
    status, content = result.status, result.content
    if isinstance(status, bool) or not isinstance(status, int):
        raise TypeError(f"{who} returned a Response whose status is a {type(status).__name__}")
    if not isinstance(content, bytes | bytearray):
        raise TypeError(f"{who} returned a Response whose content is a {type(content).__name__}")
    return result


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


# ------------------------------------------------------------------ settings


def check_size(max_body_size: object) -> None:
    """``max_body_size``, as every transport checks it when made: an int, positive."""
    if isinstance(max_body_size, bool) or not isinstance(max_body_size, int):
        kind = type(max_body_size).__name__
        raise TypeError(f"max_body_size must be an int (bytes), got {kind}")
    if max_body_size <= 0:
        raise ValueError("max_body_size must be positive")


def check_settings(
    max_body_size: object, keepalive_timeout: object, trust_env: object, **limits: object
) -> None:
    """The settings both real transports take, checked when one is made (``limits``: its
    counts of connections, 0 for none): a wrong type is a ``TypeError``, a wrong value a
    ``ValueError``, each naming the setting, before anything is sent."""
    check_size(max_body_size)
    for name, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must be 0 (no limit) or more")
    if isinstance(keepalive_timeout, bool) or not isinstance(keepalive_timeout, int | float):
        kind = type(keepalive_timeout).__name__
        raise TypeError(f"keepalive_timeout must be a number of seconds, got {kind}")
    if not keepalive_timeout >= 0:
        raise ValueError("keepalive_timeout must be 0 or more seconds")
    if not isinstance(trust_env, bool):
        raise TypeError(f"trust_env must be a bool, got {type(trust_env).__name__}")


# ------------------------------------------------------------------ the body cap


def declared_length(headers: Mapping[str, str]) -> int | None:
    """The body's size from Content-Length, when it is the size of what we read (None:
    not said, or not a size).

    With a Content-Encoding other than ``identity``, the transport hands over the
    decoded body and Content-Length is the encoded size: it says nothing about the bytes
    read. A value that is no count, ASCII digits only (a transport of your own need not
    parse it, as aiohttp's and httpx's do; ``int()`` also reads ``1_0``, ``+1`` and
    other scripts' digits), says nothing either. (aiohttp's names are ``istr``, looked up
    without lowering a string.)
    """
    encoding = headers.get(hdrs.CONTENT_ENCODING)
    if encoding is not None and encoding.strip().lower() != "identity":
        return None
    value = headers.get(hdrs.CONTENT_LENGTH)
    if value is None:
        return None
    value = str(value).strip()  # an int, from a transport of your own, is a count too
    return int(value) if value.isascii() and value.isdigit() else None


async def capped_chunks(
    headers: CIMultiDictProxy[str],
    chunks: AsyncIterator[bytes],
    limit: int | None,
    request: Request,
) -> AsyncIterator[bytes]:
    """``chunks`` of a body, the one place its size is checked: declared first, then as
    bytes arrive (``headers``: the response's; ``limit=None`` lifts the cap, for a
    download streamed to disk).

    Counts decoded bytes, so a compressed bomb stops at ``limit`` however small it is on
    the wire. Every transport reads its bodies through it, so a body over ``limit``
    raises the same ``ResponseTooLargeError`` from each (transports of your own and the
    fake's in-process one included).
    """
    if limit is not None:
        length = declared_length(headers)
        if length is not None and length > limit:
            raise _too_large(limit, request, length)
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if limit is not None and total > limit:
            raise _too_large(limit, request)
        yield chunk


def capped_body(content: bytes, limit: int | None, request: Request) -> bytes:
    """A body held whole, refused past ``limit`` as ``capped_chunks`` refuses it
    (``ResponseTooLargeError``, the same words); ``limit=None``: no cap."""
    if limit is not None and len(content) > limit:
        raise _too_large(limit, request, len(content))
    return content


class CappedStream:
    """The ``StreamResponse`` of the SDK's transports: ``status``, ``headers``, and the
    body as ``read(chunk_size)`` gives it, through ``capped_chunks`` at ``limit``."""

    __slots__ = ("headers", "limit", "read", "request", "status")

    def __init__(
        self,
        status: int,
        headers: CIMultiDictProxy[str],
        read: Callable[[int], AsyncIterator[bytes]],
        limit: int,
        request: Request,
    ) -> None:
        self.status = status
        self.headers = headers
        self.read = read
        self.limit = limit
        self.request = request

    def iter_chunks(self, chunk_size: int, *, capped: bool = True) -> AsyncIterator[bytes]:
        """The body in chunks of at most ``chunk_size`` bytes (see ``StreamResponse``): a
        positive int, else ``TypeError`` or ``ValueError`` before anything is read."""
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int):
            raise TypeError(f"chunk_size must be an int, got {type(chunk_size).__name__}")
        if chunk_size <= 0:
            raise ValueError("chunk_size must be positive")
        limit = self.limit if capped else None
        return capped_chunks(self.headers, self.read(chunk_size), limit, self.request)


def _too_large(limit: int, request: Request, length: int | None = None) -> ResponseTooLargeError:
    size = "response body" if length is None else f"response body of {length} bytes"
    return ResponseTooLargeError(
        f"{size} of {where(request)} exceeds max_body_size ({limit} bytes)", request=request
    )


# ------------------------------------------------------------------ headers


def check_headers(request: Request) -> None:
    """Raise ``LocalProtocolError`` unless aiohttp would send ``request.headers``.

    Every transport refuses the same headers, before anything is sent, as aiohttp's
    writer would. ``SendableHeaders`` (the pipeline's, checked once when merged) are
    not scanned again.
    """
    headers = request.headers
    if type(headers) is not SendableHeaders:
        bad = header_problem(headers)
        if bad is not None:
            raise header_refused(request, bad)


def unsendable(request: Request) -> LocalProtocolError | None:
    """The error of a request no transport sends, which the HTTP library refused: a URL
    that is not an absolute ``http://`` or ``https://`` one with a host, or a method that
    is no token (None: neither). Asked only once a send failed, so a good request pays
    nothing for it."""
    url = request.url
    if not (url.scheme in ("http", "https") and url.host):
        why = "the URL is not an absolute http:// or https:// one with a host"
    elif not isinstance(request.method, str) or TOKEN.fullmatch(request.method) is None:
        why = f"the method {request.method!r:.40} is not an HTTP method name"
    else:
        return None
    return LocalProtocolError(
        f"{where(request)} was refused before sending: {why}", request=request
    )


def header_refused(request: Request, header: str) -> LocalProtocolError:
    """The error for a request refused before sending; names the header, never its value."""
    return LocalProtocolError(
        f"{where(request)} was refused before sending: header"
        f" {header!r:.60} is not a string, is no HTTP header name or holds a control"
        " character (CR, LF, NUL or another)",
        request=request,
    )


# ------------------------------------------------------------------ failures, in one wording


def where(request: Request) -> str:
    """``request`` as every message names it: the method and the redacted URL."""
    return f"{request.method} {redact_url(request.url)}"


def connect_timeout(request: Request) -> ConnectTimeout:
    """The error of a request whose connection was not open in time."""
    return ConnectTimeout(f"connect timeout on {where(request)}", request=request)


def timed_out(request: Request, seconds: float | None = None) -> RequestTimeout:
    """The error of a request that ran out of time (cut off at ``seconds``, when given)."""
    after = "" if seconds is None else f" after {seconds:g}s"
    return RequestTimeout(f"timeout on {where(request)}{after}", request=request)


def cannot_connect(request: Request, reason: str) -> ConnectError:
    """The error of a request whose connection could not be opened, for ``reason``."""
    origin = redact_url(request.url.origin())
    return ConnectError(
        f"cannot connect to {origin}: {reason} ({request.method} {request.url.path})",
        request=request,
    )


def connection_lost(request: Request, detail: BaseException | str) -> ConnectionLostError:
    """The error of a request whose connection failed once open (``detail``: why)."""
    return ConnectionLostError(
        f"connection lost during {where(request)}: {_detail(detail, request)}", request=request
    )


def failed(request: Request, exc: BaseException) -> TransportError:
    """The error of a request that failed in a way no other error names."""
    return TransportError(f"{where(request)} failed: {_detail(exc, request)}", request=request)


def _detail(exc: BaseException | str, request: Request) -> str:
    if isinstance(exc, str):
        return exc
    return redact_text(f"{type(exc).__name__}: {exc}", secrets_of(request))


def secrets_of(request: Request) -> list[str]:
    """What of ``request`` a library's message may quote back, the server's line it could
    not parse echoing it: each header value ``redact_request_headers`` hides (and the
    credential past its scheme, ``Bearer``), and the query's values (a signed URL's)."""
    found: list[str] = []
    for name, value in request.headers.items():
        if isinstance(value, str) and name.lower() not in SDK_REQUEST_HEADERS:
            found += [value, value.partition(" ")[2]]
    found += request.url.query.values()
    return found


CONNECT_REASONS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.ETIMEDOUT: "connection timed out",
    errno.ENETUNREACH: "network is unreachable",
    errno.EHOSTUNREACH: "host is unreachable",
}
"""The plain words for the errnos a failed connect most often carries."""


def os_reason(error: OSError) -> str | None:
    """Why a connect failed, in a few plain words, from the ``OSError`` under it (None:
    it does not say): the host not found, a known errno, else its own message."""
    if isinstance(error, socket.gaierror):
        return f"host not found ({error.strerror})" if error.strerror else "host not found"
    if error.errno in CONNECT_REASONS:
        return CONNECT_REASONS[error.errno]
    if error.strerror:
        return error.strerror[:1].lower() + error.strerror[1:]
    return None


def connect_reason(errors: Sequence[OSError]) -> str | None:
    """Why a connection could not be opened, from the ``OSError``s under a library's
    failure (None: none says), the same words from both transports: a TLS failure
    (``tls_failure``), the host not found, every address refused, else the first reason
    ``os_reason`` finds."""
    reason = tls_failure(errors)
    if reason is not None:
        return reason
    for error in errors:
        if isinstance(error, socket.gaierror):
            return os_reason(error)
    if _all_refused(errors):
        return "connection refused"
    for error in errors:
        reason = os_reason(error)
        if reason is not None:
            return reason
    return None


def tls_failure(errors: Sequence[OSError]) -> str | None:
    """Why the TLS handshake failed, if one of ``errors`` says it did."""
    for error in errors:
        if isinstance(error, ssl.SSLCertVerificationError):
            return "TLS certificate not trusted"
        if isinstance(error, ssl.SSLError):
            return "TLS handshake failed"
    return None


_ERRNO = re.compile(r"\[Errno (-?\d+)\]")


def _all_refused(errors: Sequence[OSError]) -> bool:
    """Whether every address of the host refused: each errno is ECONNREFUSED, those an
    error without one names included (asyncio joins the refusals of ::1 and 127.0.0.1 in
    one OSError, "Multiple exceptions: [Errno 111] ..., [Errno 111] ...")."""
    codes: list[int] = []
    for error in errors:
        if error.errno is not None:
            codes.append(error.errno)
        else:
            codes += [int(code) for code in _ERRNO.findall(str(error))]
    return bool(codes) and all(code == errno.ECONNREFUSED for code in codes)
