"""Client configuration and lifecycle."""

from __future__ import annotations

import asyncio
import threading

import pytest

from svc_async import (
    AiohttpTransport,
    ApiKeyAuth,
    BearerAuth,
    Client,
    ClientClosedError,
    MockTransport,
    Request,
    Response,
    Timeout,
    json_response,
)
from svc_async.errors import WrongEventLoopError


def _ok(request: Request) -> Response:
    return json_response(
        [],
        headers={
            "x-ratelimit-limit": "1000",
            "x-ratelimit-remaining": "998",
            "x-ratelimit-reset": "60",
        },
    )


def test_env_vars_fill_base_url_and_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_BASE_URL", "https://verify.example/")
    monkeypatch.setenv("SVC_API_TOKEN", "env-token")
    monkeypatch.setenv("SVC_ACCOUNT_URL", "https://account.example")
    client = Client(transport=MockTransport(_ok))
    assert client.base_url == "https://verify.example"
    assert client.account_url == "https://account.example"
    assert isinstance(client._shared.env.auth, BearerAuth)


def test_env_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SVC_API_TOKEN", raising=False)
    monkeypatch.setenv("SVC_API_KEY_ID", "kid")
    monkeypatch.setenv("SVC_API_KEY_SECRET", "sec")
    client = Client("https://verify.example", transport=MockTransport(_ok))
    assert isinstance(client._shared.env.auth, ApiKeyAuth)


def test_missing_configuration_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SVC_BASE_URL", "SVC_API_TOKEN", "SVC_API_KEY_ID", "SVC_API_KEY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="base_url"):
        Client(token="t")
    with pytest.raises(ValueError, match="credentials"):
        Client("https://verify.example")
    with pytest.raises(ValueError, match="absolute"):
        Client("verify.example", token="t")
    with pytest.raises(ValueError, match="either"):
        Client("https://verify.example", token="t", auth=BearerAuth("u"))
    with pytest.raises(TypeError):
        Client("https://verify.example", token="t", transport=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Client("https://verify.example", token="t", timeout=-1)


async def test_rate_limit_from_last_response() -> None:
    async with Client("https://v.example", token="t", transport=MockTransport(_ok)) as svc:
        assert svc.rate_limit is None
        await svc.seasons.list()
        assert svc.rate_limit is not None
        assert (svc.rate_limit.limit, svc.rate_limit.remaining, svc.rate_limit.reset) == (
            1000,
            998,
            60.0,
        )


async def test_use_after_close_is_a_clear_error() -> None:
    transport = MockTransport(_ok)
    svc = Client("https://v.example", token="t", transport=transport)
    await svc.seasons.list()
    await svc.aclose()
    await svc.aclose()  # idempotent
    assert svc.closed
    with pytest.raises(ClientClosedError, match="closed"):
        await svc.seasons.list()
    assert transport.closed  # httpx's rule: a client closes the transport it was given


async def test_aclose_ends_running_calls_with_a_clear_error() -> None:
    started = asyncio.Event()

    async def slow(request: Request) -> Response:
        started.set()
        await asyncio.sleep(30)
        return _ok(request)

    svc = Client("https://v.example", token="t", transport=MockTransport(slow))
    call = asyncio.create_task(svc.seasons.list())
    await started.wait()
    await svc.aclose()
    with pytest.raises(ClientClosedError):
        await call


def test_aclose_ends_running_calls_on_the_loop_the_client_moved_to() -> None:
    """Used again under a second ``asyncio.run``, the client tracks its calls there."""
    started = asyncio.Event()

    async def slow_after_first(request: Request) -> Response:
        if len(transport.requests) > 1:  # the first call binds the first loop
            started.set()
            await asyncio.sleep(30)
        return _ok(request)

    transport = MockTransport(slow_after_first)
    svc = Client("https://v.example", token="t", transport=transport)
    asyncio.run(svc.seasons.list())

    async def on_a_new_loop() -> None:
        call = asyncio.create_task(svc.seasons.list())
        await asyncio.wait_for(started.wait(), 5)
        await svc.aclose()
        with pytest.raises(ClientClosedError):
            await asyncio.wait_for(call, 5)

    asyncio.run(on_a_new_loop())


async def test_per_call_and_client_timeouts_reach_the_transport() -> None:
    transport = MockTransport(_ok)
    async with Client("https://v.example", token="t", transport=transport, timeout=12) as svc:
        await svc.seasons.list()
        await svc.seasons.list(attempt_timeout=Timeout(total=3, connect=1, read=2))
        await svc.with_options(attempt_timeout=5).seasons.list()
        await svc.with_options(timeout=None).seasons.list()
    first, second, third, fourth = (r.timeout for r in transport.requests)
    # No attempt is given more than the call has left of its 12 s.
    assert first is not None and first.total is not None and 11 < first.total <= 12
    assert second == Timeout(total=3, connect=1, read=2)
    assert third is not None and third.total == 5
    assert fourth == Timeout(total=30, connect=10)


async def test_client_from_another_loop_says_so() -> None:
    svc = Client("https://v.example", token="t", transport=MockTransport(_ok))
    await svc.seasons.list()
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            asyncio.run(svc.seasons.list())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert len(errors) == 1 and isinstance(errors[0], WrongEventLoopError)
    await svc.aclose()


async def test_default_transport_is_created_lazily_and_closed() -> None:
    svc = Client("https://v.example", token="t")
    transport = svc.transport
    assert isinstance(transport, AiohttpTransport)
    assert transport._session is None
    await svc.aclose()
    assert transport._closed


async def test_callers_own_aiohttp_session_is_never_closed() -> None:
    import aiohttp

    async with aiohttp.ClientSession() as session:
        transport = AiohttpTransport(session=session)
        svc = Client("https://v.example", token="t", transport=transport)
        await svc.aclose()
        await transport.aclose()
        assert not session.closed
