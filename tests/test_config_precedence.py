"""What the caller passes wins over the environment; hosts are never mixed from both.

Every combination of ``base_url`` and ``account_url`` (each passed, from the environment,
or absent) and of credentials (``token``/``auth`` passed, or from the environment) is
checked, and where a client results, a call with an API key shows where the login (with
the key secret) and the API call really go.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp import web

from svc_async import ApiKeyAuth, BearerAuth, Client, MockTransport, Request, json_response
from svc_async.auth import LOGIN_PATH

from .conftest import load, serve_app

PASSED_BASE, PASSED_ACCOUNT = "https://verify.passed", "https://account.passed"
ENV_BASE, ENV_ACCOUNT = "https://verify.env", "https://account.env"
ENV = ("SVC_BASE_URL", "SVC_ACCOUNT_URL", "SVC_API_TOKEN", "SVC_API_KEY_ID", "SVC_API_KEY_SECRET")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def _handler(request: Request) -> Any:
    if request.url.path == LOGIN_PATH:
        return json_response({"accessToken": "access", "refreshToken": "refresh"})
    return json_response(load("get-verification-job.response.json"))


# base, account: "passed" (the env var is set too, to a stale value), "env", or "absent".
# Expected (base, account), or the start of the ValueError's message.
HOSTS: list[tuple[str, str, tuple[str, str] | str]] = [
    ("passed", "passed", (PASSED_BASE, PASSED_ACCOUNT)),
    ("passed", "env", (PASSED_BASE, PASSED_BASE)),  # the stale SVC_ACCOUNT_URL is ignored
    ("passed", "absent", (PASSED_BASE, PASSED_BASE)),
    ("env", "passed", "account_url was passed without base_url"),
    ("env", "env", (ENV_BASE, ENV_ACCOUNT)),
    ("env", "absent", (ENV_BASE, ENV_BASE)),
    ("absent", "passed", "account_url was passed without base_url"),
    ("absent", "env", "base_url is required"),
    ("absent", "absent", "base_url is required"),
]


@pytest.mark.parametrize("credentials", ["token", "auth", "env token", "env key"])
@pytest.mark.parametrize(("base", "account", "expected"), HOSTS)
async def test_every_combination_of_hosts_and_credentials(
    monkeypatch: pytest.MonkeyPatch,
    base: str,
    account: str,
    expected: tuple[str, str] | str,
    credentials: str,
) -> None:
    kwargs: dict[str, Any] = {}
    if base == "passed":
        kwargs["base_url"] = PASSED_BASE
        monkeypatch.setenv("SVC_BASE_URL", "https://verify.stale")
    elif base == "env":
        monkeypatch.setenv("SVC_BASE_URL", ENV_BASE)
    if account == "passed":
        kwargs["account_url"] = PASSED_ACCOUNT
        monkeypatch.setenv("SVC_ACCOUNT_URL", "https://account.stale")
    elif account == "env":
        monkeypatch.setenv("SVC_ACCOUNT_URL", ENV_ACCOUNT)
    # Stale credentials in the environment too: what is passed must win over them.
    monkeypatch.setenv("SVC_API_KEY_ID", "env-kid")
    monkeypatch.setenv("SVC_API_KEY_SECRET", "env-key-secret")
    if credentials == "token":
        monkeypatch.setenv("SVC_API_TOKEN", "env-token")
        kwargs["token"] = "passed-token"
    elif credentials == "auth":
        monkeypatch.setenv("SVC_API_TOKEN", "env-token")
        kwargs["auth"] = ApiKeyAuth("passed-kid", "passed-key-secret")
    elif credentials == "env token":
        monkeypatch.setenv("SVC_API_TOKEN", "env-token")
    transport = MockTransport(_handler)
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=expected):
            Client(transport=transport, **kwargs)
        return
    async with Client(transport=transport, **kwargs) as svc:
        assert (svc.base_url, svc.account_url) == expected
        await svc.jobs.get(7)
    hosts = {str(r.url.origin()) for r in transport.requests}
    assert hosts <= set(expected)  # nothing went to a host neither passed nor configured
    logins = [r for r in transport.requests if r.url.path == LOGIN_PATH]
    api = [r for r in transport.requests if r.url.path != LOGIN_PATH]
    assert [str(r.url.origin()) for r in api] == [expected[0]]
    assert all(str(r.url.origin()) == expected[1] for r in logins)
    if credentials == "token":
        assert not logins
        assert api[0].headers["Authorization"] == "Bearer passed-token"
    elif credentials == "auth":
        assert [r.json()["key"] for r in logins] == ["passed-kid"]
    elif credentials == "env token":
        assert not logins
        assert api[0].headers["Authorization"] == "Bearer env-token"
    else:
        assert [r.json()["key"] for r in logins] == ["env-kid"]


def test_an_explicit_empty_value_is_refused_not_replaced_by_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SVC_BASE_URL", ENV_BASE)
    monkeypatch.setenv("SVC_API_TOKEN", "env-token")
    with pytest.raises(ValueError, match="token must be a non-empty string"):
        Client(PASSED_BASE, token="")
    with pytest.raises(ValueError, match="base_url must be an absolute"):
        Client("", token="t")


def test_token_and_auth_together_are_refused() -> None:
    with pytest.raises(ValueError, match="either token= or auth="):
        Client(PASSED_BASE, token="t", auth=BearerAuth("u"))


def test_an_ignored_account_host_from_the_environment_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("SVC_ACCOUNT_URL", "https://account.stale")
    caplog.set_level(logging.WARNING, logger="svc_async")
    Client(PASSED_BASE, token="t")
    (record,) = [r for r in caplog.records if "SVC_ACCOUNT_URL" in r.getMessage()]
    assert "ignored" in record.getMessage()
    caplog.clear()
    monkeypatch.setenv("SVC_ACCOUNT_URL", PASSED_BASE + "/")  # the same host: nothing to say
    Client(PASSED_BASE, token="t")
    assert not caplog.records


async def test_a_stale_account_host_never_sees_the_key_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two real loopback servers: the one passed in code, and a stale one in the env.
    seen: dict[str, list[str]] = {"passed": [], "stale": []}

    def app(name: str) -> web.Application:
        async def answer(request: web.Request) -> web.Response:
            seen[name].append(f"{request.path} {await request.text()}")
            if request.path == LOGIN_PATH:
                return web.json_response({"accessToken": "access"})
            return web.json_response(load("get-verification-job.response.json"))

        application = web.Application()
        application.router.add_route("*", "/{tail:.*}", answer)
        return application

    async with serve_app(app("passed")) as passed, serve_app(app("stale")) as stale:
        monkeypatch.setenv("SVC_ACCOUNT_URL", stale)
        auth = ApiKeyAuth("kid", "the-key-secret")
        async with Client(passed, auth=auth) as svc:
            await svc.jobs.get(7)
    assert seen["stale"] == []
    assert any(LOGIN_PATH in line and "the-key-secret" in line for line in seen["passed"])


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, (ENV_BASE, ENV_ACCOUNT)),
        ({"base_url": PASSED_BASE}, (PASSED_BASE, PASSED_BASE)),
        ({"account_url": PASSED_ACCOUNT}, (ENV_BASE, PASSED_ACCOUNT)),
        ({"base_url": PASSED_BASE, "account_url": PASSED_ACCOUNT}, (PASSED_BASE, PASSED_ACCOUNT)),
    ],
)
def test_the_cli_flags_each_fall_back_to_their_own_variable(
    monkeypatch: pytest.MonkeyPatch, flags: dict[str, str], expected: tuple[str, str]
) -> None:
    import argparse

    from svc_async.cli import make_client

    monkeypatch.setenv("SVC_BASE_URL", ENV_BASE)
    monkeypatch.setenv("SVC_ACCOUNT_URL", ENV_ACCOUNT)
    args = argparse.Namespace(
        base_url=None, account_url=None, token="t", api_key_id=None, api_key_secret=None
    )
    for name, value in flags.items():
        setattr(args, name, value)
    client = make_client(args)
    assert (client.base_url, client.account_url) == expected
