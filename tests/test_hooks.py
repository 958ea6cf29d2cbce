"""Event hooks observe, whatever a transport of your own hands them."""

from __future__ import annotations

from svc_async import ApiKeyAuth, Client, MockTransport, Request, Response, json_response


async def test_a_header_value_that_is_no_string_does_not_fail_the_call() -> None:
    """A hook only observes: a response header that is no ``str`` (a custom transport's)
    reaches it as text instead of failing the call with a ``TypeError``."""
    answer = Response(200, {"X-Count": 3, "Content-Type": "application/json"}, b"[]")
    seen: list[Response] = []
    async with Client(
        "https://v.example",
        token="tok-secret",
        transport=MockTransport(lambda request: answer),
        event_hooks={"response": [seen.append]},
    ) as svc:
        assert await svc.seasons.list() == []
    assert seen[0].headers["X-Count"] == "3"


async def test_logins_and_refreshes_reach_the_hooks_without_their_credentials() -> None:
    """The account host's requests carry the key's secret or the refresh token, its
    answers the new tokens, which the client did not hold yet: hooks see none of them."""
    secrets = ("KEY-SECRET-1", "ACCESS-TOKEN-1", "REFRESH-TOKEN-1", "ACCESS-TOKEN-2")

    def handler(request: Request) -> Response:
        if request.url.path.endswith("/login"):
            return json_response({"accessToken": secrets[1], "refreshToken": secrets[2]})
        if request.url.path.endswith("/refresh"):
            return json_response({"accessToken": secrets[3]})
        if request.headers["Authorization"] == f"Bearer {secrets[1]}":
            return json_response({"statusCode": 401}, status=401)
        return json_response([])

    seen: list[Request | Response] = []
    async with Client(
        "https://v.example",
        auth=ApiKeyAuth("kid", secrets[0]),
        account_url="https://a.example",
        transport=MockTransport(handler),
        event_hooks={"request": [seen.append], "response": [seen.append]},
    ) as svc:
        assert await svc.seasons.list() == []
    assert len(seen) == 8  # login, 401, refresh, replay: each request and its answer
    for event in seen:
        shown = repr(event.content) + repr(dict(event.headers))
        assert not any(secret in shown for secret in secrets), shown
    assert b'"accessToken":"[REDACTED]"' in seen[1].content
