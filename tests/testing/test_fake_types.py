"""FakeService answers checked against the live service's published types, stated here independently of the SDK.

The checker below is a small hand-written statement of the live service's published
types (see the docs' Service facts page): it uses no SDK model or converter, so the
fake and the SDK are two opinions that must agree. Legacy mode is checked against the
published examples' shapes.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest

from svc_async.testing import SCENARIOS, FakeClock, FakeService

START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC).timestamp()
TOKEN = FakeService.DEFAULT_TOKEN
V1 = "/api/public/v1"

Check = Callable[[Any, str], list[str]]

# ---------------------------------------------------------------- a tiny schema language


def _kind(name: str, test: Callable[[Any], bool]) -> Check:
    return lambda v, at: [] if test(v) else [f"{at}: expected {name}, got {v!r:.60}"]


STR = _kind("string", lambda v: isinstance(v, str))
NUM = _kind("number", lambda v: isinstance(v, int | float) and not isinstance(v, bool))
BOOL = _kind("boolean", lambda v: isinstance(v, bool))
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
TS = _kind("timestamp", lambda v: isinstance(v, str) and bool(_TS.match(v)))
COUNTRY = _kind("country code", lambda v: isinstance(v, str) and len(v) == 2)


def null(check: Check) -> Check:
    return lambda v, at: [] if v is None else check(v, at)


def one_of(*values: Any) -> Check:
    return lambda v, at: [] if v in values else [f"{at}: {v!r} not one of {values}"]


def arr(check: Check) -> Check:
    def run(v: Any, at: str) -> list[str]:
        if not isinstance(v, list):
            return [f"{at}: expected array, got {v!r:.60}"]
        return [p for i, item in enumerate(v) for p in check(item, f"{at}[{i}]")]

    return run


def either(*checks: Check) -> Check:
    def run(v: Any, at: str) -> list[str]:
        found = [c(v, at) for c in checks]
        return [] if any(not f for f in found) else found[0]

    return run


def obj(required: dict[str, Check], optional: dict[str, Check] | None = None) -> Check:
    """An object with every ``required`` key; extra keys are allowed (nothing lost)."""

    def run(v: Any, at: str) -> list[str]:
        if not isinstance(v, dict):
            return [f"{at}: expected object, got {v!r:.60}"]
        out = [f"{at}.{k}: missing" for k in required if k not in v]
        for k, check in {**required, **(optional or {})}.items():
            if k in v:
                out += check(v[k], f"{at}.{k}")
        return out

    return run


# ---------------------------------------------------------------- today's types, stated here

TWELVE = (
    "Licensee Name Match",
    "License Source Matches",
    "Title Matches",
    "Artists Match",
    "Master Choreography Rights",
    "Master Adaptation Rights",
    "Master Duplication Rights",
    "Publishing Choreography Rights",
    "Publishing Adaptation Rights",
    "Publishing Duplication Rights",
    "Valid Date",
    "Full Ownership",
)
ARRANGEMENT = "Publishing Arrangement Rights"
RESULT = one_of("Accepted", "Rejected", "Unknown")
LICENCE_STATUS = one_of(
    "No Audio Uploaded",
    "No License Uploaded",
    "Unlicensed",
    "Rejected",
    "Accepted",
    "Unverified",
    "Expired",
    "Partially Licensed",
    "Processing",
    "Licensed",
    "Pending",
)
SOURCES = (
    "Service",
    "Public Domain Music",
    "Bespoke Music",
    "Stock Arrangement",
    "Other",
    "Pending License",
)


def checks_of(*, legacy: bool, in_job: bool) -> Check:
    """13 result keys today, all present when checks exist, job answers included; the
    examples (legacy) show 12, and their job answers leave out the three Master*."""
    names = [n for n in TWELVE if not (legacy and in_job and n.startswith("Master"))]
    if not legacy:
        names.append(ARRANGEMENT)

    def run(v: Any, at: str) -> list[str]:
        out = obj(dict.fromkeys(names, RESULT), {"Territory Match": _territory_match})(v, at)
        allowed = {*names, "Territory Match"}
        out += [f"{at}: unexpected check {k!r}" for k in v if k not in allowed]
        return out

    return run


def _territory_match(v: Any, at: str) -> list[str]:
    if not isinstance(v, dict):
        return [f"{at}: expected object"]
    return [p for k, r in v.items() for p in COUNTRY(k, at) + RESULT(r, f"{at}.{k}")]


SVC_LICENSE = obj(
    {
        "ref": STR,
        "datePurchased": TS,
        "validTo": TS,
        "downloadURL": null(STR),
        "rights": arr(obj({"name": STR, "variant": STR})),
        "territories": arr(COUNTRY),
    }
)
EXTERNAL_LICENSE = obj(
    {"id": NUM, "sourceName": STR, "files": arr(obj({"id": NUM, "downloadURL": null(STR)}))}
)
LICENSE_DATA = obj(
    {
        "licenseSource": one_of(*SOURCES),
        "svcLicense": null(SVC_LICENSE),
        "externalLicense": null(EXTERNAL_LICENSE),
        "bespokeAgreement": null(obj({"id": NUM, "territories": arr(STR)})),
        "publicDomainProof": null(obj({"composers": arr(obj({"name": STR}))})),
    }
)
MANUAL_STATUS = obj(
    {
        "status": null(one_of("Manually Approved", "Manually Rejected", "User Updated")),
        "details": STR,
    }
)


def song_of(*, legacy: bool, in_job: bool) -> Check:
    return obj(
        {
            "title": STR,
            "artists": STR,
            "startTime": NUM,
            "endTime": NUM,
            "svcId": null(STR),
            "svcMixId": null(STR if legacy else NUM),
            "yearOfRelease": null(NUM),
            "licenseStatus": LICENCE_STATUS,
            "licenseChecks": null(checks_of(legacy=legacy, in_job=in_job)),
            "licenseData": null(LICENSE_DATA),
            "manualStatus": null(MANUAL_STATUS),
        }
    )


def recording_of(*, legacy: bool, in_job: bool) -> Check:
    required = {
        "createdAt": TS,
        "updatedAt": TS,
        "downloadURL": STR,
        "uploadFileName": STR,
        "status": one_of(
            "Uploading", "Downloading", "Created", "Uploaded", "Matching", "Complete", "Failed"
        ),
        "licenseStatus": LICENCE_STATUS,
        "songsConfirmedAt": null(TS),
        "songs": arr(song_of(legacy=legacy, in_job=in_job)),
    }
    if not legacy:
        required["md5Hash"] = null(STR)
    return obj(required)


SIGNUP_FIELD = obj(
    {
        "id": NUM,
        "question": STR,
        "type": one_of("shortAnswer", "singleSelect", "multipleSelect"),
        "options": arr(STR),
        "isRequired": BOOL,
        "key": null(STR),
    }
)


def entry_of(*, legacy: bool) -> Check:
    return obj(
        {
            "id": NUM,
            "name": STR,
            "email": null(STR),
            "fields": arr(obj({"key": null(STR), "value": either(STR, arr(STR))})),
            "soundRecording": null(recording_of(legacy=legacy, in_job=False)),
        }
    )


def season_of(*, legacy: bool) -> Check:
    required = {
        "id": NUM,
        "title": STR,
        "organisationId": NUM,
        "territories": arr(COUNTRY),
        "startDate": TS,
        "endDate": TS,
        "signupFields": arr(SIGNUP_FIELD),
    }
    if not legacy:
        required["inviteURL"] = null(STR)  # key required today
    return obj(required, {"inviteURL": null(STR)})


EVENT = obj(
    {
        "id": NUM,
        "title": STR,
        "organisationId": NUM,
        "territory": null(COUNTRY),
        "inviteURL": null(STR),
        "startDate": TS,
        "endDate": TS,
        "signupFields": arr(SIGNUP_FIELD),
    }
)
OUTPUT_FILE = obj(
    {
        "id": NUM,
        "verificationJobId": NUM,
        "status": one_of("Pending", "Processing", "Completed", "Errored"),
        "downloadURL": null(STR),
        "operation": one_of("Mute"),
        "fileType": one_of("Audio"),
    }
)


def job_of(*, legacy: bool) -> Check:
    statuses = (
        ("Created", "Downloading", "DetectingMusic", "Matching", "Completed", "Errored")
        if legacy
        else (
            "Created",
            "Downloading",
            "DetectingMusic",
            "Matching",
            "Matched",
            "Processed",
            "Submitted",
            "Errored",
        )
    )
    required = {
        "id": NUM,
        "name": STR,
        "email": null(STR),
        "externalId": null(STR),
        "requiredTerritories": arr(COUNTRY),
        "organisationId": NUM,
        "status": one_of(*statuses),
        "errorMessage": STR,
        "tags": arr(STR),
        "startDate": TS,
        "endDate": TS,
        "soundRecordingId": null(NUM),
        "recording": null(recording_of(legacy=legacy, in_job=True)),
    }
    if not legacy:
        required |= {
            "editURL": STR,
            "isClaimed": BOOL,
            "type": one_of("VOD", "Routine"),
            "outputFiles": arr(OUTPUT_FILE),
            "outputFileType": one_of("Audio"),  # deprecated, never null
        }
    return obj(required)


def search_of(*, legacy: bool) -> Check:
    return obj({"jobs" if legacy else "results": arr(job_of(legacy=legacy)), "count": NUM})


# ---------------------------------------------------------------- the checker can fail


def test_the_checker_refuses_what_types_md_refuses() -> None:
    song = song_of(legacy=False, in_job=False)
    good = {
        "title": "t",
        "artists": "a",
        "startTime": 0,
        "endTime": 9,
        "svcId": None,
        "svcMixId": 12,
        "yearOfRelease": None,
        "licenseStatus": "Pending",
        "licenseChecks": None,
        "licenseData": None,
        "manualStatus": {"status": "Manually Rejected", "details": "x"},
    }
    assert song(good, "song") == []
    assert song({**good, "svcMixId": "12"}, "song")
    assert song({**good, "manualStatus": "Manually Rejected"}, "song")
    assert song({**good, "licenseStatus": "Great"}, "song")
    assert song_of(legacy=True, in_job=False)({**good, "svcMixId": 12}, "song")
    twelve = dict.fromkeys(TWELVE, "Accepted")
    assert checks_of(legacy=True, in_job=False)(twelve, "c") == []
    assert checks_of(legacy=False, in_job=False)(twelve, "c") == [
        "c.Publishing Arrangement Rights: missing"
    ]
    thirteen = {**twelve, ARRANGEMENT: "Accepted"}
    assert checks_of(legacy=False, in_job=True)(thirteen, "c") == []
    no_master = {k: v for k, v in thirteen.items() if not k.startswith("Master")}
    assert len(checks_of(legacy=False, in_job=True)(no_master, "c")) == 3
    legacy_job = {k: v for k, v in no_master.items() if k != ARRANGEMENT}
    assert checks_of(legacy=True, in_job=True)(legacy_job, "c") == []
    assert checks_of(legacy=True, in_job=True)(thirteen, "c")
    job = job_of(legacy=False)
    assert any("outputFileType" in p for p in job({"outputFileType": None}, "job"))


# ---------------------------------------------------------------- the fake's answers


async def get(fake: FakeService, method: str, path: str, body: Any = None) -> Any:
    outcome = await fake.handle(
        method,
        path,
        headers={"Authorization": f"Bearer {TOKEN}"},
        body=b"" if body is None else orjson.dumps(body),
    )
    assert outcome.status == 200, outcome.body[:300]
    return orjson.loads(outcome.body)


async def everything(fake: FakeService) -> dict[str, Any]:
    """Every kind of answer the demo data gives, from every endpoint."""
    events = await get(fake, "POST", f"{V1}/event", {"limit": 100})
    seasons = await get(fake, "GET", f"{V1}/season")
    entries = [
        e for ev in events for e in await get(fake, "POST", f"{V1}/event/{ev['id']}/entries", {})
    ]
    entries += [
        e for s in seasons for e in await get(fake, "POST", f"{V1}/season/{s['id']}/entries", {})
    ]
    search = await get(fake, "POST", f"{V1}/verification-job/search", {"limit": 100})
    jobs = [await get(fake, "GET", f"{V1}/verification-job/{j}") for j in fake.state.jobs]
    return {
        "events": events,
        "seasons": seasons,
        "entries": entries,
        "search": search,
        "jobs": jobs,
    }


@pytest.fixture(params=[False, True], ids=["today", "legacy"])
async def demo(request: pytest.FixtureRequest) -> AsyncIterator[FakeService]:
    async with FakeService(seed=5, clock=FakeClock(start=START), legacy=request.param) as fake:
        yield fake


async def test_every_answer_matches_the_published_types(demo: FakeService) -> None:
    legacy = demo.legacy
    got = await everything(demo)
    problems = arr(EVENT)(got["events"], "events")
    problems += arr(season_of(legacy=legacy))(got["seasons"], "seasons")
    problems += arr(entry_of(legacy=legacy))(got["entries"], "entries")
    problems += search_of(legacy=legacy)(got["search"], "search")
    problems += arr(job_of(legacy=legacy))(got["jobs"], "jobs")
    assert problems == []
    assert got["entries"] and got["jobs"]


JOB = f"{V1}/verification-job"


def job_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Tigers Senior",
        "email": "coach@club.example",
        "requiredTerritories": ["GB", "US"],
        "startDate": "2025-03-01",
        "endDate": "2025-03-02",
        "externalId": None,
        "organisationId": 1,
        "audioFileURL": "https://media.example/tigers.mp3",
        "tags": ["strict"],
        "licenseDetails": [],
    }
    return body | changes


def _details(source: str, *urls: str) -> list[dict[str, Any]]:
    return [
        {"licenseSource": source, "licenseSourceName": "Elsewhere", "licenseFileURLs": list(urls)}
    ]


STRICT_JOBS = [
    job_body(),  # no licence at all: Pending License, checks Unknown
    job_body(email="licensed@club.example", audioFileURL="https://media.example/a.mp3"),
    job_body(licenseDetails=_details("Other", "https://l.example/ok.pdf"), email=None),
    job_body(licenseDetails=_details("Bespoke Music", "https://l.example/reject.pdf")),
    job_body(licenseDetails=_details("Stock Arrangement", "https://l.example/pending.pdf")),
    job_body(type="VOD", outputFile={"operation": "Mute", "fileType": "Audio"}),
    job_body(type="Routine", outputFileType="Audio", audioFileURL="https://m.example/b.wav"),
    job_body(audioFileURL="https://media.example/corrupt.mp3"),
    job_body(audioFileURL="https://media.example/silence.mp3"),
]
"""A job of every kind the fake tells apart: each licence rule, VOD, errored, silent."""


async def test_todays_job_answers_and_entries_match_types_md_field_by_field() -> None:
    """Today's (strict, not legacy) fake, every job answer at every stage and every entry,
    against the published types: all 13 checks in job answers, ``outputFileType`` Audio."""
    fake = FakeService(seed=3, clock=FakeClock(start=START), processing_delay=4.0)
    async with fake:
        fake.add_service_licence("licensed@club.example")
        answers = [await get(fake, "POST", JOB, body) for body in STRICT_JOBS]
        ids = [a["id"] for a in answers]
        for step in (1.0, 10.0):  # mid-processing, then finished (output files made)
            fake.advance(step)
            answers += [await get(fake, "GET", f"{JOB}/{i}") for i in ids]
        fake.submit(ids[0])
        answers.append(await get(fake, "GET", f"{JOB}/{ids[0]}"))
        search = await get(fake, "POST", f"{JOB}/search", {"tags": ["strict"], "limit": 100})
        answers += search["results"]
        event = fake.add_event(1, "Strict Open", multiple_select=["Pom", "Jazz"])
        made = [fake.add_entry(event, recording=scenario) for scenario in SCENARIOS]
        made.append(fake.add_entry(event, email=None, fields={"styles": ["Pom"]}))
        made.append(fake.add_entry(season_id=1, recording="partial"))
        entries = [fake.entry(i) for i in made]
        entries += await get(fake, "POST", f"{V1}/event/{event}/entries", {})
    problems = arr(job_of(legacy=False))(answers, "jobs")
    problems += arr(entry_of(legacy=False))(entries, "entries")
    assert problems == []
    songs = [s for a in answers if a["recording"] for s in a["recording"]["songs"]]
    checked = [s["licenseChecks"] for s in songs if s["licenseChecks"] is not None]
    assert checked and all(len(set(c) - {"Territory Match"}) == 13 for c in checked)
    assert {a["status"] for a in answers} >= {"Created", "Processed", "Submitted", "Errored"}
    assert {a["outputFileType"] for a in answers} == {"Audio"}
    assert any(a["outputFiles"] for a in answers)


def _songs(answers: dict[str, Any]) -> list[dict[str, Any]]:
    recs = [e["soundRecording"] for e in answers["entries"] if e["soundRecording"]]
    recs += [j["recording"] for j in answers["jobs"] if j["recording"]]
    return [s for r in recs for s in r["songs"]]


async def test_todays_optional_shapes_occur_at_realistic_rates() -> None:
    async with FakeService(seed=5, clock=FakeClock(start=START)) as fake:
        got = await everything(fake)
    songs = _songs(got)
    seen: Counter[str] = Counter()
    for s in songs:
        seen["unchecked"] += s["licenseData"] is None and s["licenseChecks"] is None
        seen["manual"] += isinstance(s["manualStatus"], dict)
        seen["mix id"] += isinstance(s["svcMixId"], int)
        data = s["licenseData"] or {}
        seen["null svc link"] += (
            bool(data.get("svcLicense")) and data["svcLicense"]["downloadURL"] is None
        )
        ext = data.get("externalLicense") or {"files": []}
        seen["null file link"] += any(f["downloadURL"] is None for f in ext["files"])
        seen["13 checks"] += ARRANGEMENT in (s["licenseChecks"] or {})
    recs = [e["soundRecording"] for e in got["entries"] if e["soundRecording"]]
    seen["md5"] = sum(isinstance(r["md5Hash"], str) for r in recs)
    seen["no md5"] = sum(r["md5Hash"] is None for r in recs)
    seen["null email"] = sum(e["email"] is None for e in got["entries"])
    seen["list answer"] = sum(
        isinstance(f["value"], list) for e in got["entries"] for f in e["fields"]
    )
    seen["no territory"] = sum(e["territory"] is None for e in got["events"])
    seen["null invite"] = sum(s["inviteURL"] is None for s in got["seasons"])
    # Each occurs, and none is the rule: the common shapes stay common too.
    rare = ("unchecked", "manual", "null svc link", "null file link", "no md5", "null email")
    for name in (*rare, "mix id"):
        assert seen[name] > 0, (name, seen)
    for name in rare:
        assert seen[name] < len(songs) / 3, (name, seen)
    assert seen["13 checks"] > len(songs) / 2 and seen["md5"] > seen["no md5"]
    assert seen["list answer"] and seen["no territory"] == 1 and seen["null invite"] == 1
    assert any(f["type"] == "multipleSelect" for e in got["events"] for f in e["signupFields"])


async def test_legacy_mode_never_shows_todays_shapes() -> None:
    async with FakeService(seed=5, clock=FakeClock(start=START), legacy=True) as fake:
        got = await everything(fake)
    songs = _songs(got)
    assert songs and all(s["licenseData"] is not None for s in songs)
    assert all(s["manualStatus"] is None for s in songs)
    assert all(ARRANGEMENT not in s["licenseChecks"] for s in songs)
    assert {type(s["svcMixId"]) for s in songs} == {str, type(None)}
    assert all("md5Hash" not in e["soundRecording"] for e in got["entries"] if e["soundRecording"])
    assert all(e["territory"] for e in got["events"])
    assert "jobs" in got["search"] and "results" not in got["search"]
    assert {j["status"] for j in got["jobs"]} == {"Completed", "Errored"}
    assert all("editURL" not in j for j in got["jobs"])
    assert any("inviteURL" not in s for s in got["seasons"])  # omitted, as in the examples
