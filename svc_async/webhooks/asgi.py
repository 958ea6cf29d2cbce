"""The receiver as an ASGI 3 application: FastAPI, Starlette, Litestar, Django, uvicorn.

A thin adapter: it turns the ASGI scope and messages into ``receive(body, query,
headers)`` and the answer back into messages. The body goes in as the stream of the
request's chunks, so the receiver's size cap and read timeouts apply as the bytes arrive
(a slow sender gets 408, a large body 413 without being read whole). Lifespan messages
are answered and shutdown drains the receiver; a mounted sub-app gets none, which is why
``WebhookReceiver.lifespan`` exists for the parent's ``lifespan=``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from multidict import CIMultiDict, MultiDict

from .core import NOT_POST, Answer, Receiving, RequestView

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

__all__ = ["AsgiApp"]


class AsgiApp:
    """``receiver.asgi()``: an ASGI 3 callable serving the receiver (http and lifespan)."""

    def __init__(self, receiver: Receiving) -> None:
        self.receiver = receiver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await _send(send, await self._answer(scope, receive))
        else:  # a websocket: not a delivery
            raise ValueError(f"the webhook receiver serves http, not {scope['type']}")

    async def _answer(self, scope: Scope, receive: Receive) -> Answer:
        if scope.get("method") != "POST":
            return NOT_POST
        query = MultiDict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), True))
        headers = CIMultiDict(
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in scope.get("headers", ())
        )
        path = scope.get("root_path", "") + scope.get("path", "")
        view = RequestView(method="POST", path=path, query=query, headers=headers)
        return await self.receiver.receive(_chunks(receive), query, headers, request=view)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.receiver.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.receiver.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _send(send: Send, answer: Answer) -> None:
    headers = [
        (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers.items()
    ]
    if answer.close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})


async def _chunks(receive: Receive) -> AsyncIterator[bytes]:
    """The request body's chunks; a sender that leaves mid-body ends it with an error."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionError("the sender went away")
        chunk = message.get("body", b"")
        if chunk:
            yield chunk
        if not message.get("more_body", False):
            return
