"""Converter round trips: any model -> JSON -> the same model."""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svc_async import Client, MockTransport, Request, Response, json_response
from svc_async import models as m
from svc_async.converter import format_timestamp, parse_timestamp, structure, unstructure

text = st.text(max_size=12)
opt_text = st.none() | text
timestamps = st.datetimes(
    min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2100, 1, 1), timezones=st.just(dt.UTC)
).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
ids = st.integers(min_value=1, max_value=2**53)


def open_enum(enum: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from(list(enum)) | st.text(min_size=1, max_size=10)


checks = st.builds(
    m.LicenseChecks,
    **{name: st.none() | open_enum(m.CheckResult) for name in m.LICENSE_CHECK_NAMES.values()},
    territory_match=st.none()
    | st.dictionaries(st.sampled_from(["US", "GB", "IE"]), open_enum(m.CheckResult)),
    extra=st.dictionaries(
        st.sampled_from(["Sync Rights", "Other Check"]), st.sampled_from(["Accepted", "Rejected"])
    ),
)
license_data = st.builds(
    m.LicenseData,
    license_source=st.none() | open_enum(m.LicenseSource),
    bespoke_agreement=st.none()
    | st.builds(
        m.BespokeAgreement,
        id=ids,
        territories=st.lists(st.sampled_from(["US", "GB"]), max_size=2),
        license_expiry=st.none() | timestamps,
        grant_type=st.none() | open_enum(m.GrantType),
        licensed_uses=st.none()
        | st.builds(m.LicensedUses, master_choreography=st.none() | st.booleans()),
        bespoke_rightsholder=st.none() | st.builds(m.BespokeRightsholder, name=opt_text),
    ),
    public_domain_proof=st.none()
    | st.builds(
        m.PublicDomainProof,
        composers=st.lists(st.builds(m.Composer, name=text, year_died=st.none() | ids), max_size=2),
        source=opt_text,
    ),
    svc_license=st.none()
    | st.builds(
        m.SvcLicense,
        ref=text,
        date_purchased=st.none() | timestamps,
        valid_to=st.none() | timestamps,
        download_url=opt_text,
        rights=st.lists(st.builds(m.LicenseRight, name=text, variant=opt_text), max_size=2),
        territories=st.lists(st.sampled_from(["US", "GB"]), max_size=2),
    ),
    external_license=st.none()
    | st.builds(
        m.ExternalLicense,
        id=ids,
        source_name=opt_text,
        files=st.lists(st.builds(m.ExternalLicenseFile, id=ids, download_url=text), max_size=2),
    ),
)
songs = st.builds(
    m.Song,
    title=text,
    artists=text,
    start_time=st.floats(min_value=0, max_value=1e6),
    end_time=st.floats(min_value=0, max_value=1e6),
    license_status=open_enum(m.LicenseStatus),
    license_checks=st.none() | checks,
    license_data=st.none() | license_data,
    svc_mix_id=st.none() | text | ids,
    manual_status=st.none()
    | text
    | st.builds(m.ManualStatus, status=st.none() | open_enum(m.ManualStatusValue), details=text),
    year_of_release=st.none() | st.integers(min_value=1900, max_value=2100),
)
recordings = st.builds(
    m.SoundRecording,
    created_at=timestamps,
    updated_at=timestamps,
    download_url=text,
    upload_file_name=text,
    license_status=open_enum(m.LicenseStatus),
    status=open_enum(m.RecordingStatus),
    songs_confirmed_at=st.none() | timestamps,
    songs=st.lists(songs, max_size=3),
)
entries = st.builds(
    m.Entry,
    id=ids,
    name=text,
    email=opt_text,
    fields=st.lists(
        st.builds(
            m.EntryField,
            signup_field_id=ids,
            value=st.none() | text | st.lists(text, max_size=2),
            key=opt_text,
        ),
        max_size=3,
    ),
    sound_recording=st.none() | recordings,
)
jobs = st.builds(
    m.VerificationJob,
    id=ids,
    organisation_id=ids,
    status=open_enum(m.JobStatus),
    email=opt_text,
    external_id=opt_text,
    tags=st.lists(text, max_size=3),
    start_date=st.none() | timestamps,
    recording=st.none() | recordings,
    type=st.none() | open_enum(m.JobType),
    is_claimed=st.none() | st.booleans(),
    output_files=st.lists(
        st.builds(
            m.OutputFile,
            id=ids,
            verification_job_id=ids,
            status=open_enum(m.OutputFileStatus),
            download_url=opt_text,
        ),
        max_size=2,
    ),
)


@settings(max_examples=60, deadline=None)
@given(entries=st.lists(entries, max_size=3))
def test_entries_round_trip(entries: list[m.Entry]) -> None:
    wire = orjson.loads(orjson.dumps(unstructure(entries)))
    assert structure(wire, list[m.Entry]) == entries


@settings(max_examples=60, deadline=None)
@given(job=jobs)
def test_jobs_round_trip(job: m.VerificationJob) -> None:
    wire = orjson.loads(orjson.dumps(unstructure(job)))
    assert structure(wire, m.VerificationJob) == job


@given(moment=timestamps, offset=st.integers(min_value=-14 * 60, max_value=14 * 60))
def test_timestamps_any_offset_in_utc_milliseconds_out(moment: dt.datetime, offset: int) -> None:
    local = moment.astimezone(dt.timezone(dt.timedelta(minutes=offset)))
    text = format_timestamp(local)
    assert text.endswith("Z")
    assert len(text) == len("2024-10-17T14:41:56.000Z")
    assert parse_timestamp(text) == moment
    assert parse_timestamp(local.isoformat()) == moment


@pytest.mark.parametrize(
    "text",
    ["0001-01-01T00:30:00.000+01:00", "9999-12-31T23:00:00.000-05:00"],
)
def test_a_timestamp_beyond_the_utc_range_keeps_its_offset(text: str) -> None:
    # Valid in its own offset, but its instant in UTC is before year 1 or after 9999:
    # to_dict gives it back as it came instead of an OverflowError from astimezone.
    org = structure({"id": 1, "name": "x", "createdAt": text}, m.Organisation)
    assert unstructure(org) == {"id": 1, "name": "x", "createdAt": text}
    assert parse_timestamp(format_timestamp(parse_timestamp(text))) == parse_timestamp(text)


def test_lower_case_t_and_z_are_timestamps_too() -> None:
    # RFC 3339 (5.6): "T" and "Z" may be written in lower case.
    expected = dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC)
    assert parse_timestamp("2024-01-02t03:04:05.006z") == expected
    org = structure({"id": 1, "name": "x", "createdAt": "2024-01-02t03:04:05.006z"}, m.Organisation)
    assert org.created_at == expected


def test_integral_floats_are_integers_in_every_integer_field() -> None:
    # An int field takes 12.0 as 12: so do svcMixId (a number, or an older string) and count.
    song = {"title": "t", "artists": "a", "startTime": 1, "endTime": 2, "licenseStatus": "x"}
    parsed = structure({**song, "svcMixId": 12.0}, m.Song)
    assert parsed.svc_mix_id == 12 and type(parsed.svc_mix_id) is int
    results = structure({"results": [], "count": 3.0}, m.JobSearchResults)
    assert results.count == 3 and type(results.count) is int


async def test_updated_after_beyond_the_utc_range_is_sent_with_its_offset() -> None:
    bodies: list[Any] = []

    def handler(request: Request) -> Response:
        bodies.append(request.json())
        return json_response([])

    early = dt.datetime(1, 1, 1, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    async with Client("https://v.example", token="t", transport=MockTransport(handler)) as svc:
        assert await svc.entries.for_event(5, updated_after=early) == []
    assert bodies == [{"updatedAfter": "0001-01-01T00:30:00.000+01:00"}]
