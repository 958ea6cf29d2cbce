"""What an integrator shapes, against a real loopback server: event hooks that observe (and
whose failures are logged, never break a call), headers and query of their own (checked,
never over authentication), and the proxy settings of the default transport."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from aiohttp import web

from svc_async import AiohttpTransport, Client, HeaderAuth, LocalProtocolError, Request, Response
from svc_async.hooks import RetryEvent

from .conftest import serve_app


def _app(seen: list[web.Request], statuses: list[int]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        seen.append(request)
        status = statuses.pop(0) if statuses else 200
        return web.json_response([] if status == 200 else {"e": "t0ps3cret"}, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


async def test_hooks_hear_requests_responses_and_retries_redacted(no_backoff: Any) -> None:
    heard: list[tuple[str, Any]] = []
    async_heard: list[int] = []

    async def on_response_async(response: Response) -> None:
        async_heard.append(response.status)

    hooks = {
        "request": [lambda r: heard.append(("request", r))],
        "response": [lambda r: heard.append(("response", r)), on_response_async],
        "retry": [lambda e: heard.append(("retry", e))],
    }
    seen: list[web.Request] = []
    async with serve_app(_app(seen, [503])) as url:
        async with Client(url, token="t0ps3cret", event_hooks=hooks) as svc:
            assert await svc.seasons.list() == []
            await asyncio.sleep(0)  # the async hook runs beside the call
    kinds = [kind for kind, _ in heard]
    assert kinds == ["request", "response", "retry", "request", "response"]
    request = heard[0][1]
    assert isinstance(request, Request)
    assert request.headers["Authorization"] == "[REDACTED]"  # as the logs show it
    assert request.headers["X-Request-Id"] == seen[0].headers["X-Request-Id"]
    first = heard[1][1]
    assert first.status == 503 and b"t0ps3cret" not in first.content
    retry = heard[2][1]
    assert isinstance(retry, RetryEvent)
    assert (retry.operation, retry.attempt, retry.reason) == ("seasons.list", 2, "HTTP 503")
    assert async_heard == [503, 200]


async def test_a_hook_that_raises_is_logged_and_the_call_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: Any) -> None:
        raise RuntimeError("hook bug")

    seen: list[web.Request] = []
    async with serve_app(_app(seen, [])) as url:
        hooks = {"request": [broken], "response": [broken]}
        async with Client(url, token="t", event_hooks=hooks) as svc:
            with caplog.at_level(logging.WARNING, "svc_async.hooks"):
                assert await svc.seasons.list() == []
    failures = [r for r in caplog.records if r.name == "svc_async.hooks"]
    assert len(failures) == 2 and all(r.exc_info for r in failures)


def test_hooks_are_checked_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="unknown event hook"):
        Client("https://v.example", token="t", event_hooks={"reqest": []})
    with pytest.raises(TypeError, match="callable"):
        Client("https://v.example", token="t", event_hooks={"request": ["nope"]})


async def test_headers_and_query_of_your_own_reach_the_server() -> None:
    seen: list[web.Request] = []
    async with serve_app(_app(seen, [])) as url:
        async with Client(url, token="t", headers={"X-Tenant": "a"}) as svc:
            await svc.seasons.list()
            view = svc.with_options(headers={"X-Team": "b"})
            await view.orgs.list(extra_headers={"X-Trace": "c"}, extra_query={"debug": "1"})
            await svc.events.list(extra_query={"x": "y"})
    first, second, third = seen
    assert first.headers["X-Tenant"] == "a" and "X-Team" not in first.headers
    assert (second.headers["X-Tenant"], second.headers["X-Team"], second.headers["X-Trace"]) == (
        "a",
        "b",
        "c",
    )
    assert second.query["debug"] == "1" and third.query["x"] == "y"
    assert "X-Team" not in third.headers  # the view's headers stay the view's
    assert all(r.headers["Authorization"] == "Bearer t" for r in seen)


async def test_headers_of_your_own_are_checked_and_never_override_authentication() -> None:
    with pytest.raises(ValueError, match="Authorization"):
        Client("https://v.example", token="t", headers={"Authorization": "Bearer other"})
    with pytest.raises(ValueError, match=r"(?i)x-api-key"):
        Client("https://v.example", auth=HeaderAuth("X-Api-Key", "k"), headers={"x-api-key": "o"})
    with pytest.raises(ValueError):
        Client("https://v.example", token="t", headers={"X-Evil": "a\r\nInjected: 1"})
    sent: list[Request] = []

    async def never(request: Request) -> Response:
        sent.append(request)
        raise AssertionError("nothing may be sent")

    from svc_async import MockTransport

    async with Client("https://v.example", token="t", transport=MockTransport(never)) as svc:
        with pytest.raises(ValueError, match=r"(?i)authorization"):
            await svc.seasons.list(extra_headers={"authorization": "Bearer x"})  # any case
        with pytest.raises((ValueError, LocalProtocolError)):
            await svc.seasons.list(extra_headers={"X-A": "1\n2"})
        with pytest.raises(ValueError):
            await svc.seasons.list(extra_query={"q": "a\nb"})
        with pytest.raises(ValueError):
            svc.with_options(headers={"X-Request-Id": "mine"})
    assert sent == []


async def test_proxy_settings_go_to_the_default_transport() -> None:
    async with Client("https://v.example", token="t", proxy="http://127.0.0.1:3128") as svc:
        assert isinstance(svc.transport, AiohttpTransport)
        route = svc.transport._route(Request("GET", svc._url("api", "/x"), {}))
        assert route is not None and "127.0.0.1:3128" in str(route.url)
    with pytest.raises(ValueError, match="proxy= applies to the default transport"):
        Client("https://v.example", token="t", transport=AiohttpTransport(), proxy="http://p:1")
    with pytest.raises(TypeError, match="trust_env"):
        Client("https://v.example", token="t", trust_env="no")  # type: ignore[arg-type]
