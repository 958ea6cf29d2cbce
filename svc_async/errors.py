"""Every exception of the SDK, and the tree they form.

Everything the SDK raises on purpose derives from ``SvcError``, so ``except SvcError``
catches the SDK's failures and nothing else. Some classes also derive from a builtin
(shown in brackets) so that code written against the standard library still catches
them. The tree (a class appears under each of its SDK parents)::

    SvcError
      ClientClosedError [RuntimeError]        used after aclose() or outside async with
      WrongEventLoopError [RuntimeError]      used from another event loop
      TransportError                          no complete HTTP response (maybe_sent)
        ConnectError                          the request never left
          ConnectTimeout                      opening the connection timed out
          ProxyError                          the proxy refused it or was unreachable
        ConnectionLostError                   broke after the request may have been sent
        RequestTimeout                        a connect, read or total timeout passed
          ConnectTimeout
        ResponseTooLargeError                 body over the configured maximum
        LocalProtocolError [ValueError]       refused before sending (a bad header)
      APIError                                a non-2xx status (status, body, issues)
        RedirectError                         3xx: API calls never follow redirects
        BadRequestError                       400
        AuthenticationError                   401
        PermissionDeniedError                 403
          SignedURLExpired                    403 from a storage host: link expired
        NotFoundError                         404
        ConflictError                         409
        UnprocessableEntityError              422
        RateLimitError                        429, or a wait longer than the policy allows
        ServerError                           5xx
      ResponseDecodeError                     a 2xx body that is not JSON or not the model
      JobWaitTimeout [TimeoutError]           jobs.wait ran out of time (job = last seen)
      AmbiguousCreateError                    unknown whether a create happened (tag)
      WebhookVerificationError                a delivery without the shared secret
      WebhookPayloadError [ValueError]        a delivery body that is not a valid payload
      FleetStoreError [ConnectionError]       fleet status: the fleet's Redis unreachable

Two package-internal signals live here too because they cross modules, and never reach
the caller: ``PacingExceedsDeadline`` (the pacer to the pipeline) and ``LeafError`` (a
leaf rule to the converter).

Every ``SvcError`` pickles with its fields (``SvcError.__reduce__``), so it can cross a
process boundary (a Celery result, a ``ProcessPoolExecutor`` future) and nothing secret
travels with it: see ``SvcError.__reduce__`` for what is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import orjson
import yarl

from .redact import REDACTED, is_sensitive_header, redact_url


class SvcError(Exception):
    """Root of every error the SDK raises on purpose.

    ``request_id`` is the id of the call that failed (the ``X-Request-Id`` the SDK sent
    with each of its attempts, or the server's own when one came back), None for an
    error raised before a call started: quote it in a support ticket to join logs.
    """

    request_id: str | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the class, the message and the fields, never by calling ``__init__``
        again (it would build an ``APIError``'s message a second time, and wants the
        keyword-only fields such as ``tag``).

        Made portable and safe on the way: ``headers`` become a plain ``dict`` of ``str``
        (a repeated header joined with ", ") with the values of credential headers
        (``Set-Cookie``...) and the query values of a ``Location`` hidden; a ``request``
        becomes a redacted copy (method, URL without user info or query values, and of its
        headers only the plain ones in clear, ``User-Agent``, ``Accept``, ``X-Request-Id``
        and the like: any other value, such as a ``HeaderAuth`` credential under a name of
        your choice, is hidden; no body, no timeout); a ``job`` keeps every field but the
        query values of its links (signed URLs); a cause travels when it is an
        ``SvcError`` (made safe the same way), any other cause is dropped.
        """
        fields = {name: _portable(name, value) for name, value in vars(self).items()}
        cause = self.__cause__
        if isinstance(cause, SvcError):
            fields["__cause__"] = cause
        return (_restored, (type(self), self.args, fields))


class ClientClosedError(SvcError, RuntimeError):
    """The client was used after ``aclose()`` (or outside ``async with``)."""


class WrongEventLoopError(SvcError, RuntimeError):
    """The client was used from an event loop other than the one it was opened in."""


class TransportError(SvcError):
    """The request did not get a complete HTTP response.

    ``maybe_sent`` is False only when the request certainly never reached the server
    (DNS failure, connection refused, connect timeout): only then is a re-POST safe.
    """

    maybe_sent: bool = True

    def __init__(self, message: str, *, request: Any = None) -> None:
        super().__init__(message)
        self.request: Any = request
        """The ``transport.Request`` that failed, or None (typed ``Any``: the errors
        import nothing of the SDK, so the transport can import them)."""


class ConnectError(TransportError):
    """The connection could not be opened; the request never left."""

    maybe_sent = False


class ProxyError(ConnectError):
    """The proxy refused the request, or could not be reached: the service never saw it.

    ``status`` is the proxy's own answer (407: it wants credentials, 403: it forbids the
    destination, or any other refusal of a ``CONNECT``), None when the proxy could not
    be reached at all. ``proxy`` is the proxy's URL without its credentials.

    A refusal (``refused``: a status below 500) is never retried, as the same request
    would be refused again. A proxy that cannot be reached, or that answers a
    ``CONNECT`` with a 5xx (it could not reach the service), is retried like any
    connect error, within the call's attempts and deadline.
    """

    def __init__(
        self,
        message: str,
        *,
        request: Any = None,
        proxy: str = "",
        status: int | None = None,
    ) -> None:
        super().__init__(message, request=request)
        self.proxy = proxy
        self.status = status

    @property
    def refused(self) -> bool:
        """The proxy answered and said no (a status below 500): retrying cannot help."""
        return self.status is not None and self.status < 500


class ConnectionLostError(TransportError):
    """The connection broke after the request may have been sent (reset, cut-off body)."""


class RequestTimeout(TransportError):
    """A connect, read or total timeout passed."""


class ConnectTimeout(RequestTimeout, ConnectError):
    """Opening the connection timed out; the request never left."""

    maybe_sent = False


class ResponseTooLargeError(TransportError):
    """The response body (after decompression) exceeded the configured maximum."""


class LocalProtocolError(TransportError, ValueError):
    """The request was refused here before anything was sent, e.g. a header value with CR,
    LF or NUL. Never retried: the same request would be refused again. Never sent, so a
    create that fails this way certainly made nothing."""

    maybe_sent = False


@attrs.frozen(slots=True, kw_only=True)
class ValidationIssue:
    """One item of the service's validation error list (400 responses)."""

    code: str | None = None
    message: str | None = None
    path: list[str | int] = attrs.field(factory=list)
    expected: Any = None
    received: Any = None


class APIError(SvcError):
    """The service answered with a status other than 2xx.

    Carries ``status``, ``headers``, the decoded ``body`` (or the raw text when it was not
    JSON), and the service's ``error`` and ``message`` fields; validation failures have
    their issues parsed into ``issues``.
    """

    def __init__(
        self,
        status: int,
        *,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
        method: str = "",
        url: str = "",
    ) -> None:
        self.status = status
        self.headers: Mapping[str, str] = headers or {}
        self.body = body
        self.method = method
        self.url = url
        self.error: str | None = None
        self.message: str | None = None
        self.issues: list[ValidationIssue] = []
        if isinstance(body, dict):
            err, msg = body.get("error"), body.get("message")
            self.error = err if isinstance(err, str) else None
            if isinstance(msg, str):
                self.message = msg
                self.issues = _parse_issues(msg)
            elif isinstance(msg, list):
                self.issues = _issues_from_list(msg)
                self.message = "; ".join(i.message for i in self.issues if i.message) or None
        super().__init__(self._describe())

    def _describe(self) -> str:
        where = f" for {self.method} {self.url}" if self.method else ""
        detail = self.message or self.error
        if detail is None and isinstance(self.body, str) and self.body.strip():
            detail = _text_detail(self.body)
        return f"HTTP {self.status}{where}" + (f": {detail}" if detail else "")


_HTML_TITLE = re.compile(r"(?is)<(title|h1)[^>]*>(.*?)</\1>")


def _text_detail(body: str) -> str:
    """A short detail from a non-JSON error body: an HTML page shrinks to its title."""
    if body.lstrip().startswith("<"):
        found = _HTML_TITLE.search(body)
        return " ".join(found.group(2).split()) if found else "an HTML page"
    text = " ".join(body.split())
    return text[:120] + ("..." if len(text) > 120 else "")


class RedirectError(APIError):
    """The API answered with a redirect; API calls never follow them (credentials stay put)."""


class BadRequestError(APIError):
    """400: the service rejected the request body (see ``issues``)."""


class AuthenticationError(APIError):
    """401: missing, unknown or expired credentials."""


class PermissionDeniedError(APIError):
    """403: the account may not see this resource."""


class SignedURLExpired(PermissionDeniedError):
    """403 from a storage host: the signed link has expired; read the resource again."""


class NotFoundError(APIError):
    """404: no such resource, or not visible to this account."""


class ConflictError(APIError):
    """409."""


class UnprocessableEntityError(APIError):
    """422."""


class RateLimitError(APIError):
    """429, or a server-directed wait longer than the retry policy will sleep through.

    ``retry_after`` is the number of seconds the server asked to wait, when known.
    """

    retry_after: float | None = None


class ServerError(APIError):
    """5xx."""


_STATUS_ERRORS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def error_class_for(status: int) -> type[APIError]:
    """The APIError subclass that stands for ``status``."""
    if status in _STATUS_ERRORS:
        return _STATUS_ERRORS[status]
    if 300 <= status < 400:
        return RedirectError
    if status >= 500:
        return ServerError
    return APIError


class ResponseDecodeError(SvcError):
    """A 2xx body was not JSON, or its JSON did not fit the model.

    ``path`` names where in the document it went wrong, e.g.
    ``$[3].soundRecording.songs[0].startTime``.
    """

    def __init__(self, message: str, *, path: str = "$", status: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.status = status


class JobWaitTimeout(SvcError, TimeoutError):
    """``jobs.wait`` ran out of time; ``job`` is the last snapshot seen (or None)."""

    def __init__(self, message: str, *, job: Any = None) -> None:
        super().__init__(message)
        self.job: Any = job
        """The last ``VerificationJob`` snapshot seen, or None (typed ``Any``: the errors
        import nothing of the SDK, so the models can import them)."""


class AmbiguousCreateError(SvcError):
    """A job create failed ambiguously and the SDK could not tell whether the job exists.

    Search for ``tag`` later (``jobs.search(tags=[tag])``) to find it.
    """

    def __init__(self, message: str, *, tag: str) -> None:
        super().__init__(message)
        self.tag = tag


class WebhookVerificationError(SvcError):
    """A webhook delivery failed verification (wrong or missing shared secret)."""


class WebhookPayloadError(SvcError, ValueError):
    """A webhook body is not a valid delivery (bad JSON, missing or mistyped field)."""


def _restored(cls: type[SvcError], args: tuple[Any, ...], fields: dict[str, Any]) -> SvcError:
    """An unpickled error: ``args`` as they were, then each field set as it was."""
    error = cls.__new__(cls, *args)
    error.args = args  # an OSError subclass with an __init__ (TimeoutError) leaves them out
    for name, value in fields.items():
        setattr(error, name, value.rebuild() if isinstance(value, _Rebuild) else value)
    return error


@attrs.frozen(slots=True)
class _Rebuild:
    """A value that unpickles as ``factory(*args)``: the redacted copy of a request,
    built from its class without this module importing the transport."""

    factory: Callable[..., Any]
    args: tuple[Any, ...]

    def rebuild(self) -> Any:
        return self.factory(*self.args)


def _portable(name: str, value: Any) -> Any:
    """``value`` of the field ``name`` as it may be pickled: plain and without secrets."""
    if name == "headers" and isinstance(value, Mapping):
        return _plain_headers(value)
    if name == "request" and value is not None:
        return _redacted_request(value)
    if name == "job":
        return _without_link_secrets(value)
    return value


_LINK_HEADERS = frozenset({"location", "content-location"})
"""Response headers holding a URL: a redirect to a signed link carries its signature."""


def _plain_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Response ``headers`` as a dict of str (a repeated header joined, as HTTP combines
    it), credentials and the query values of a link hidden."""
    plain: dict[str, str] = {}
    for key, value in headers.items():
        name, item = str(key), str(value)  # a transport of your own may hand other types
        if is_sensitive_header(name):
            item = REDACTED
        elif name.lower() in _LINK_HEADERS and "?" in item:
            item = redact_url(item)
        plain[name] = f"{plain[name]}, {item}" if name in plain else item
    return plain


def _redacted_request(request: Any) -> _Rebuild | None:
    """The transport ``Request`` as its own redacted view (``describe()``) rebuilds it,
    without its body, and of its headers only the plain ones in clear; anything that
    cannot describe itself is dropped."""
    describe = getattr(request, "describe", None)
    if not callable(describe):
        return None
    view = describe()
    url = yarl.URL(view["url"], encoded=True)
    headers = {str(key): str(item) for key, item in view["headers"].items()}
    return _Rebuild(type(request), (view["method"], url, headers))


def _without_link_secrets(value: Any) -> Any:
    """A copy of a model (a job and what it holds, the JSON keys it does not model too)
    whose URLs keep no query values: a job's links to files are signed, and their
    signature is a credential."""
    if isinstance(value, str):
        return redact_url(value) if "?" in value and "://" in value else value
    if isinstance(value, list):
        return [_without_link_secrets(item) for item in value]
    if isinstance(value, dict):
        return _dict_without_link_secrets(value)
    if attrs.has(type(value)):
        changes = {}
        for field in attrs.fields(type(value)):
            item = getattr(value, field.name)
            if field.init and (isinstance(item, str | list | dict) or attrs.has(type(item))):
                changes[field.alias] = _without_link_secrets(item)
        return attrs.evolve(value, **changes)
    return value


def _dict_without_link_secrets(value: dict[str, Any]) -> dict[str, Any]:
    """JSON a model keeps as it came (its ``extra``: keys it does not model), its links
    without query values; the same mapping when it holds none."""
    items = {key: _without_link_secrets(item) for key, item in value.items()}
    if all(items[key] is item for key, item in value.items()):
        return value
    copy = type(value)(items)
    for slot in getattr(type(value), "__slots__", ()):  # ``Extra.absent``
        object.__setattr__(copy, slot, getattr(value, slot))
    return copy


class PacingExceedsDeadline(Exception):
    """The pacer would have to hold a call past its deadline; ``wait`` is what it needs.

    Package-internal: the pipeline turns it into a ``RequestTimeout`` or ``RateLimitError``.
    """

    def __init__(self, wait: float) -> None:
        super().__init__(wait)
        self.wait = wait


class LeafError(ValueError):
    """A leaf value of the wrong type; ``where`` is a path suffix below the current key.

    Package-internal: the converter turns it into a ``ResponseDecodeError`` with a path.
    """

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


def _issues_from_list(items: list[Any]) -> list[ValidationIssue]:
    issues = []
    for item in items:
        if not isinstance(item, dict):
            continue
        path = item.get("path")
        issues.append(
            ValidationIssue(
                code=item.get("code") if isinstance(item.get("code"), str) else None,
                message=item.get("message") if isinstance(item.get("message"), str) else None,
                path=[p for p in path if isinstance(p, str | int)]
                if isinstance(path, list)
                else [],
                expected=item.get("expected"),
                received=item.get("received"),
            )
        )
    return issues


def _parse_issues(message: str) -> list[ValidationIssue]:
    stripped = message.lstrip()
    if not stripped.startswith("["):
        return []
    try:
        items = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return []
    return _issues_from_list(items) if isinstance(items, list) else []


class FleetStoreError(SvcError, ConnectionError):
    """The fleet's Redis could not be reached, or refused a command (``fleet status``).

    The message names the store by its URL without a password, and Redis's own reason.
    """
