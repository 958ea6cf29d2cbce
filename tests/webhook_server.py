"""A webhook receiver mounted in a real framework under a real server, as a user would.

Run as ``python tests/webhook_server.py FRAMEWORK RECORD``: it binds 127.0.0.1 on a free
port, prints the port, and serves until SIGTERM. Each callback run appends a line to
RECORD (``start`` and ``end``, with the job id); job 999's callback takes 1.5 s, so a test
can send SIGTERM while it runs and see it finish.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from svc_async.webhooks import JobStatusUpdate, WebhookReceiver

SECRET = "s3cret-for-tests"
PATH = "/webhooks/svc"
SLOW_JOB = 999


def make_receiver(record: Path) -> WebhookReceiver:
    receiver = WebhookReceiver(SECRET, read_timeout=0.5, body_timeout=2.0)

    async def on_status(update: JobStatusUpdate) -> None:
        _note(record, "start", update)
        if update.job_id == SLOW_JOB:
            await asyncio.sleep(1.5)
        _note(record, "end", update)

    receiver.on_status_update(on_status)
    return receiver


def _note(record: Path, phase: str, update: JobStatusUpdate) -> None:
    line = {"phase": phase, "job": update.job_id, "status": str(update.status)}
    line["test"] = update.is_test
    with record.open("a") as file:
        file.write(json.dumps(line) + "\n")


# ------------------------------------------------------------------ the apps, per framework


def fastapi_app(receiver: WebhookReceiver) -> Any:
    from fastapi import FastAPI

    app = FastAPI(lifespan=receiver.lifespan)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"ok": "yes"}

    app.mount(PATH, receiver.asgi())
    return app


def starlette_app(receiver: WebhookReceiver) -> Any:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    return Starlette(routes=[Mount(PATH, app=receiver.asgi())], lifespan=receiver.lifespan)


def litestar_app(receiver: WebhookReceiver) -> Any:
    from litestar import Litestar, asgi

    mounted = asgi(PATH, is_mount=True)(receiver.asgi())
    return Litestar(route_handlers=[mounted], lifespan=[receiver.lifespan])


def django_asgi_app(receiver: WebhookReceiver) -> Any:
    _configure_django()
    from django.core.asgi import get_asgi_application

    django = get_asgi_application()
    webhooks = receiver.asgi()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        # Django routes views, not ASGI apps: the receiver takes its path before Django.
        if scope["type"] == "lifespan" or scope.get("path", "").startswith(PATH):
            await webhooks(scope, receive, send)
        else:
            await django(scope, receive, send)

    return app


def django_wsgi_app(receiver: WebhookReceiver) -> Any:
    _configure_django()
    from django.core.wsgi import get_wsgi_application
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    return DispatcherMiddleware(get_wsgi_application(), {PATH: receiver.wsgi()})


def flask_app(receiver: WebhookReceiver) -> Any:
    from flask import Flask
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    app = Flask(__name__)

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"ok": "yes"}

    app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {PATH: receiver.wsgi()})  # type: ignore[method-assign]
    return app


def _configure_django() -> None:
    from django.conf import settings

    settings.configure(
        DEBUG=False,
        ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        ROOT_URLCONF=__name__,
        SECRET_KEY="tests-only",
        MIDDLEWARE=[],
    )


urlpatterns: list[Any] = []  # Django's ROOT_URLCONF: no views of its own here

APPS = {
    "fastapi": (fastapi_app, "uvicorn"),
    "starlette": (starlette_app, "hypercorn"),
    "litestar": (litestar_app, "uvicorn"),
    "django-asgi": (django_asgi_app, "uvicorn"),
    "django-wsgi": (django_wsgi_app, "waitress"),
    "flask": (flask_app, "waitress"),
}


# ------------------------------------------------------------------ the servers


def serve(framework: str, record: Path) -> None:
    build, server = APPS[framework]
    receiver = make_receiver(record)
    app = build(receiver)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(sock.getsockname()[1], flush=True)
    if server == "uvicorn":
        import uvicorn

        # uvicorn's own SIGTERM handling: stop accepting, finish requests, lifespan shutdown
        config = uvicorn.Config(app, lifespan="on", log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])
    elif server == "hypercorn":
        _hypercorn(app, sock)
    else:
        _waitress(app, sock, receiver)


def _hypercorn(app: Any, sock: socket.socket) -> None:
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.graceful_timeout = 10

    async def main() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await hypercorn_serve(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    asyncio.run(main())


def _waitress(app: Any, sock: socket.socket, receiver: WebhookReceiver) -> None:
    import waitress

    # The docs' recipe: a WSGI server has no lifespan, so drain the receiver on SIGTERM.
    def on_sigterm(signum: int, frame: Any) -> None:
        receiver.close(timeout=10)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_sigterm)
    waitress.serve(app, sockets=[sock], threads=4, _quiet=True)


if __name__ == "__main__":
    serve(sys.argv[1], Path(sys.argv[2]))
