"""A header value no transport can send is refused when given, and at send time is "not sent".

CR, LF, NUL (any control character but tab) in a token, user agent, ``HeaderAuth`` name or
value or API key raises ``ValueError`` at construction, without quoting the value. One
that slips through (a custom ``Auth``, a login answer) ends as ``LocalProtocolError``
(never sent): no retry, no request on the wire, and on ``jobs.create`` no ambiguity.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any

import pytest
from aiohttp import web

from svc_async import (
    AmbiguousCreateError,
    ApiKeyAuth,
    BearerAuth,
    Client,
    HeaderAuth,
    LocalProtocolError,
    MockTransport,
    ResponseDecodeError,
    RetryPolicy,
    TransportError,
    json_response,
)
from svc_async._core.headers import SendableHeaders, header_problem
from svc_async.auth import AuthFlow

from ..conftest import load, serve_app
from ..test_examples import example_request

SECRET = "s3cr3t-value"
BAD = [f"{SECRET}\r\nX-Evil: 1", f"{SECRET}\n", f"{SECRET}\x00", f"\r{SECRET}", f"{SECRET}\x7f"]
POLICY = RetryPolicy(attempts=4, wait_initial=0.001, wait_max=0.002)


def _no_secret(exc: BaseException) -> None:
    assert SECRET not in str(exc)
    assert SECRET not in repr(exc)


@pytest.mark.parametrize("bad", BAD, ids=repr)
@pytest.mark.parametrize(
    "make",
    [
        lambda bad: BearerAuth(bad),
        lambda bad: Client("https://v.example", token=bad),
        lambda bad: HeaderAuth("X-Api-Key", bad),
        lambda bad: ApiKeyAuth("kid", bad),
        lambda bad: ApiKeyAuth(bad, "secret"),
        lambda bad: Client("https://v.example", token="t", user_agent=bad),
    ],
    ids=["BearerAuth", "Client(token=)", "HeaderAuth value", "ApiKeyAuth secret", "key_id", "UA"],
)
def test_a_value_no_header_can_carry_is_refused_when_given(make: Any, bad: str) -> None:
    with pytest.raises(ValueError, match="control character") as info:
        make(bad)
    _no_secret(info.value)


@pytest.mark.parametrize("name", ["X-Key\r\n", "X Key", "X:Key", "X-Key\x00", "Ключ"])
def test_a_header_name_must_be_an_http_token(name: str) -> None:
    with pytest.raises(ValueError, match="header name"):
        HeaderAuth(name, "value")


@pytest.mark.parametrize(
    ("name", "value"),
    [("SVC_API_TOKEN", f"{SECRET}\n"), ("SVC_API_KEY_SECRET", f"{SECRET}\r")],
)
def test_a_bad_credential_from_the_environment_is_refused_and_named(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    for var in ("SVC_API_TOKEN", "SVC_API_KEY_ID", "SVC_API_KEY_SECRET"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SVC_API_KEY_ID", "kid")
    monkeypatch.setenv("SVC_API_KEY_SECRET", "ok")
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match="environment") as info:
        Client("https://v.example")
    _no_secret(info.value)


def test_a_tab_is_allowed_as_http_allows_it() -> None:
    HeaderAuth("X-Api-Key", "a\tb")
    BearerAuth("a\tb")


class _SmugglingAuth:
    """A custom Auth whose header value no transport can send; counts its uses."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._headers = headers
        self.uses = 0

    def secrets(self) -> tuple[str, ...]:
        return (SECRET,)

    def headers(self) -> Mapping[str, str]:
        self.uses += 1
        return self._headers

    async def flow(self, rejected: Mapping[str, str] | None = None) -> AuthFlow:
        return
        yield


def _counting_app() -> tuple[web.Application, collections.Counter[str]]:
    hits: collections.Counter[str] = collections.Counter()

    async def answer(request: web.Request) -> web.Response:
        hits[request.path] += 1
        if request.path.endswith("/login"):
            return web.json_response({"accessToken": f"{SECRET}\r\nX-Evil: 1"})
        return web.json_response(load("get-verification-job.response.json"))

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    return app, hits


SMUGGLED = [
    {"Authorization": f"Bearer {SECRET}\r\nX-Evil: 1"},
    {"X-Api-Key": f"{SECRET}\x00"},
    {"X-Api-Key\n": SECRET},
    {"X-Evil:1\tX-Api-Key": SECRET},
    {"X Api Key": SECRET},
]


@pytest.mark.parametrize(
    "headers", SMUGGLED, ids=["CRLF value", "NUL value", "LF name", "colon name", "space name"]
)
@pytest.mark.parametrize("call", ["get", "create"])
async def test_a_header_refused_at_send_time_is_certainly_not_sent_and_not_retried(
    headers: Mapping[str, str], call: str
) -> None:
    app, hits = _counting_app()
    auth = _SmugglingAuth(headers)
    async with serve_app(app) as url, Client(url, auth=auth, retry=POLICY) as svc:
        with pytest.raises(LocalProtocolError) as info:
            if call == "get":
                await svc.jobs.get(7)
            else:
                await svc.jobs.create(example_request())
    error = info.value
    assert not isinstance(error, AmbiguousCreateError)
    assert isinstance(error, TransportError) and isinstance(error, ValueError)
    assert error.maybe_sent is False
    assert "refused before sending" in str(error)
    _no_secret(error)
    assert sum(hits.values()) == 0  # nothing reached the server
    assert auth.uses == 1  # one attempt: the same request would be refused again


async def test_mock_transport_refuses_what_aiohttp_refuses() -> None:
    transport = MockTransport(lambda r: json_response([]))
    auth = _SmugglingAuth(SMUGGLED[0])
    async with Client("https://v.example", auth=auth, transport=transport, retry=POLICY) as svc:
        with pytest.raises(LocalProtocolError):
            await svc.seasons.list()
    assert transport.requests == []


async def test_a_login_answer_whose_token_cannot_be_sent_is_a_decode_error() -> None:
    app, hits = _counting_app()
    auth = ApiKeyAuth("kid", "key-secret")
    async with serve_app(app) as url, Client(url, auth=auth, retry=POLICY) as svc:
        with pytest.raises(ResponseDecodeError, match="accessToken") as info:
            await svc.jobs.get(7)
    _no_secret(info.value)
    assert hits == {"/api/auth/api-key/login": 1}  # one login, no API call


@pytest.mark.parametrize("wait", ["wait", "wait_many"])
async def test_waiting_for_a_job_does_not_poll_again_after_a_local_refusal(wait: str) -> None:
    transport = MockTransport(lambda r: json_response([]))
    auth = _SmugglingAuth(SMUGGLED[0])
    async with Client("https://v.example", auth=auth, transport=transport, retry=POLICY) as svc:
        with pytest.raises(LocalProtocolError):
            if wait == "wait":
                await svc.jobs.wait(7, timeout=5)
            else:
                _ = [job async for job in svc.jobs.wait_many([7, 8], timeout=5)]
    assert auth.uses == 1
    assert transport.requests == []


async def test_the_clients_headers_are_checked_once_not_on_every_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The merged headers are checked once per credentials and vouched for
    # (SendableHeaders): the transport does not scan them again on every request. A
    # call's own headers it does scan.
    scanned: list[Mapping[str, str]] = []

    def spy(headers: Mapping[str, str]) -> str | None:
        scanned.append(headers)
        return header_problem(headers)

    monkeypatch.setattr("svc_async._pipeline.run.header_problem", spy)
    monkeypatch.setattr("svc_async._transports.base.header_problem", spy)
    transport = MockTransport(lambda r: json_response(load("get-verification-job.response.json")))
    async with Client("https://v.example", token="t", transport=transport) as svc:
        for _ in range(3):
            await svc.jobs.get(7)
        assert len(scanned) == 1  # the merge, none of the three requests
        assert {type(request.headers) for request in transport.requests} == {SendableHeaders}
        await svc.jobs.get(7, extra_headers={"X-Trace": "on"})
    assert len(scanned) == 2  # a call with headers of its own: the transport scanned them
    last = transport.requests[-1].headers
    assert type(last) is not SendableHeaders and last["X-Trace"] == "on"


async def test_a_custom_auths_bad_header_is_never_vouched_for() -> None:
    transport = MockTransport(lambda r: json_response([]))
    auth = _SmugglingAuth(SMUGGLED[1])
    async with Client("https://v.example", auth=auth, transport=transport, retry=POLICY) as svc:
        with pytest.raises(LocalProtocolError, match="'X-Api-Key'"):
            await svc.seasons.list()
        assert svc._shared.env.merged  # merged, found unsendable: left to the transport
        assert all(type(h) is not SendableHeaders for _, h in svc._shared.env.merged.values())
    assert transport.requests == []
