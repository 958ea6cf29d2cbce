"""The receiver as a WSGI application: Flask, Django on WSGI, gunicorn's sync workers, waitress.

A WSGI server calls the app from its own threads and reads the body before it does, so a
slow body is the server's to refuse; every other rule is the receiver's. The async
receiver runs on the process's one ``LoopThread`` (the one the SDK's sync recipes use; a
forked worker starts its own), and each request is handed to it and waited for.
``WebhookReceiver.close()`` drains it from sync code, e.g. in a SIGTERM handler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import IO, Any
from urllib.parse import parse_qsl

from multidict import CIMultiDict, MultiDict

from .._core.loop_thread import LoopThread
from .core import NOT_POST, TOO_LARGE, Answer, Receiving, RequestView

StartResponse = Callable[..., Any]

__all__ = ["WsgiApp"]


_PHRASES = {status.value: status.phrase for status in HTTPStatus}


class WsgiApp:
    """``receiver.wsgi()``: a WSGI callable serving the receiver through the loop thread."""

    def __init__(self, receiver: Receiving, portal: LoopThread | None = None) -> None:
        self.receiver = receiver
        self._portal = portal

    @property
    def portal(self) -> LoopThread:
        """The loop thread the receiver runs on: the process's own unless one was given."""
        return self._portal or LoopThread.for_process()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        answer = self._answer(environ)
        reason = _PHRASES.get(answer.status, "")
        headers = list(answer.headers.items())  # no Connection: hop-by-hop is the server's
        start_response(f"{answer.status} {reason}".rstrip(), headers)
        return [answer.body]

    def _answer(self, environ: dict[str, Any]) -> Answer:
        if environ.get("REQUEST_METHOD") != "POST":
            return NOT_POST
        body = _body(environ, self.receiver.max_body)
        if body is None:
            return TOO_LARGE
        query = MultiDict(parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True))
        headers = _headers(environ)
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        view = RequestView(method="POST", path=path, query=query, headers=headers)
        return self.portal.run(self.receiver.receive(body, query, headers, request=view))


def _headers(environ: dict[str, Any]) -> CIMultiDict[str]:
    headers: CIMultiDict[str] = CIMultiDict()
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            headers.add(key[5:].replace("_", "-"), value)
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            headers.add(key.replace("_", "-"), value)
    return headers


def _body(environ: dict[str, Any], limit: int) -> bytes | None:
    """The body the server read, or None when it is over ``limit`` (read no further)."""
    stream: IO[bytes] = environ["wsgi.input"]
    try:
        length = int(environ.get("CONTENT_LENGTH") or -1)
    except ValueError:
        length = -1
    if length > limit:
        return None
    body = stream.read(length) if length >= 0 else stream.read(limit + 1)
    return None if len(body) > limit else body
