"""Secrets echoed back in an escaped form (JSON inside JSON) are hidden all the same."""

from __future__ import annotations

import json
import pickle

import pytest

from svc_async import (
    ApiKeyAuth,
    BadRequestError,
    Client,
    MockTransport,
    Request,
    Response,
    ResponseDecodeError,
    RetryPolicy,
)
from svc_async.redact import REDACTED, redact_text

# A secret a JSON encoder escapes: a quote and a backslash (every encoder), a slash
# (some write "\/") and a non-ASCII letter (an ASCII-only encoder writes "\u00e4").
SECRET = 'k3y"se\\cr/et-\u00e4'


@pytest.mark.parametrize("ascii_only", [False, True])
def test_a_secret_is_hidden_in_its_json_escaped_forms(ascii_only: bool) -> None:
    once = json.dumps({"secret": SECRET}, ensure_ascii=ascii_only)
    twice = json.dumps({"message": once}, ensure_ascii=ascii_only)
    slashed = once.replace("/", "\\/")
    for text in (once, twice, slashed):
        shown = redact_text(text, [SECRET])
        assert "k3y" not in shown and REDACTED in shown


async def test_a_secret_echoed_in_a_nested_validation_message_is_hidden_everywhere() -> None:
    """The service's validation errors are a JSON list inside the body's ``message``:
    a secret echoed there is escaped twice over and must not reach the error's text,
    its issues, its body, its pickle, or a response hook."""

    def handler(request: Request) -> Response:
        issues = [{"code": "custom", "path": ["secret"], "received": request.json()["secret"]}]
        body = {"statusCode": 400, "error": "Bad Request", "message": json.dumps(issues)}
        return Response(400, {"Content-Type": "application/json"}, json.dumps(body).encode())

    seen: list[Response] = []
    async with Client(
        "https://v.example",
        auth=ApiKeyAuth("kid", SECRET),
        account_url="https://a.example",
        transport=MockTransport(handler),
        event_hooks={"response": [seen.append]},
    ) as svc:
        with pytest.raises(BadRequestError) as info:
            await svc.seasons.list()
    error = info.value
    views = [str(error), repr(error), repr(error.issues), repr(error.body)]
    views.append(repr(vars(pickle.loads(pickle.dumps(error)))))
    views.append(repr(seen[0].content))
    for view in views:
        assert "k3y" not in view, view
    assert error.issues[0].received == REDACTED


@pytest.mark.parametrize(
    "text",
    ['{"accessToken": "NEW-TOKEN-abc', "{'refreshToken': 'NEW-TOKEN-abc", 'secret="NEW-TOKEN-abc'],
)
def test_a_secret_field_cut_off_before_its_closing_quote_is_hidden(text: str) -> None:
    """A body quoted in part (an error's snippet) may end inside a secret's value."""
    shown = redact_text(text)
    assert "NEW-TOKEN" not in shown and REDACTED in shown


async def test_a_cut_off_login_answer_does_not_show_the_new_token() -> None:
    def handler(request: Request) -> Response:
        return Response(
            200, {"Content-Type": "application/json"}, b'{"accessToken": "NEW-TOKEN-abc'
        )

    async with Client(
        "https://v.example",
        auth=ApiKeyAuth("kid", "key-secret"),
        account_url="https://a.example",
        transport=MockTransport(handler),
        retry=RetryPolicy(attempts=1),
    ) as svc:
        with pytest.raises(ResponseDecodeError) as info:
            await svc.seasons.list()
    assert "NEW-TOKEN" not in str(info.value)
    assert "NEW-TOKEN" not in repr(pickle.loads(pickle.dumps(info.value)).__dict__)


async def test_a_secret_echoed_in_a_response_header_is_hidden_in_the_error() -> None:
    """A server (or a proxy) may echo the credential back under any header name: the
    error's ``headers`` and its pickle hide it, and keep the rest as it came."""

    def handler(request: Request) -> Response:
        echoed = {"X-Echo": request.headers["Authorization"], "X-Plain": "kept", "Retry-After": "7"}
        return Response(400, {"Content-Type": "application/json", **echoed}, b"{}")

    token = "tok-3chOed-b4ck"
    async with Client("https://v.example", token=token, transport=MockTransport(handler)) as svc:
        with pytest.raises(BadRequestError) as info:
            await svc.seasons.list()
    error = info.value
    assert error.headers["x-echo"] == f"Bearer {REDACTED}"  # still read case-insensitively
    assert error.headers["X-Plain"] == "kept" and error.headers["retry-after"] == "7"
    for view in (str(error), repr(error), repr(dict(error.headers))):
        assert token not in view
    assert token not in repr(vars(pickle.loads(pickle.dumps(error))))
