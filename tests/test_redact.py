"""Secrets echoed back in an escaped form (JSON inside JSON) are hidden all the same."""

from __future__ import annotations

import json
import pickle

import pytest

from svc_async import ApiKeyAuth, BadRequestError, Client, MockTransport, Request, Response
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
