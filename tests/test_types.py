"""CallOptions and Timeout: a caller's bad option is refused before anything is sent."""

from __future__ import annotations

import pytest

from svc_async import Client, MockTransport, RetryPolicy, Timeout, json_response


@pytest.mark.parametrize(
    ("limits", "error", "part"),
    [
        (Timeout(total=-1.0), ValueError, "total"),
        (Timeout(connect=0), ValueError, "connect"),
        (Timeout(read=float("nan")), ValueError, "read"),
        (Timeout(total="5"), TypeError, "total"),  # type: ignore[arg-type]
        (Timeout(connect=True), TypeError, "connect"),
    ],
)
async def test_an_attempt_timeout_with_a_bad_part_is_refused_before_sending(
    limits: Timeout, error: type[Exception], part: str
) -> None:
    transport = MockTransport(lambda request: json_response([]))
    with pytest.raises(error, match=rf"attempt_timeout\.{part}"):
        Client("https://v.example", token="t", transport=transport, attempt_timeout=limits)
    async with Client("https://v.example", token="t", transport=transport) as svc:
        with pytest.raises(error, match=rf"attempt_timeout\.{part}"):
            await svc.seasons.list(attempt_timeout=limits)
    assert transport.requests == []


async def test_a_good_timeout_passes_as_it_is() -> None:
    transport = MockTransport(lambda request: json_response([]))
    limits = Timeout(total=3, connect=1, read=None)
    async with Client("https://v.example", token="t", transport=transport) as svc:
        await svc.seasons.list(attempt_timeout=limits)
    assert transport.requests[0].timeout == limits


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": "5"}, r"timeout must be a number of seconds or None, got str"),
        (
            {"attempt_timeout": "x"},
            r"attempt_timeout must be a number of seconds, a Timeout or None, got str",
        ),
        ({"retry": "x"}, r"retry must be a RetryPolicy or None, got str"),
        ({"retry": RetryPolicy}, r"got the class RetryPolicy itself: give RetryPolicy\(...\)"),
    ],
)
async def test_a_wrongly_typed_option_says_what_it_takes_and_what_it_got(
    options: dict[str, object], message: str
) -> None:
    transport = MockTransport(lambda request: json_response([]))
    async with Client("https://v.example", token="t", transport=transport) as svc:
        with pytest.raises(TypeError, match=message):
            await svc.seasons.list(**options)  # type: ignore[arg-type]
    assert transport.requests == []
