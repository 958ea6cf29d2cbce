"""Argument checks (``svc_async._core.validate``) through the public API: refused before
anything is sent, with a clear ValueError naming the argument."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from svc_async import Client, JobRequest, MockTransport, Request, Response, json_response
from svc_async.models import OutputFileRequest


def _job(**changes: Any) -> JobRequest:
    fields: dict[str, Any] = {
        "name": "Routine",
        "email": None,
        "organisation_id": 1,
        "audio_file_url": "https://files.example/routine.mp3",
        "start_date": dt.date(2025, 1, 1),
        "end_date": dt.date(2025, 6, 1),
        "tags": ["season-2025"],
    }
    return JobRequest(**{**fields, **changes})


@pytest.mark.parametrize(
    ("change", "name"),
    [
        # No URL parser takes a space or a control character in a host (WHATWG refuses it).
        ({"audio_file_url": "https://files example/a.mp3"}, "request.audio_file_url"),
        ({"audio_file_url": "https://files.\x00example/a.mp3"}, "request.audio_file_url"),
        # A host that is no IDNA name: a clear "not a valid URL", not an idna codec error.
        ({"audio_file_url": "https://xn--/a.mp3"}, "request.audio_file_url"),
        (
            {"output_file": OutputFileRequest(callback_url="https://me example/hook")},
            "request.output_file.callback_url",
        ),
    ],
)
async def test_a_url_no_parser_takes_is_refused_before_sending(
    change: dict[str, Any], name: str
) -> None:
    sent: list[Request] = []

    def handler(request: Request) -> Response:
        sent.append(request)
        return json_response({"id": 1, "organisationId": 1, "status": "Created"})

    async with Client("https://v.example", token="t", transport=MockTransport(handler)) as svc:
        with pytest.raises(ValueError, match=rf"^{name} is not a valid URL") as info:
            await svc.jobs.create(_job(**change))
        assert type(info.value) is ValueError
        assert sent == []
        await svc.jobs.create(_job(audio_file_url="https://files.example/my%20song.mp3"))
        assert len(sent) == 1
