"""An APIError's text from odd error bodies: always a detail worth reading."""

from __future__ import annotations

from typing import Any

import pytest

from svc_async import BadRequestError, Client, MockTransport, json_response


async def _error(body: Any) -> BadRequestError:
    transport = MockTransport(lambda request: json_response(body, status=400))
    async with Client("https://v.example", token="t", transport=transport) as svc:
        with pytest.raises(BadRequestError) as info:
            await svc.seasons.list()
    return info.value


async def test_issues_without_messages_leave_the_error_phrase_as_the_detail() -> None:
    error = await _error(
        {"statusCode": 400, "error": "Bad Request", "message": [{"code": "a"}, {"code": "b"}]}
    )
    assert error.message is None
    assert str(error).endswith(": Bad Request")
    assert [issue.code for issue in error.issues] == ["a", "b"]


async def test_only_the_issues_with_a_message_are_joined() -> None:
    error = await _error({"statusCode": 400, "message": [{"message": "x"}, {}, {"message": "y"}]})
    assert error.message == "x; y"
    assert str(error).endswith(": x; y")
