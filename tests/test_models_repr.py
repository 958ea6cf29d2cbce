"""A model's repr hides what makes a link a credential: its query values and user info.

The models keep the real links (they are needed to download), but a repr goes to logs:
"No repr, log line or exception message shows a secret" (docs/guides/downloads.md).
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from svc_async import Client, MockTransport, Request, Response, json_response
from svc_async import models as m

from .conftest import load

SIGNATURE = "X-Amz-Signature=s3cr3tSIG"


def _signed(url: str) -> str:
    return f"{url}?{SIGNATURE}&token=t0ken-value"


async def _answer(body: Any, call: str) -> Any:
    def handler(request: Request) -> Response:
        return json_response(body)

    async with Client("https://v.example", token="t", transport=MockTransport(handler)) as svc:
        if call == "job":
            return await svc.jobs.get(1)
        if call == "orgs":
            return await svc.orgs.list()
        return await svc.entries.for_event(1)


def _assert_hidden(text: str) -> None:
    assert "s3cr3tSIG" not in text and "t0ken-value" not in text and "p4ss" not in text
    assert "X-Amz-Signature=[REDACTED]" in text


async def test_reprs_of_parsed_answers_hide_signed_link_queries() -> None:
    entries = copy.deepcopy(load("get-event-entries.response-0.json"))
    recording = entries[1]["soundRecording"]
    recording["downloadURL"] = _signed("https://files.example/a.mp3")
    song = recording["songs"][0]
    song["licenseData"]["externalLicense"] = {
        "id": 3,
        "sourceName": "x",
        "files": [{"id": 4, "downloadURL": _signed("https://files.example/l.pdf")}],
    }
    parsed = await _answer(entries, "entries")
    assert parsed[1].sound_recording.download_url == recording["downloadURL"]  # kept
    _assert_hidden(repr(parsed))
    orgs = [{"id": 1, "name": "o", "logo": {"id": 2, "signedUrl": _signed("https://cdn.x/l")}}]
    _assert_hidden(repr(await _answer(orgs, "orgs")))
    job = {
        "id": 1,
        "organisationId": 2,
        "status": "Processed",
        "editURL": _signed("https://app.example/jobs/1/edit"),
        "outputFiles": [
            {
                "id": 5,
                "verificationJobId": 1,
                "status": "Completed",
                "downloadURL": _signed("https://files.example/m.mp3"),
            }
        ],
    }
    _assert_hidden(repr(await _answer(job, "job")))


def test_reprs_of_requests_and_hand_made_models_hide_them_too() -> None:
    request = m.JobRequest(
        name="n",
        email=None,
        organisation_id=1,
        audio_file_url=_signed("https://user:p4ss@files.example/in.mp4"),
        start_date=dt.date(2025, 1, 1),
        end_date=dt.date(2025, 2, 1),
        license_details=[
            m.LicenseDetails(
                license_source=m.LicenseSource.OTHER,
                license_source_name="x",
                license_file_urls=[_signed("https://files.example/l.pdf")],
            )
        ],
        output_file=m.OutputFileRequest(callback_url=_signed("https://me.example/hook")),
    )
    _assert_hidden(repr(request))
    assert repr(request).count("[REDACTED]") >= 6
    season = m.Season(
        id=1,
        organisation_id=1,
        title="s",
        start_date=dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        end_date=dt.datetime(2025, 2, 1, tzinfo=dt.UTC),
        invite_url=_signed("https://app.example/invite"),
    )
    _assert_hidden(repr(season))
    assert "invite_url=None" in repr(
        m.Event(
            id=1,
            organisation_id=1,
            title="e",
            start_date=season.start_date,
            end_date=season.end_date,
        )
    )
    lic = m.SvcLicense(ref="r", download_url=_signed("https://files.example/s.pdf"))
    _assert_hidden(repr(lic))


async def test_the_repr_of_unknown_keys_hides_links_and_secret_fields_too() -> None:
    job = {
        "id": 1,
        "organisationId": 2,
        "status": "Processed",
        "previewURL": _signed("https://files.example/p.mp3"),
        "claimToken": "t0ken-value",
    }
    parsed = await _answer(job, "job")
    assert parsed.extra["previewURL"] == job["previewURL"]  # kept
    text = repr(parsed.extra)
    assert text.startswith("Extra({") and "previewURL" in text
    _assert_hidden(text)
