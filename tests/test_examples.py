"""Every published example parses into models without loss, and JobRequest matches."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from svc_async import (
    CheckResult,
    Entry,
    Event,
    JobRequest,
    JobSearchResults,
    JobStatus,
    LicenseDetails,
    LicenseSource,
    LicenseStatus,
    Organisation,
    RecordingStatus,
    Season,
    SignupFieldType,
    VerificationJob,
)
from svc_async.converter import structure, to_dict, unstructure
from svc_async.resources.entries import parse_entries

from .conftest import FIXTURES, load
from .strategies import differences

CASES = [
    ("get-my-organisations.response.json", list[Organisation]),
    ("get-seasons.response.json", list[Season]),
    ("get-events.response.json", list[Event]),
    ("get-event-entries.response-0.json", list[Entry]),
    ("get-event-entries.response-1.json", list[Entry]),
    ("get-event-entries.response-2.json", list[Entry]),
    ("get-season-entries.response-0.json", list[Entry]),
    ("create-verification-job.response.json", VerificationJob),
    ("get-verification-job.response.json", VerificationJob),
    ("search-verification-jobs.response.json", JobSearchResults),
]


def test_every_response_example_is_covered() -> None:
    names = {p.name for p in FIXTURES.glob("*.response*.json")}
    assert names - {c[0] for c in CASES} == {"get-season-entries.response-1.json"}


@pytest.mark.parametrize(("name", "tp"), CASES)
def test_example_round_trips_without_loss(name: str, tp: Any) -> None:
    raw = load(name)
    model = structure(raw, tp)
    assert differences(raw, to_dict(model)) == []  # nulls, absent keys and all


def test_empty_object_answer_means_no_entries() -> None:
    assert load("get-season-entries.response-1.json") == {}
    assert parse_entries(load("get-season-entries.response-1.json")) == []


def test_entry_details() -> None:
    entries = structure(load("get-event-entries.response-0.json"), list[Entry])
    tigers = next(e for e in entries if e.id == 280)
    assert tigers.field("division") == "Group"
    assert tigers.field("missing") is None
    rec = tigers.sound_recording
    assert rec is not None
    assert rec.status is RecordingStatus.COMPLETE
    assert rec.license_status is LicenseStatus.LICENSED
    assert rec.created_at == dt.datetime(2024, 10, 14, 12, 59, 7, 299000, tzinfo=dt.UTC)
    song = rec.songs[0]
    assert song.svc_id == "5efcbb6ab11d4204406d8f59"
    assert song.svc_mix_id is None
    assert song.start_time == 0.0 and song.end_time == 60.0
    assert song.license_checks is not None and song.license_data is not None
    assert song.license_checks.master_duplication_rights is CheckResult.ACCEPTED
    assert song.license_checks.territory_match == {"US": CheckResult.ACCEPTED}
    assert song.license_checks.failing() == {}
    assert song.license_data.license_source is LicenseSource.SERVICE
    assert "X-Amz-Signature" in rec.download_url
    leopards = next(e for e in entries if e.id == 283)
    assert leopards.sound_recording is None


def test_job_example_details() -> None:
    job = structure(load("get-verification-job.response.json"), VerificationJob)
    assert job.status is JobStatus.COMPLETED and job.is_finished and not job.failed
    assert job.recording is not None
    checks = job.recording.songs[0].license_checks
    assert checks is not None
    # Verification job responses omit the three Master* checks.
    assert checks.master_choreography_rights is None
    assert checks.master_adaptation_rights is None
    assert checks.licensee_name_match is CheckResult.REJECTED
    assert checks.failing()["licensee_name_match"] is CheckResult.REJECTED
    assert checks.failing()["territory_match[GB]"] is CheckResult.UNKNOWN
    data = job.recording.songs[0].license_data
    assert data is not None
    ext = data.external_license
    assert ext is not None and ext.files[0].id == 104
    created = structure(load("create-verification-job.response.json"), VerificationJob)
    assert created.status is JobStatus.CREATED and not created.is_finished
    assert created.email == "producer@service.example" and created.edit_url is None
    assert created.recording is None and created.sound_recording_id is None


def test_seasons_and_events_details() -> None:
    seasons = structure(load("get-seasons.response.json"), list[Season])
    no_invite = next(s for s in seasons if s.id == 11)
    assert no_invite.invite_url is None
    assert no_invite.signup_fields[0].type is SignupFieldType.SHORT_ANSWER
    events = structure(load("get-events.response.json"), list[Event])
    nine = next(e for e in events if e.id == 9)
    assert nine.signup_fields[0].type is SignupFieldType.SINGLE_SELECT
    assert nine.signup_fields[0].options == ["1A", "2A", "1B", "2B"]
    assert nine.invite_url is not None and nine.invite_url.endswith(
        "invite?token=d86c23aa687b19bb7e7f281d66d31f77"
    )


def test_org_logo_is_optional() -> None:
    orgs = structure(load("get-my-organisations.response.json"), list[Organisation])
    assert orgs[0].logo is not None and orgs[0].logo.file_type == "Image"
    assert orgs[1].logo is None and orgs[1].parent_id == 1


def test_search_example() -> None:
    page = structure(load("search-verification-jobs.response.json"), JobSearchResults)
    assert page.count == 4 and [j.id for j in page.jobs] == [3, 4]


def example_request() -> JobRequest:
    raw = load("create-verification-job.request.json")
    return JobRequest(
        name="Sample Producer",
        email="producer@service.example",
        required_territories=["US", "GB"],
        start_date=dt.date(2024, 9, 1),
        end_date=dt.date(2024, 9, 4),
        external_id="1234567890",
        organisation_id=1,
        audio_file_url=raw["audioFileURL"],
        tags=["September Event 2024", "2024", "Seniors"],
        license_details=[
            LicenseDetails(
                license_source=LicenseSource.OTHER,
                license_source_name="Other Platform",
                license_file_urls=raw["licenseDetails"][0]["licenseFileURLs"],
            )
        ],
    )


def test_job_request_unstructures_to_the_example_body() -> None:
    assert unstructure(example_request()) == load("create-verification-job.request.json")


def test_structured_models_are_frozen_and_equal_to_constructed_ones() -> None:
    import attrs as _attrs

    job = structure(load("get-verification-job.response.json"), VerificationJob)
    with pytest.raises(_attrs.exceptions.FrozenInstanceError):
        job.status = "Errored"  # type: ignore[misc]
    assert job.recording is not None
    song = job.recording.songs[0]
    with pytest.raises(_attrs.exceptions.FrozenInstanceError):
        song.license_checks.valid_date = "Accepted"  # type: ignore[misc]
    rebuilt = _attrs.evolve(song)  # goes through __init__
    assert rebuilt == song
    assert repr(rebuilt) == repr(song)
