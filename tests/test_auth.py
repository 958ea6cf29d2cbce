"""Auth kinds: static headers, and ApiKeyAuth's login, refresh and single flight."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from svc_async import (
    ApiKeyAuth,
    AuthenticationError,
    BearerAuth,
    Client,
    HeaderAuth,
    MockTransport,
    Request,
    Response,
    json_response,
)

API = "https://verify.example"
ACCOUNT = "https://account.example"


class _Server:
    """A tiny auth server: tokens expire on demand; refresh may be refused."""

    def __init__(self, *, refuse_refresh: bool = False) -> None:
        self.counter = itertools.count(1)
        self.valid: set[str] = set()
        self.refresh_tokens: set[str] = set()
        self.refuse_refresh = refuse_refresh
        self.logins = 0
        self.refreshes = 0
        self.failed_calls = 0

    def _pair(self) -> dict[str, str]:
        n = next(self.counter)
        access, refresh = f"access-{n}", f"refresh-{n}"
        self.valid.add(access)
        self.refresh_tokens.add(refresh)
        return {"accessToken": access, "refreshToken": refresh}

    def expire_all(self) -> None:
        self.valid.clear()

    async def __call__(self, request: Request) -> Response:
        await asyncio.sleep(0.001)
        path = request.url.path
        if path == "/api/auth/api-key/login":
            assert str(request.url).startswith(ACCOUNT)
            assert "Authorization" not in request.headers
            if request.json() != {"key": "kid", "secret": "s3cret-value"}:
                return json_response({"statusCode": 401, "error": "Unauthorized"}, status=401)
            self.logins += 1
            return json_response(self._pair())
        if path == "/api/auth/access-token/refresh":
            token = request.json()["refreshToken"]
            if self.refuse_refresh or token not in self.refresh_tokens:
                return json_response({"statusCode": 401, "error": "Unauthorized"}, status=401)
            self.refresh_tokens.discard(token)
            self.refreshes += 1
            return json_response(self._pair())
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if bearer not in self.valid:
            self.failed_calls += 1
            return json_response({"statusCode": 401, "error": "Unauthorized"}, status=401)
        return json_response([])


async def test_api_key_login_then_bearer() -> None:
    server = _Server()
    transport = MockTransport(server)
    async with Client(
        API, auth=ApiKeyAuth("kid", "s3cret-value"), account_url=ACCOUNT, transport=transport
    ) as svc:
        assert await svc.seasons.list() == []
        assert await svc.seasons.list() == []
    assert server.logins == 1
    paths = [r.url.path for r in transport.requests]
    assert paths == ["/api/auth/api-key/login", "/api/public/v1/season", "/api/public/v1/season"]
    assert transport.requests[1].headers["Authorization"] == "Bearer access-1"


async def test_expiry_during_concurrent_calls_refreshes_once() -> None:
    server = _Server()
    auth = ApiKeyAuth("kid", "s3cret-value")
    transport = MockTransport(server)
    async with Client(API, auth=auth, account_url=ACCOUNT, transport=transport) as svc:
        await svc.seasons.list()
        server.expire_all()
        results = await asyncio.gather(*(svc.seasons.list() for _ in range(50)))
    assert results == [[]] * 50
    assert server.logins == 1 and server.refreshes == 1
    assert auth.refreshes == 1


async def test_refused_refresh_falls_back_to_login() -> None:
    server = _Server(refuse_refresh=True)
    transport = MockTransport(server)
    async with Client(
        API, auth=ApiKeyAuth("kid", "s3cret-value"), account_url=ACCOUNT, transport=transport
    ) as svc:
        await svc.seasons.list()
        server.expire_all()
        await asyncio.gather(*(svc.seasons.list() for _ in range(10)))
    assert server.logins == 2 and server.refreshes == 0


async def test_bad_key_raises_authentication_error() -> None:
    transport = MockTransport(_Server())
    auth = ApiKeyAuth("kid", "wrong-secret")
    async with Client(API, auth=auth, account_url=ACCOUNT, transport=transport) as svc:
        with pytest.raises(AuthenticationError) as info:
            await svc.seasons.list()
    assert "wrong-secret" not in str(info.value)


async def test_static_token_401_is_not_replayed() -> None:
    server = _Server()
    transport = MockTransport(server)
    async with Client(API, token="nope", transport=transport) as svc:
        with pytest.raises(AuthenticationError):
            await svc.seasons.list()
    assert len(transport.requests) == 1


async def test_header_auth() -> None:
    seen: list[Any] = []

    def handler(request: Request) -> Response:
        seen.append(request.headers)
        return json_response([])

    async with Client(
        API, auth=HeaderAuth("X-Api-Key", "k-123"), transport=MockTransport(handler)
    ) as svc:
        await svc.seasons.list()
    assert seen[0]["X-Api-Key"] == "k-123" and "Authorization" not in seen[0]


def test_reprs_hide_secrets() -> None:
    auth = ApiKeyAuth("kid", "s3cret-value")
    assert "s3cret-value" not in repr(auth) and "kid" in repr(auth)
    assert "tok-abc" not in repr(BearerAuth("tok-abc"))
    assert "k-123" not in repr(HeaderAuth("X-Api-Key", "k-123"))
    client = Client(API, token="tok-abc", transport=MockTransport(lambda r: json_response([])))
    assert "tok-abc" not in repr(client)


@pytest.mark.parametrize(
    ("args", "exc"), [(("", "s"), ValueError), (("k", ""), ValueError), ((1, "s"), ValueError)]
)
def test_api_key_auth_validates(args: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc):
        ApiKeyAuth(*args)


async def test_a_cancelled_relogin_leaves_the_waiting_calls_to_log_in_again() -> None:
    """The call renewing after a 401 is cancelled in its login (its refresh refused):
    the calls that waited on that renewal with the same stale token log in themselves,
    once, rather than failing with the 401 they were waiting to get past."""
    logins, refused = 0, 0
    stale, stuck, all_refused = False, asyncio.Event(), asyncio.Event()

    async def handler(request: Request) -> Response:
        nonlocal logins, refused
        if request.url.path == "/api/auth/api-key/login":
            logins += 1
            if logins == 2:  # the first renewal: held until its call is cancelled
                stuck.set()
                await asyncio.Event().wait()
            return json_response({"accessToken": f"access-{logins}", "refreshToken": "r-1"})
        if request.url.path == "/api/auth/access-token/refresh":
            return json_response({"statusCode": 401, "error": "Unauthorized"}, status=401)
        if stale and request.headers["Authorization"] == "Bearer access-1":
            refused += 1
            if refused == 5:
                all_refused.set()
                await asyncio.sleep(0)  # the calls answered first go on first: the first renews
            await all_refused.wait()  # every call holds its 401 before any renews
            return json_response({"statusCode": 401, "error": "Unauthorized"}, status=401)
        return json_response([])

    auth = ApiKeyAuth("kid", "s3cret-value")
    async with Client(API, auth=auth, account_url=ACCOUNT, transport=MockTransport(handler)) as svc:
        await svc.seasons.list()  # logged in: access-1
        stale = True
        calls = [asyncio.create_task(svc.seasons.list(timeout=5)) for _ in range(5)]
        await stuck.wait()  # the first call renews; the others wait for it
        await asyncio.sleep(0.01)
        calls[0].cancel()
        assert await asyncio.gather(*calls[1:]) == [[]] * 4
        with pytest.raises(asyncio.CancelledError):
            await calls[0]
    assert logins == 3
    assert auth.headers() == {"Authorization": "Bearer access-3"}


def test_concurrent_renewals_in_a_second_event_loop_share_one_login() -> None:
    """A client is used again in a new event loop (a second ``asyncio.run``): calls that
    meet an expired token together there share one renewal, as in the first loop,
    instead of failing with "bound to a different event loop"."""
    server = _Server()
    svc = Client(
        API,
        auth=ApiKeyAuth("kid", "s3cret-value"),
        account_url=ACCOUNT,
        transport=MockTransport(server),
    )

    async def three_calls() -> list[Any]:
        return await asyncio.gather(*(svc.seasons.list() for _ in range(3)))

    assert asyncio.run(three_calls()) == [[]] * 3
    server.expire_all()
    assert asyncio.run(three_calls()) == [[]] * 3
    assert (server.logins, server.refreshes) == (1, 1)
    asyncio.run(svc.aclose())


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_header_auth_value_is_refused_as_an_empty_token_is(value: str) -> None:
    """An unset variable read as "" must not go out as an empty credential."""
    with pytest.raises(ValueError, match="value must be a non-empty string"):
        HeaderAuth("X-Api-Key", value)
    with pytest.raises(ValueError, match="token must be a non-empty string"):
        BearerAuth(value)
