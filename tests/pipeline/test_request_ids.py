"""A request id on every call, against a real loopback server: the same on each attempt of
a call, another for the next call, the server's own when it names one, on every error,
in the DEBUG line and on the span."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from aiohttp import web

from svc_async import Client, ConnectError, ServerError
from svc_async.testing import FakeService

from ..conftest import serve_app
from ..redis_server import free_port

ID = re.compile(r"^[0-9a-f]{12}-[0-9]+$")


def _app(seen: list[str], answers: list[tuple[int, dict[str, str]]]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        seen.append(request.headers.get("X-Request-Id", ""))
        status, headers = answers.pop(0) if answers else (200, {})
        return web.json_response([], status=status, headers=headers)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


async def test_every_attempt_of_a_call_carries_its_id_and_the_next_call_another(
    no_backoff: Any,
) -> None:
    seen: list[str] = []
    async with (
        serve_app(_app(seen, [(503, {}), (200, {})])) as url,
        Client(url, token="t") as svc,
    ):
        await svc.seasons.list()  # a 503, then a 200: two attempts
        await svc.seasons.list()
    first, retried, second = seen
    assert ID.match(first) and first == retried and second != first


async def test_the_servers_own_id_wins_on_an_error(no_backoff: Any) -> None:
    seen: list[str] = []
    answers = [(500, {"X-Request-Id": "srv-123"})] * 5
    async with serve_app(_app(seen, answers)) as url, Client(url, token="t") as svc:
        with pytest.raises(ServerError) as info:
            await svc.seasons.list()
    assert info.value.request_id == "srv-123"
    assert len(set(seen)) == 1 and ID.match(seen[0])  # what the SDK sent, every attempt


async def test_an_error_without_an_answer_carries_the_id_sent(no_backoff: Any) -> None:
    async with Client(f"http://127.0.0.1:{free_port()}", token="t") as svc:
        with pytest.raises(ConnectError) as info:
            await svc.seasons.list(timeout=2)
    assert info.value.request_id is not None and ID.match(info.value.request_id)


async def test_the_debug_line_names_the_id(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "svc_async._pipeline.run")
    async with FakeService(seed=1) as fake, fake.serve() as url:
        async with Client(url, token=FakeService.DEFAULT_TOKEN) as svc:
            await svc.seasons.list()
    (line,) = [r.getMessage() for r in caplog.records if "-> 200" in r.getMessage()]
    assert re.search(r"\(request [0-9a-f]{12}-[0-9]+\)$", line), line


async def test_the_span_carries_the_id() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen: list[str] = []
    async with serve_app(_app(seen, [])) as url, Client(url, token="t", tracing=provider) as svc:
        await svc.seasons.list()
    (span,) = exporter.get_finished_spans()
    assert span.attributes is not None and span.attributes["svc_async.request_id"] == seen[0]
