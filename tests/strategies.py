"""Hypothesis strategies for the documents the live service may send (its current published types).

Each strategy draws a JSON document (dicts, lists, strings, numbers) in any form the
type definitions or the published examples allow: nulls where a value is nullable,
keys left out where older answers leave them out (Publishing Arrangement Rights, the
Master* checks, ``inviteURL``, the new job fields), both job-status vocabularies, both
names of the search list, numeric or string ``svcMixId``, object, string or null
``manualStatus``, enum values the SDK has never seen, and unknown keys at every depth.

``same_json`` compares two documents the way ``to_dict`` promises: equal, with
timestamps equal as instants.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import strategies as st

from svc_async import models as m

Strategy = st.SearchStrategy[Any]

ids = st.integers(min_value=0, max_value=2**53)
text = st.text(max_size=10)
opt_text = st.none() | text
urls = st.sampled_from(
    ["https://files.example/a.mp3?X-Amz-Signature=abc", "https://svc.example/jobs/1/edit"]
)
opt_url = st.none() | urls
countries = st.sampled_from(["US", "GB", "IE", "CA", "AU"])


def _stamp(moment: dt.datetime, form: int) -> str:
    """One of the timestamp spellings the service (or an older answer) uses."""
    if form == 0:
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if form == 1:
        return moment.isoformat()
    if form == 2:
        return moment.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30))).isoformat()
    return moment.replace(tzinfo=None).isoformat(timespec="seconds")  # no offset: UTC


timestamps = st.builds(
    _stamp,
    st.datetimes(
        min_value=dt.datetime(1971, 1, 1),
        max_value=dt.datetime(2099, 1, 1),
        timezones=st.just(dt.UTC),
    ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
    st.integers(min_value=0, max_value=3),
)
opt_timestamps = st.none() | timestamps


def open_enum(enum: Any) -> Strategy:
    """A member's value, or a value the SDK has never seen (open enums keep it)."""
    return st.sampled_from([member.value for member in enum]) | st.sampled_from(
        ["Brand New Value", "x"]
    )


json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
_UNKNOWN_KEYS = st.sampled_from(["futureField", "addedIn2027", "x-trace", "Sync Rights", "extra"])


def obj(required: dict[str, Strategy], optional: dict[str, Strategy] | None = None) -> Strategy:
    """An object with every ``required`` key, any of ``optional``, and unknown keys."""
    known = {*required, *(optional or {})}
    extra = st.dictionaries(_UNKNOWN_KEYS.filter(lambda k: k not in known), json_value, max_size=2)
    return st.builds(
        lambda doc, more: {**doc, **more},
        st.fixed_dictionaries(required, optional=optional or {}),
        extra,
    )


def lists(item: Strategy, size: int = 2) -> Strategy:
    return st.lists(item, max_size=size)


logos = obj({"id": ids}, {"fileType": opt_text, "fileName": opt_text, "signedUrl": opt_url})
organisations = obj(
    {"id": ids, "name": text},
    {
        "createdAt": opt_timestamps,
        "updatedAt": opt_timestamps,
        "deletedAt": opt_timestamps,
        "parentId": st.none() | ids,
        "isEventProducer": st.booleans(),
        "logo": st.none() | logos,
    },
)
signup_fields = obj(
    {"id": ids, "question": text, "type": open_enum(m.SignupFieldType)},
    {
        "isRequired": st.booleans(),
        "options": lists(text),
        "order": st.integers(0, 50),
        "description": text,
        "key": opt_text,
    },
)
_dated = {"organisationId": ids, "title": text, "startDate": timestamps, "endDate": timestamps}
seasons = obj(
    {"id": ids, **_dated},
    {
        "isLocked": st.booleans(),
        "territories": lists(countries),
        "inviteURL": opt_url,
        "signupFields": lists(signup_fields),
    },
)
events = obj(
    {"id": ids, **_dated},
    {
        "territory": st.none() | countries,
        "isLocked": st.booleans(),
        "inviteURL": opt_url,
        "signupFields": lists(signup_fields),
    },
)
license_checks = obj(  # a check is present with a result, or absent (never null)
    {},
    {
        **dict.fromkeys(m.LICENSE_CHECK_NAMES, open_enum(m.CheckResult)),
        m.TERRITORY_MATCH_KEY: st.dictionaries(countries, open_enum(m.CheckResult), max_size=2),
    },
)
svc_licenses = obj(
    {"ref": text},
    {
        "datePurchased": opt_timestamps,
        "validTo": opt_timestamps,
        "downloadURL": opt_url,
        "rights": lists(obj({"name": text}, {"variant": opt_text})),
        "territories": lists(countries),
    },
)
external_licenses = obj(
    {"id": ids},
    {
        "sourceName": opt_text,
        "files": lists(obj({"id": ids}, {"downloadURL": opt_url})),
    },
)
bespoke_agreements = obj(
    {"id": ids},
    {
        "territories": lists(countries),
        "dateSold": opt_timestamps,
        "licenseStart": opt_timestamps,
        "licenseExpiry": opt_timestamps,
        "grantType": open_enum(m.GrantType),
        "licensedUses": st.none()
        | obj(
            {},
            {
                key: st.none() | st.booleans()
                for key in (
                    "masterCopyAndDistribute",
                    "masterChoreography",
                    "publishingCopyAndDistribute",
                    "publishingChoreography",
                )
            },
        ),
        "dateSubmitted": timestamps,
        "bespokeRightsholder": obj({}, {"name": opt_text, "email": opt_text}),
    },
)
public_domain_proofs = obj(
    {},
    {
        "composers": lists(obj({"name": text}, {"yearDied": st.none() | st.integers(1500, 2020)})),
        "iswc": opt_text,
        "source": text,
        "notes": opt_text,
    },
)
license_data = obj(
    {},
    {
        "licenseSource": st.none() | open_enum(m.LicenseSource),
        "bespokeAgreement": st.none() | bespoke_agreements,
        "svcLicense": st.none() | svc_licenses,
        "externalLicense": st.none() | external_licenses,
        "publicDomainProof": st.none() | public_domain_proofs,
    },
)
manual_statuses = (
    st.none()
    | text  # the form older answers carried
    | obj({"status": st.none() | open_enum(m.ManualStatusValue), "details": text})
)
seconds = st.integers(0, 600) | st.floats(min_value=0, max_value=600, allow_nan=False)
songs = obj(
    {
        "title": text,
        "artists": text,
        "startTime": seconds,
        "endTime": seconds,
        "licenseStatus": open_enum(m.LicenseStatus),
    },
    {
        "licenseChecks": st.none() | license_checks,
        "licenseData": st.none() | license_data,
        "svcMixId": st.none() | ids | text,  # a number today, a string in the examples
        **dict.fromkeys(
            ["svcId", "composer", "isrc", "iswc", "publisher", "recordLabel", "tunecode", "upc"],
            opt_text,
        ),
        "yearOfRelease": st.none() | st.integers(1900, 2030),
        "manualStatus": manual_statuses,
    },
)
recordings = obj(
    {
        "createdAt": timestamps,
        "updatedAt": timestamps,
        "downloadURL": urls,
        "uploadFileName": text,
        "licenseStatus": open_enum(m.LicenseStatus),
        "status": open_enum(m.RecordingStatus),
    },
    {"songsConfirmedAt": opt_timestamps, "md5Hash": opt_text, "songs": lists(songs, 3)},
)
entry_fields = obj(
    {"signupFieldId": ids},
    {"value": st.none() | text | lists(text, 3), "key": opt_text},
)
entries = obj(
    {"id": ids, "name": text},
    {
        "email": opt_text,
        "fields": lists(entry_fields, 3),
        "soundRecording": st.none() | recordings,
    },
)
output_files = obj(
    {"id": ids, "verificationJobId": ids, "status": open_enum(m.OutputFileStatus)},
    {
        "downloadURL": opt_url,
        "operation": open_enum(m.OutputFileOperation),
        "fileType": open_enum(m.OutputFileType),
    },
)
jobs = obj(
    # Both vocabularies: today's statuses and the legacy Completed/Confirmed.
    {"id": ids, "organisationId": ids, "status": open_enum(m.JobStatus)},
    {
        "name": text,
        "email": opt_text,
        "externalId": opt_text,
        "requiredTerritories": lists(countries),
        "soundRecordingId": st.none() | ids,
        "errorMessage": text,
        "startDate": opt_timestamps,
        "endDate": opt_timestamps,
        "tags": lists(text, 3),
        "recording": st.none() | recordings,
        "editURL": urls,
        "isClaimed": st.booleans(),
        "type": open_enum(m.JobType),
        "outputFiles": lists(output_files),
        "outputFileType": open_enum(m.OutputFileType),
    },
)
search_results = st.builds(
    lambda key, found, count, more: {key: found, "count": count, **more},
    st.sampled_from(["results", "jobs"]),  # "jobs" before 2025-01 and in the examples
    lists(jobs, 2),
    st.integers(0, 1000),
    st.dictionaries(st.sampled_from(["limit", "offset", "futureField"]), json_value, max_size=2),
)

DOCUMENTS: dict[str, tuple[Any, Strategy]] = {
    "organisations": (list[m.Organisation], lists(organisations)),
    "seasons": (list[m.Season], lists(seasons)),
    "events": (list[m.Event], lists(events)),
    "entries": (list[m.Entry], lists(entries)),
    "job": (m.VerificationJob, jobs),
    "search": (m.JobSearchResults, search_results),
}
"""Every response type, with the strategy for its documents."""


def _instant(value: str) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def differences(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """Where ``actual`` differs from ``expected`` (timestamps compared as instants).

    Booleans must stay booleans (``True == 1`` would hide a conversion).
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{path}: key {k!r} lost" for k in expected if k not in actual]
        out += [f"{path}: key {k!r} added" for k in actual if k not in expected]
        for key in expected.keys() & actual.keys():
            out += differences(expected[key], actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: {len(expected)} items became {len(actual)}"]
        return [
            d
            for i, pair in enumerate(zip(expected, actual, strict=True))
            for d in differences(*pair, f"{path}[{i}]")
        ]
    if isinstance(expected, bool) or isinstance(actual, bool):
        same = type(expected) is type(actual) and expected == actual
    elif isinstance(expected, str) and isinstance(actual, str) and expected != actual:
        a, b = _instant(expected), _instant(actual)
        same = a is not None and a == b
    else:
        same = expected == actual and (expected is None) == (actual is None)
    return [] if same else [f"{path}: {expected!r} became {actual!r}"]
