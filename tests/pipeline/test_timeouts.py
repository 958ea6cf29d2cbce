"""One meaning of ``timeout``: it bounds the whole call; ``attempt_timeout`` each exchange.

Time runs on looptime's virtual loop clock: a 3 s handler under a 0.5 s deadline takes
milliseconds of real time, and the figures mean the same on a loaded machine.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import attrs
import pytest

from svc_async import (
    ApiKeyAuth,
    CallOptions,
    Client,
    JobWaitTimeout,
    MockTransport,
    PollPolicy,
    Request,
    RequestTimeout,
    Response,
    RetryPolicy,
    Timeout,
    json_response,
)
from svc_async._pipeline.run import Call
from svc_async.errors import ServerError
from svc_async.resources._base import Send, SendFields

from ..conftest import serve_app

pytestmark = pytest.mark.looptime

URL = "https://v.example"
JOB = {"id": 7, "name": "n", "status": "Matching", "tags": []}
NO_WAIT = RetryPolicy(wait_initial=0.0, wait_max=0.0)


def _now() -> float:
    return asyncio.get_running_loop().time()


class _Slow:
    """Answers after ``delay`` seconds (ignoring ``Request.timeout``), ``slow`` times."""

    def __init__(self, delay: float, slow: int = 1_000_000, body: Any = None) -> None:
        self.delay = delay
        self.slow = slow
        self.body = [] if body is None else body
        self.calls = 0

    async def __call__(self, request: Request) -> Response:
        self.calls += 1
        if self.calls <= self.slow:
            await asyncio.sleep(self.delay)
        return json_response(self.body)


async def test_the_timeout_holds_when_the_transport_ignores_request_timeout() -> None:
    handler = _Slow(3.0)
    async with Client(URL, token="t", transport=MockTransport(handler)) as svc:
        start = _now()
        with pytest.raises(RequestTimeout):
            await svc.seasons.list(timeout=0.5)
        assert 0.5 <= _now() - start < 0.55
    assert handler.calls == 1  # nothing left for a second attempt


async def test_the_timeout_bounds_every_attempt_and_backoff() -> None:
    calls = 0

    def down(request: Request) -> Response:
        nonlocal calls
        calls += 1
        return Response(503)

    steady = RetryPolicy(attempts=100, wait_initial=1.0, wait_max=1.0, wait_jitter=0.0)
    async with Client(URL, token="t", transport=MockTransport(down), retry=steady) as svc:
        start = _now()
        with pytest.raises(ServerError):
            await svc.jobs.get(7, timeout=5)
        elapsed = _now() - start
    # Once per second until the next wait would end past the deadline: never 100 s.
    assert 4.0 <= elapsed <= 5.0
    assert calls == 5


async def test_the_client_default_bounds_the_whole_call() -> None:
    handler = _Slow(3.0)
    async with Client(URL, token="t", transport=MockTransport(handler), timeout=0.5) as svc:
        start = _now()
        with pytest.raises(RequestTimeout):
            await svc.with_options(retry=NO_WAIT).seasons.list()
        assert _now() - start < 0.55
        start = _now()
        with pytest.raises(RequestTimeout):
            await svc.with_options(timeout=1.0).seasons.list()
        assert 1.0 <= _now() - start < 1.05


async def test_the_documented_defaults_are_120_s_a_call_and_30_s_an_attempt() -> None:
    handler = _Slow(1000.0)
    transport = MockTransport(handler)
    async with Client(URL, token="t", transport=transport) as svc:
        start = _now()
        with pytest.raises(RequestTimeout):
            await svc.seasons.list()
        assert 120.0 <= _now() - start < 120.1
    first = transport.requests[0].timeout
    assert first is not None and (first.total, first.connect) == (30.0, 10.0)
    assert handler.calls >= 3  # attempts cut at 30 s and retried within the 120 s


async def test_attempt_timeout_limits_each_attempt_within_the_call() -> None:
    handler = _Slow(3.0, slow=1)
    transport = MockTransport(handler)
    async with Client(URL, token="t", transport=transport, retry=NO_WAIT) as svc:
        start = _now()
        assert await svc.seasons.list(attempt_timeout=0.5, timeout=10) == []
        assert 0.5 <= _now() - start < 0.55  # the first attempt cut at 0.5 s, then a retry
    assert handler.calls == 2
    assert [r.timeout.total for r in transport.requests if r.timeout] == [0.5, 0.5]


async def test_a_login_inside_a_call_ends_by_the_calls_timeout() -> None:
    async def handler(request: Request) -> Response:
        if request.url.path == "/api/auth/api-key/login":
            await asyncio.sleep(3.0)
        return json_response([])

    auth = ApiKeyAuth("kid", "secret")
    async with Client(URL, auth=auth, transport=MockTransport(handler)) as svc:
        start = _now()
        with pytest.raises(RequestTimeout):
            await svc.seasons.list(timeout=0.5)
        assert _now() - start < 0.55


async def test_each_poll_of_a_wait_gets_only_what_is_left() -> None:
    handler = _Slow(10.0, body=JOB)
    transport = MockTransport(handler)
    async with Client(URL, token="t", transport=transport) as svc:
        start = _now()
        with pytest.raises(JobWaitTimeout):
            await svc.jobs.wait(7, timeout=2.0, policy=PollPolicy(wait_initial=0.5))
        assert 2.0 <= _now() - start < 2.05
    limits = [r.timeout.total for r in transport.requests if r.timeout]
    assert limits and all(limit is not None and limit <= 2.0 for limit in limits)


def test_retry_words_are_staminas() -> None:
    assert RetryPolicy(attempts=2).attempts == 2
    with pytest.raises(TypeError, match="max_attempts"):
        RetryPolicy(max_attempts=3)  # type: ignore[call-arg]


async def test_a_timeout_object_as_timeout_is_refused_naming_attempt_timeout() -> None:
    """``timeout=`` bounds the whole call in seconds; a ``Timeout`` there (its removed
    per-attempt meaning) is a TypeError pointing at ``attempt_timeout=``, as is the
    removed ``with_options(timeout="keep")``. Nothing is sent."""
    transport = MockTransport(lambda request: json_response([]))
    limits = Timeout(total=3, connect=1, read=2)
    with pytest.raises(TypeError, match="attempt_timeout"):
        Client(URL, token="t", timeout=limits)  # type: ignore[arg-type]
    async with Client(URL, token="t", transport=transport) as svc:
        with pytest.raises(TypeError, match="attempt_timeout"):
            await svc.seasons.list(timeout=limits)  # type: ignore[typeddict-item]
        with pytest.raises(TypeError, match="attempt_timeout"):
            svc.with_options(timeout=limits)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="seconds"):
            svc.with_options(timeout="keep")  # type: ignore[arg-type]
        await svc.seasons.list(attempt_timeout=limits)
    assert len(transport.requests) == 1
    assert transport.requests[0].timeout == limits


@pytest.mark.parametrize("bad", [0, -1, "soon", True])
def test_bad_timeouts_are_refused_before_anything_is_sent(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="timeout"):
        Client(URL, token="t", timeout=bad)
    with pytest.raises((TypeError, ValueError), match="attempt_timeout"):
        Client(URL, token="t", attempt_timeout=bad)


def test_a_calls_options_are_declared_once() -> None:
    """The caller's ``CallOptions`` and a sub-client's ``SendFields`` are ``Call`` fields
    (host: its URL); ``Send`` takes the first whole, the second by name and the decoder
    as its own keyword."""
    options = {*CallOptions.__annotations__, *SendFields.__annotations__}
    fields = {field.name for field in attrs.fields(Call)}
    # extra_query goes into the URL, extra_headers into the call's headers
    renamed = {"host": "url", "retry": "policy", "extra_query": "url", "extra_headers": "headers"}
    assert {renamed.get(name, name) for name in options} <= fields
    assert "authenticate" in SendFields.__annotations__
    assert "decode" in fields and "decode" in Send.__call__.__annotations__
    assert set(CallOptions.__annotations__) == {
        "timeout",
        "attempt_timeout",
        "retry",
        "extra_headers",
        "extra_query",
    }
    assert "CallOptions" in Send.__call__.__annotations__["options"]
    assert "Unpack[SendFields]" in Send.__call__.__annotations__["fields"]


@pytest.mark.looptime(False)
async def test_the_aiohttp_transport_ends_a_stalled_exchange_at_the_deadline() -> None:
    """The default transport says it enforces ``Request.timeout``: check that it does."""
    from aiohttp import web

    release = asyncio.Event()

    async def stall(request: web.Request) -> web.Response:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(3.0):
                await release.wait()
        return web.json_response([])

    app = web.Application()
    app.router.add_get("/api/public/v1/season", stall)
    async with serve_app(app) as url:
        try:
            async with Client(url, token="t", retry=NO_WAIT) as svc:
                start = _now()
                with pytest.raises(RequestTimeout):
                    await svc.seasons.list(timeout=0.1)
                assert _now() - start < 1.5  # not the server's 3 s
        finally:
            release.set()


async def test_a_download_ends_by_its_timeout() -> None:
    import io

    async def slow(request: Request) -> Response:
        await asyncio.sleep(3.0)
        return Response(200, content=b"x")

    transport = MockTransport(slow)
    async with Client(URL, token="t", transport=transport) as svc:
        start = _now()
        with pytest.raises(RequestTimeout):
            await svc.download("https://files.example/a.mp3", io.BytesIO(), timeout=0.5)
        assert 0.5 <= _now() - start < 0.55
        limits = Timeout(total=None, connect=1.0, read=2.0)
        quick = MockTransport(lambda request: Response(200, content=b"x"))
    async with Client(URL, token="t", transport=quick) as svc:
        await svc.download("https://files.example/a.mp3", io.BytesIO(), attempt_timeout=limits)
    assert quick.requests[-1].timeout == limits  # each exchange


async def test_an_auth_renewal_ends_by_the_calls_timeout() -> None:
    async def handler(request: Request) -> Response:
        path = request.url.path
        if path == "/api/auth/api-key/login":
            return json_response({"accessToken": "a1", "refreshToken": "r1"})
        if path == "/api/auth/access-token/refresh":
            await asyncio.sleep(3.0)  # a refresh that hangs
            return json_response({"accessToken": "a2", "refreshToken": "r2"})
        return Response(401)  # every token is refused: the call renews

    transport = MockTransport(handler)
    async with Client(URL, auth=ApiKeyAuth("kid", "secret"), transport=transport) as svc:
        start = _now()
        with pytest.raises(RequestTimeout):
            await svc.seasons.list(timeout=0.5)
        assert _now() - start < 0.55
    assert [r.url.path for r in transport.requests][-1] == "/api/auth/access-token/refresh"


async def test_a_transport_that_enforces_request_timeout_gets_no_second_timer() -> None:
    """``enforces_timeout = True`` is the transport's promise; the pipeline then trusts it."""
    handler = _Slow(3.0)
    transport = MockTransport(handler)
    transport.enforces_timeout = True  # type: ignore[attr-defined]  # a false promise here
    async with Client(URL, token="t", transport=transport) as svc:
        start = _now()
        assert await svc.seasons.list(timeout=0.5) == []
        assert _now() - start >= 3.0
