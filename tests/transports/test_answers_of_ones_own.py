"""What a ``MockTransport`` handler or a transport of one's own answers is checked where
it enters: anything but a ``Response`` with an ``int`` status and a ``bytes`` body is a
``TypeError`` naming what is wrong, not an ``AssertionError`` (gone under ``python -O``)
or a bare error from deep in the pipeline."""

from __future__ import annotations

import io
from typing import Any

import pytest

from svc_async import Client, MockTransport, Request, Response, RetryPolicy, json_response

POLICY = RetryPolicy(attempts=1)


class Plain:
    """A transport of one's own, answering ``answer`` (no ``enforces_timeout``)."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def send(self, request: Request) -> Any:
        return self.answer

    async def aclose(self) -> None:
        pass


WRONG = {
    "a dict": ({"a": 1}, "got dict"),
    "None": (None, "got NoneType"),
    "the body": (b"{}", "got bytes"),
    "a str status": (Response(status="200"), "status"),  # type: ignore[arg-type]
    "a bool status": (Response(status=True), "status"),  # type: ignore[arg-type]
    "a str body": (Response(200, content="{}"), "content"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("own", [False, True], ids=["MockTransport", "own transport"])
@pytest.mark.parametrize("wrong", list(WRONG))
async def test_an_answer_that_is_no_response_is_a_type_error(wrong: str, own: bool) -> None:
    answer, named = WRONG[wrong]
    transport = Plain(answer) if own else MockTransport(lambda request: answer)
    async with Client("https://api.example", token="t", transport=transport) as svc:
        with pytest.raises(TypeError, match=named):
            await svc.request("GET", "/x", retry=POLICY)
        if not own:
            with pytest.raises(TypeError, match=named):
                await svc.download("https://files.example/a", io.BytesIO())


@pytest.mark.parametrize("content", [b"{}", bytearray(b"{}")], ids=["bytes", "bytearray"])
async def test_a_right_answer_passes_as_it_is(content: bytes) -> None:
    answer = Response(200, {"Content-Type": "application/json"}, content)
    for transport in (MockTransport(lambda request: answer), Plain(answer)):
        async with Client("https://api.example", token="t", transport=transport) as svc:
            assert await svc.request("GET", "/x", retry=POLICY) == {}
    handler = MockTransport(lambda request: json_response([1]))
    async with Client("https://api.example", token="t", transport=handler) as svc:
        assert await svc.request("GET", "/x", retry=POLICY) == [1]
