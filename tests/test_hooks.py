"""Event hooks observe, whatever a transport of your own hands them."""

from __future__ import annotations

from svc_async import Client, MockTransport, Response


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
