"""Variants of server answers: omissions, nulls, unknown values, errors, bad shapes."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from svc_async import (
    APIError,
    AuthenticationError,
    BadRequestError,
    Client,
    ConflictError,
    Entry,
    MockTransport,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RedirectError,
    Response,
    ResponseDecodeError,
    RetryPolicy,
    ServerError,
    SvcError,
    UnprocessableEntityError,
    VerificationJob,
    json_response,
)
from svc_async.converter import structure

from .conftest import load

NO_RETRY = RetryPolicy(attempts=1)


def _entries() -> list[dict[str, Any]]:
    return copy.deepcopy(load("get-event-entries.response-0.json"))


def _song(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return entries[1]["soundRecording"]["songs"][0]


def test_unknown_enum_values_are_kept_as_strings() -> None:
    entries = _entries()
    entries[1]["soundRecording"]["licenseStatus"] = "Partially Licensed"
    entries[1]["soundRecording"]["status"] = "Transcoding"
    _song(entries)["licenseStatus"] = "Disputed"
    _song(entries)["licenseChecks"]["Valid Date"] = "Expired"
    _song(entries)["licenseData"]["licenseSource"] = "Public Domain"
    [_, parsed, *_] = structure(entries, list[Entry])
    rec = parsed.sound_recording
    assert rec is not None
    assert rec.license_status == "Partially Licensed"
    assert rec.status == "Transcoding" and type(rec.status) is str
    assert rec.songs[0].license_status == "Disputed"
    assert rec.songs[0].license_checks.valid_date == "Expired"
    assert rec.songs[0].license_data.license_source == "Public Domain"


def test_unknown_fields_ignored_and_unknown_checks_kept() -> None:
    entries = _entries()
    entries[1]["brandNewField"] = {"x": 1}
    _song(entries)["licenseChecks"]["Sync Rights"] = "Accepted"
    [_, parsed, *_] = structure(entries, list[Entry])
    assert parsed.sound_recording is not None
    assert parsed.sound_recording.songs[0].license_checks.extra == {"Sync Rights": "Accepted"}


def test_omitted_optional_fields_and_nulls() -> None:
    entries = _entries()
    del entries[1]["email"]
    checks = _song(entries)["licenseChecks"]
    for key in [k for k in checks if k.startswith("Master")]:
        del checks[key]
    del checks["Territory Match"]
    _song(entries)["yearOfRelease"] = None
    del _song(entries)["composer"]
    [_, parsed, *_] = structure(entries, list[Entry])
    assert parsed.email is None
    assert parsed.sound_recording is not None
    song = parsed.sound_recording.songs[0]
    assert song.license_checks.master_choreography_rights is None
    assert song.license_checks.territory_match is None
    assert song.composer is None and song.year_of_release is None


def test_list_valued_entry_field_and_nullable_job_fields() -> None:
    entries = _entries()
    entries[0]["fields"][0]["value"] = ["Group", "Mixed"]
    [parsed, *_] = structure(entries, list[Entry])
    assert parsed.field("division") == ["Group", "Mixed"]
    job = load("get-verification-job.response.json")
    job["email"] = None
    job["externalId"] = None
    parsed_job = structure(job, VerificationJob)
    assert parsed_job.email is None and parsed_job.external_id is None


def test_search_results_under_the_type_definitions_name() -> None:
    page = load("search-verification-jobs.response.json")
    page["results"] = page.pop("jobs")
    from svc_async import JobSearchResults

    parsed = structure(page, JobSearchResults)
    assert [j.id for j in parsed.jobs] == [3, 4]


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (
            lambda e: _song(e).__setitem__("startTime", "0"),
            "$[1].soundRecording.songs[0].startTime",
        ),
        (lambda e: _song(e).pop("title"), "$[1].soundRecording.songs[0].title"),
        (lambda e: e[1].__setitem__("id", "280"), "$[1].id"),
        (lambda e: e[1].__setitem__("id", True), "$[1].id"),
        (lambda e: e[0].__setitem__("fields", {"a": 1}), "$[0].fields"),
        (
            lambda e: e[2]["soundRecording"].__setitem__("createdAt", "yesterday"),
            "$[2].soundRecording.createdAt",
        ),
        (
            lambda e: _song(e)["licenseChecks"]["Territory Match"].__setitem__("US", 1),
            "$[1].soundRecording.songs[0].licenseChecks['Territory Match'].US",
        ),
        (lambda e: e.__setitem__(3, "not an object"), "$[3]"),
    ],
)
def test_wrong_shapes_name_the_json_path(mutate: Any, path: str) -> None:
    entries = _entries()
    mutate(entries)
    with pytest.raises(ResponseDecodeError) as info:
        structure(entries, list[Entry])
    assert info.value.path == path
    assert path in str(info.value)


def test_top_level_shape_mismatch() -> None:
    with pytest.raises(ResponseDecodeError) as info:
        structure({"entries": []}, list[Entry])
    assert info.value.path == "$" and "expected an array" in str(info.value)


async def _call_with(response: Response) -> SvcError:
    transport = MockTransport(lambda request: response)
    async with Client("https://x.example", token="tok", transport=transport, retry=NO_RETRY) as svc:
        with pytest.raises(SvcError) as info:
            await svc.jobs.get(1)
    return info.value


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, ConflictError),
        (418, APIError),
        (422, UnprocessableEntityError),
        (429, RateLimitError),
        (500, ServerError),
        (502, ServerError),
        (503, ServerError),
        (307, RedirectError),
    ],
)
async def test_error_bodies_of_each_status(status: int, cls: type[APIError]) -> None:
    body = {"statusCode": status, "error": "Some Error", "message": "it went wrong"}
    error = await _call_with(json_response(body, status=status))
    assert type(error) is cls
    assert isinstance(error, APIError)
    assert error.status == status and error.body == body
    assert error.error == "Some Error" and error.message == "it went wrong"
    assert "it went wrong" in str(error) and f"HTTP {status}" in str(error)


async def test_validation_issues_are_parsed() -> None:
    issues = [
        {
            "code": "invalid_type",
            "expected": "string",
            "received": "undefined",
            "path": ["audioFileURL"],
            "message": "Required",
        }
    ]
    body = {"statusCode": 400, "error": "Bad Request", "message": orjson.dumps(issues).decode()}
    error = await _call_with(json_response(body, status=400))
    assert isinstance(error, BadRequestError)
    [issue] = error.issues
    assert issue.path == ["audioFileURL"] and issue.code == "invalid_type"
    assert issue.expected == "string" and issue.received == "undefined"


@pytest.mark.parametrize(
    "content",
    [b"", b"<html><body><h1>502 Bad Gateway</h1></body></html>", b"\xff\xfe garbage"],
)
async def test_html_or_empty_error_bodies(content: bytes) -> None:
    error = await _call_with(
        Response(status=502, headers={"Content-Type": "text/html"}, content=content)
    )
    assert isinstance(error, ServerError)
    assert error.error is None and error.issues == []
    if b"Bad Gateway" in content:
        assert "502 Bad Gateway" in str(error)


@pytest.mark.parametrize(
    "content", [b"{not json", b'[{"id": 1', b"<html>maintenance</html>", b"\x00\x01"]
)
async def test_malformed_json_on_success(content: bytes) -> None:
    error = await _call_with(Response(status=200, content=content))
    assert isinstance(error, ResponseDecodeError)
    assert "not valid JSON" in str(error)


async def test_wrong_shape_through_the_client() -> None:
    error = await _call_with(json_response({"id": "four"}))
    assert isinstance(error, ResponseDecodeError)
    assert error.path in ("$.organisationId", "$.id")
