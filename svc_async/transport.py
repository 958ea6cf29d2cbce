"""The transport contract and its implementations, re-exported from ``svc_async._transports``.

``Transport`` is two methods (``send``, ``aclose``); ``AiohttpTransport`` is the default,
``MockTransport(handler)`` answers from a function, ``HttpxTransport`` (the ``httpx``
extra) is loaded on first use.
"""

from typing import TYPE_CHECKING, Any

from ._transports.aiohttp import AiohttpTransport
from ._transports.base import (
    DEFAULT_MAX_BODY,
    Request,
    Response,
    StreamingTransport,
    StreamResponse,
    Transport,
    capped_body,
    capped_chunks,
    json_response,
)
from ._transports.mock import MockTransport
from .types import Timeout

if TYPE_CHECKING:
    from ._transports.httpx import HttpxTransport

__all__ = [
    "DEFAULT_MAX_BODY",
    "AiohttpTransport",
    "HttpxTransport",
    "MockTransport",
    "Request",
    "Response",
    "StreamResponse",
    "StreamingTransport",
    "Timeout",
    "Transport",
    "capped_body",
    "capped_chunks",
    "json_response",
]


def __getattr__(name: str) -> Any:
    """``HttpxTransport`` imports httpx, so it loads on first use."""
    if name == "HttpxTransport":
        from ._transports.httpx import HttpxTransport

        return HttpxTransport
    raise AttributeError(f"module 'svc_async.transport' has no attribute {name!r}")
