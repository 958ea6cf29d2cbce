"""The aiohttp adapter of a ``WebhookReceiver``: routes, an application, the handler.

The handler hands ``receive`` the request's parts, its body streamed
(``request.content``), so a body that arrives too slowly is answered 408 while it is
still coming; aiohttp's ``client_max_size`` plays no part (the receiver's cap holds in
your own application too). ``RedactedAccessLogger`` keeps the secret, which rides in the
query string, out of aiohttp's access log.
"""

from __future__ import annotations

from typing import Any, cast

import yarl
from aiohttp import web
from aiohttp.web_log import AccessLogger
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from ..redact import redact_url
from .core import MAX_BODY, NOT_POST, Answer, Receiving, RequestView

__all__ = ["RedactedAccessLogger", "app", "handle", "routes"]


def routes(receiver: Receiving, path: str) -> list[web.RouteDef]:
    """Route definitions to add to an app: one POST route at ``path``."""
    if not path.startswith("/"):
        raise ValueError("path must start with '/'")
    receiver.warn_if_open()

    async def handler(request: web.Request) -> web.Response:
        return await handle(receiver, request)

    return [web.post(path, handler)]


def app(receiver: Receiving, path: str) -> web.Application:
    """An application serving only the receiver: it takes the fleet's deliveries from
    startup and drains the receiver on shutdown."""
    application = web.Application(client_max_size=MAX_BODY)
    application.add_routes(routes(receiver, path))

    async def join(_: web.Application) -> None:
        receiver.start()

    async def drain(_: web.Application) -> None:
        await receiver.aclose()

    application.on_startup.append(join)
    application.on_shutdown.append(drain)
    return application


async def handle(receiver: Receiving, request: web.Request) -> web.Response:
    """Answer one request: ``receive`` with its body streamed, its query and headers."""
    if request.method != "POST":
        return response(NOT_POST)
    body = request.content.iter_any()
    view = RequestView(
        method=request.method, path=request.path, query=request.query, headers=request.headers
    )
    answer = await receiver.receive(body, request.query, request.headers, request=view)
    return response(answer)


def response(answer: Answer) -> web.Response:
    """The aiohttp response of an ``Answer`` (closing the connection when it asks to)."""
    out = web.Response(status=answer.status, headers=answer.headers, body=answer.body or None)
    if answer.close:
        out.force_close()
    return out


class RedactedAccessLogger(AccessLogger):
    """aiohttp's access log with every query value hidden: the webhook secret rides in
    the query string. Pass it as ``web.AppRunner(app, access_log_class=...)`` or
    ``web.run_app(app, access_log_class=...)``; the format options are aiohttp's."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        if request.rel_url.raw_query_string:
            request = cast("BaseRequest", _RedactedRequest(request))
        super().log(request, response, time)


class _RedactedRequest:
    """A request as the access log sees it: the same, but its URL's query values hidden."""

    __slots__ = ("_request", "rel_url")

    def __init__(self, request: BaseRequest) -> None:
        self._request = request
        self.rel_url = yarl.URL(redact_url(request.rel_url), encoded=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)

    @property
    def path_qs(self) -> str:
        return self.rel_url.path_qs

    @property
    def raw_path(self) -> str:
        return self.rel_url.raw_path_qs

    @property
    def query_string(self) -> str:
        return self.rel_url.query_string
