"""What comes back from the service: decoded bodies, API errors, and a reply's metadata.

``Decoder`` is how a 2xx answer becomes what a call returns, the one interface of every
endpoint (``decode_json`` reads the body, integers kept exact; the converter builds the
model). ``api_error`` is the ``APIError`` of a non-2xx answer with every secret redacted
from its body, and ``Reply`` a call's data with the status and headers of the response
that carried it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

import orjson
import yarl
from multidict import CIMultiDict, CIMultiDictProxy

from .._core.exact_json import has_long_number, loads_exact, too_deep
from .._transports.base import Response, StreamResponse
from ..converter import structure
from ..errors import APIError, RateLimitError, ResponseDecodeError, error_class_for
from ..models import RateLimit
from ..redact import hide_secrets, redact_text, redact_url, redact_value
from ..retry import server_wait
from .ratelimit import parse_rate_limit

__all__ = ["JSON", "Decoder", "Reply", "ResponseMeta", "api_error", "decode_json", "read_exactly"]

T = TypeVar("T")

REPLIES: ContextVar[list[tuple[str, Reply[Any]]] | None] = ContextVar(
    "svc_async_replies", default=None
)
"""Where the calls of this task hand their replies, by operation, while someone listens
(``Client.with_raw_response``); None: nobody does."""


class ResponseMeta:
    """The metadata of the response that carried a call's data: status and headers.

    ``date`` is the server's ``Date`` header; ``rate_limit`` its ``x-ratelimit-*``
    headers, parsed on first use.
    """

    __slots__ = ("_rate", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str]) -> None:
        self.status = status
        self.headers = headers
        self._rate: RateLimit | bool | None = False

    def __repr__(self) -> str:
        return f"<ResponseMeta {self.status} date={self.date!r}>"

    @property
    def date(self) -> str | None:
        """The server's ``Date`` header (its clock), if any."""
        return self.headers.get("Date")

    @property
    def rate_limit(self) -> RateLimit | None:
        """The ``x-ratelimit-*`` headers of this response, if any."""
        if self._rate is False:
            self._rate = parse_rate_limit(self.headers)
        return self._rate  # type: ignore[return-value]


class Reply(Generic[T]):
    """A call's decoded data with what the response that carried it said.

    ``data`` is what the call returns without the raw response (the model);
    ``status`` and ``headers`` are the final response's; ``rate_limit`` its
    ``x-ratelimit-*`` headers, parsed on first use; ``attempts`` how many attempts the
    call made (logins not counted); ``elapsed`` its seconds from start to answer;
    ``request_id`` the id it was sent with (the server's own if it gave one). ``status``
    and ``headers`` are None when no single response carried the data (an ambiguous
    create settled by a search).
    """

    __slots__ = ("_meta", "attempts", "data", "elapsed", "headers", "request_id", "status")

    def __init__(
        self,
        data: T,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        *,
        attempts: int = 1,
        elapsed: float = 0.0,
        request_id: str | None = None,
    ) -> None:
        self.data = data
        self.status = status
        self.headers = headers
        self.attempts = attempts
        self.elapsed = elapsed
        self.request_id = request_id
        self._meta: ResponseMeta | None = None

    def __repr__(self) -> str:
        return f"<Reply status={self.status} request_id={self.request_id!r}>"

    @property
    def meta(self) -> ResponseMeta | None:
        """The response's metadata (status, ``Date``, rate limit), made on first use."""
        if self._meta is None and self.status is not None and self.headers is not None:
            self._meta = ResponseMeta(self.status, self.headers)
        return self._meta

    @property
    def rate_limit(self) -> RateLimit | None:
        """This response's ``x-ratelimit-*`` headers (None: it had none, or no response)."""
        meta = self.meta
        return None if meta is None else meta.rate_limit


def decode_json(response: Response) -> Any:
    """The default decoder: the body as JSON (None when empty), integers kept exact."""
    content = response.content
    if not content:
        return None
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        snippet = redact_text(" ".join(response.text[:80].split()))
        raise ResponseDecodeError(
            f"HTTP {response.status} body is not valid JSON ({exc.msg}): {snippet!r}",
            status=response.status,
        ) from None
    if has_long_number(content):
        return read_exactly(content, data, response.status)
    return data


def read_exactly(content: bytes, data: Any, status: int | None) -> Any:
    """JSON ``content`` read again with every integer exact (``data``: orjson's reading).

    For a body ``has_long_number`` flags: orjson reads integers beyond 64 bits as
    floats. A body nested too deeply raises ``ResponseDecodeError``; one the standard
    library refuses (not UTF-8, or a quirk orjson accepts) keeps orjson's reading.
    """
    if too_deep(content):
        raise ResponseDecodeError(
            f"HTTP {status} body is nested too deeply to decode exactly", status=status
        )
    try:
        return loads_exact(content)
    except ValueError:
        return data


class Decoder(Generic[T]):
    """How a call's 2xx answer becomes what the call returns: one interface, every endpoint.

    Two steps. ``read`` turns the body into JSON: a failure there is a bad read (a cut,
    a garbled body), retried like one when the call is safe to repeat. ``build`` turns
    that JSON into ``model`` (None: the JSON as it is): a failure there is the document's
    own, raised at once with its JSON path. A decoder that ``streams`` is handed the 2xx
    answer unread instead (``read_stream``: entries structured in slices as they arrive,
    a download written to disk), when the transport can stream; ``build`` finishes it.
    """

    __slots__ = ("model",)

    streams = False
    """Whether ``read_stream`` takes the 2xx answer unread (on a streaming transport)."""

    def __init__(self, model: type[T] | None = None) -> None:
        self.model = model

    read = staticmethod(decode_json)
    """The complete 2xx response's data: its body as JSON (``decode_json`` itself, which
    saves a frame on every call)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {getattr(self.model, '__name__', self.model)}>"

    async def read_stream(self, stream: StreamResponse) -> Any:
        """The data of a 2xx answer handed over unread (for a decoder that ``streams``)."""
        raise NotImplementedError(f"{type(self).__name__} does not stream")

    def build(self, data: Any, status: int) -> T:
        """What the call returns of ``data``: ``model`` structured from it, or the data."""
        return data if self.model is None else structure(data, self.model, status=status)


JSON: Decoder[Any] = Decoder()
"""The decoder of a call that returns the JSON itself (``Client.request``, logins)."""


def api_error(
    response: Response,
    method: str,
    url: yarl.URL,
    secrets: Iterable[str],
    *,
    as_rate_limit: bool = False,
    wall: float | None = None,
) -> APIError:
    """The APIError for a non-2xx answer, with every secret redacted from its body and
    from any header that echoes one back (a server may, under any name)."""
    secrets = tuple(secrets)
    body: Any
    try:
        body = orjson.loads(response.content) if response.content else None
    except orjson.JSONDecodeError:
        body = response.text[:2000]
    body = redact_value(body, secrets)
    cls = RateLimitError if as_rate_limit else error_class_for(response.status)
    headers = _unechoed(response.headers, secrets)
    error = cls(response.status, headers=headers, body=body, method=method, url=redact_url(url))
    if isinstance(error, RateLimitError):
        error.retry_after = server_wait(response.status, response.headers, wall)
    return error


def _unechoed(headers: Mapping[str, str], secrets: tuple[str, ...]) -> Mapping[str, str]:
    """``headers`` as they came, but for a value that holds one of the client's
    ``secrets``: that secret is hidden in it (the rest of the value, a link's query
    included, is left as it came, for the caller to read)."""
    shown = [(name, hide_secrets(str(value), secrets)) for name, value in headers.items()]
    if all(text == value for (_, text), value in zip(shown, headers.values(), strict=True)):
        return headers
    return CIMultiDictProxy(CIMultiDict(shown))
