"""The fake's HTTP vocabulary: requests in, outcomes out, and the service's error bodies.

Plain values shared by the core, the resources and the two adapters (aiohttp app and
in-process transport); nothing here knows about state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import orjson

from .faults import FaultDecision

JSON = dict[str, Any]

__all__ = [
    "HTTPError",
    "Outcome",
    "Pending",
    "RawRequest",
    "RecordedRequest",
    "error_body",
    "nginx_page",
    "seconds_text",
]

REASONS = {
    302: "Found",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Time-out",
}


@attrs.frozen(kw_only=True)
class RawRequest:
    """An HTTP request as the core sees it.

    ``base`` is the scheme://host it came to; ``origin`` says which of the fake's two
    origins received it: ``"api"`` (the service) or ``"files"`` (the storage host).
    """

    method: str
    path: str
    query: Mapping[str, str] = attrs.field(factory=dict)
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: bytes = b""
    base: str = "http://fake.invalid"
    origin: str = "api"


@attrs.define(kw_only=True)
class RecordedRequest:
    """One received request, kept for assertions (``Authorization`` included).

    ``json`` is the parsed body (None when empty or not JSON), ``time`` the fake clock
    at arrival, ``status`` the status answered (0 when the connection was dropped),
    ``fault`` the injected fault's name, if any, ``origin`` api or files.
    """

    method: str
    path: str
    route: str | None
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    json: Any
    time: float
    status: int | None = None
    fault: str | None = None
    origin: str = "api"


@attrs.frozen(kw_only=True)
class Outcome:
    """The core's answer. ``action``: ``respond``, ``reset`` (drop) or ``cut_body``."""

    status: int
    headers: dict[str, str]
    body: bytes
    action: str = "respond"
    stall: float = 0.0


@attrs.frozen(kw_only=True)
class Pending:
    """A request accepted by ``begin``: wait ``delay`` seconds, then call ``finish``."""

    raw: RawRequest
    record: RecordedRequest
    decision: FaultDecision
    delay: float


class HTTPError(Exception):
    """Raised by an endpoint to answer ``status`` with the service's error body."""

    def __init__(self, status: int, message: str | list[JSON]) -> None:
        super().__init__(status)
        self.status = status
        self.message = message if isinstance(message, str) else orjson.dumps(message).decode()


def error_body(status: int, message: str) -> JSON:
    """The service's error body ``{statusCode, error, message}``."""
    return {"statusCode": status, "error": REASONS.get(status, "Error"), "message": message}


def nginx_page(status: int) -> bytes:
    """The HTML error page a proxy in front of the service answers with."""
    title = f"{status} {REASONS.get(status, 'Error')}"
    return (
        f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
        f"<center><h1>{title}</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    ).encode()


def seconds_text(value: float) -> str:
    """Seconds as a header value: an integer when whole."""
    return str(int(value)) if float(value).is_integer() else str(value)
