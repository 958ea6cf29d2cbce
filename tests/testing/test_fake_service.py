"""FakeService at the wire level: auth, scoping, paging, entries, jobs, search, limits."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp
import orjson
import pytest
import yarl

from svc_async._transports.base import Request, Response, StreamingTransport, Timeout
from svc_async.testing import FakeClock, FakeService

BASE = "http://fake.invalid"
TOKEN = FakeService.DEFAULT_TOKEN
START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC).timestamp()
JOB = "/api/public/v1/verification-job"


def make_request(
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = TOKEN,
    timeout: float | None = None,
    headers: dict[str, str] | None = None,
) -> Request:
    """An SDK Request for ``path`` on the fake's in-process base URL."""
    all_headers = dict(headers or {})
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    content = None
    if body is not None:
        content = body if isinstance(body, bytes) else orjson.dumps(body)
        all_headers["Content-Type"] = "application/json"
    url = yarl.URL(path) if path.startswith("http") else yarl.URL(BASE + path)
    return Request(
        method,
        url,
        headers=all_headers,
        content=content,
        timeout=Timeout(total=timeout) if timeout is not None else None,
    )


async def call(
    fake: FakeService, method: str, path: str, body: Any = None, **kwargs: Any
) -> tuple[int, Response, Any]:
    """One in-process request: (status, response, decoded JSON or None)."""
    resp = await fake.transport().send(make_request(method, path, body, **kwargs))
    try:
        data = resp.json()
    except orjson.JSONDecodeError:
        data = None
    return resp.status, resp, data


def job_request(**overrides: Any) -> dict[str, Any]:
    """A valid create-job body (the service's own example), with overrides."""
    body: dict[str, Any] = {
        "name": "Sample Producer",
        "email": "producer@service.example",
        "requiredTerritories": ["US", "GB"],
        "startDate": "2024-09-01",
        "endDate": "2024-09-04",
        "externalId": "1234567890",
        "organisationId": 1,
        "audioFileURL": "https://media.example/lvs/TEST_MIX.mp3",
        "tags": ["September Event 2024", "2024", "Seniors"],
        "licenseDetails": [
            {
                "licenseSource": "Other",
                "licenseSourceName": "Other Platform",
                "licenseFileURLs": ["https://media.example/lvs/TEST_LICENSE.pdf"],
            }
        ],
    }
    body.update(overrides)
    return body


def issues(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The validation issues JSON-encoded in a 400 body's message."""
    assert data["statusCode"] == 400
    assert data["error"] == "Bad Request"
    result: list[dict[str, Any]] = orjson.loads(data["message"])
    return result


@pytest.fixture
async def fake() -> AsyncIterator[FakeService]:
    """A demo fake on a frozen clock, closed afterwards."""
    async with FakeService(seed=3, clock=FakeClock(start=START), processing_delay=4.0) as f:
        yield f


# ---------------------------------------------------------------- data and determinism


async def _snapshot(fake: FakeService) -> list[Any]:
    out = []
    for method, path in (
        ("GET", "/api/orgs/me"),
        ("GET", "/api/public/v1/season"),
        ("POST", "/api/public/v1/event"),
        ("POST", "/api/public/v1/event/1/entries"),
        ("POST", "/api/public/v1/season/1/entries"),
    ):
        _, _, data = await call(fake, method, path)
        out.append(data)
    return out


async def test_same_seed_same_data_and_other_seed_differs() -> None:
    a = FakeService(seed=7, clock=FakeClock(start=START))
    b = FakeService(seed=7, clock=FakeClock(start=START))
    c = FakeService(seed=8, clock=FakeClock(start=START))
    snap_a, snap_b, snap_c = await _snapshot(a), await _snapshot(b), await _snapshot(c)
    assert snap_a == snap_b
    assert snap_a != snap_c
    for f in (a, b, c):
        await f.aclose()


async def test_demo_tree_and_coverage(fake: FakeService) -> None:
    _, _, orgs = await call(fake, "GET", "/api/orgs/me")
    assert len(orgs) == 10
    roots = [o for o in orgs if o["parentId"] is None]
    assert len(roots) == 1 and "logo" in roots[0]
    assert sum(o["parentId"] == roots[0]["id"] for o in orgs) == 3
    _, _, events = await call(fake, "POST", "/api/public/v1/event", {"limit": 100})
    assert len(events) == 12
    assert {"GB", "US", "IE", "CA", "AU"} <= {e["territory"] for e in events}
    _, _, seasons = await call(fake, "GET", "/api/public/v1/season")
    assert 2 <= len(seasons) <= 3
    types = {f["type"] for s in seasons for f in s["signupFields"]}
    assert types == {"shortAnswer", "singleSelect"}
    assert all(f["key"] is None for s in seasons for f in s["signupFields"])
    recording_states, song_sources, rec_statuses = set(), set(), set()
    for event in events:
        _, _, entries = await call(fake, "POST", f"/api/public/v1/event/{event['id']}/entries")
        assert 5 <= len(entries) <= 15
        for entry in entries:
            rec = entry["soundRecording"]
            if rec is None:
                continue
            recording_states.add(rec["licenseStatus"])
            rec_statuses.add(rec["status"])
            for song in rec["songs"]:
                if song["licenseData"] is None:  # not checked yet (today's service)
                    assert song["licenseChecks"] is None
                    continue
                song_sources.add((song["licenseData"]["licenseSource"], song["licenseStatus"]))
                assert "Master Choreography Rights" in song["licenseChecks"]
    assert recording_states == {"Licensed", "Partially Licensed", "Pending", "Unverified"}
    assert rec_statuses == {"Complete", "Failed"}
    assert {
        ("Service", "Licensed"),
        ("Other", "Licensed"),
        ("Other", "Unverified"),
        ("Bespoke Music", "Pending"),
        ("Pending License", "Unverified"),
    } <= song_sources


# ---------------------------------------------------------------- auth


async def test_login_refresh_and_expiry() -> None:
    fake = FakeService(clock=FakeClock(start=START), token_ttl=30, demo_data=False)
    key, secret = FakeService.DEFAULT_API_KEY
    status, _, pair = await call(
        fake, "POST", "/api/auth/api-key/login", {"key": key, "secret": secret}, token=None
    )
    assert status == 200 and set(pair) == {"accessToken", "refreshToken"}
    status, _, orgs = await call(fake, "GET", "/api/orgs/me", token=pair["accessToken"])
    assert status == 200 and [o["id"] for o in orgs] == [1]

    fake.advance(31)
    status, _, body = await call(fake, "GET", "/api/orgs/me", token=pair["accessToken"])
    assert status == 401 and body["statusCode"] == 401

    refresh = "/api/auth/access-token/refresh"
    status, _, pair2 = await call(
        fake, "POST", refresh, {"refreshToken": pair["refreshToken"]}, token=None
    )
    assert status == 200 and pair2["accessToken"] != pair["accessToken"]
    assert (await call(fake, "GET", "/api/orgs/me", token=pair2["accessToken"]))[0] == 200
    # A refresh token works once.
    again = await call(fake, "POST", refresh, {"refreshToken": pair["refreshToken"]}, token=None)
    assert again[0] == 401
    fake.expire_tokens()
    assert (await call(fake, "GET", "/api/orgs/me", token=pair2["accessToken"]))[0] == 401

    wrong = {"key": key, "secret": "nope"}
    assert (await call(fake, "POST", "/api/auth/api-key/login", wrong, token=None))[0] == 401
    status, _, body = await call(fake, "POST", "/api/auth/api-key/login", {}, token=None)
    assert status == 400 and {tuple(i["path"]) for i in issues(body)} == {("key",), ("secret",)}
    assert (await call(fake, "GET", "/api/orgs/me", token=None))[0] == 401
    assert (await call(fake, "GET", "/api/orgs/me", token="unknown"))[0] == 401


async def test_scoping_region_account(fake: FakeService) -> None:
    region = FakeService.REGION_TOKEN
    _, _, orgs = await call(fake, "GET", "/api/orgs/me", token=region)
    assert [o["id"] for o in orgs] == [2, 5, 6]
    _, _, events = await call(fake, "POST", "/api/public/v1/event", token=region)
    assert events and {e["organisationId"] for e in events} <= {2, 5, 6}
    _, _, seasons = await call(fake, "GET", "/api/public/v1/season", token=region)
    assert {s["organisationId"] for s in seasons} <= {2, 5, 6}
    # Event 1 belongs to the root organisation: invisible, answered like an unknown id.
    assert (await call(fake, "POST", "/api/public/v1/event/1/entries", token=region))[0] == 404
    assert (await call(fake, "POST", "/api/public/v1/event/999/entries"))[0] == 404
    # An organisation named in a body that the account cannot see: 403.
    body = {"organisationId": 1}
    assert (await call(fake, "POST", "/api/public/v1/event", body, token=region))[0] == 403
    assert (await call(fake, "POST", JOB, job_request(), token=region))[0] == 403
    assert (await call(fake, "POST", f"{JOB}/search", {"orgId": 1}, token=region))[0] == 403
    assert (await call(fake, "GET", f"{JOB}/1", token=region))[0] == 404
    assert (await call(fake, "GET", f"{JOB}/1"))[0] == 200


# ---------------------------------------------------------------- paging and validation


async def test_event_paging_defaults_max_and_validation(fake: FakeService) -> None:
    for n in range(20):
        fake.add_event(5, f"Extra event {n}", territory="GB")
    _, _, page = await call(fake, "POST", "/api/public/v1/event")
    assert len(page) == 25
    ids = [e["id"] for e in page]
    assert ids == sorted(ids)
    _, _, second = await call(fake, "POST", "/api/public/v1/event", {"limit": 20, "offset": 20})
    _, _, everything = await call(fake, "POST", "/api/public/v1/event", {"limit": 100})
    assert [e["id"] for e in second] == [e["id"] for e in everything[20:40]]
    assert len(everything) == 32
    _, _, club = await call(fake, "POST", "/api/public/v1/event", {"organisationId": 5})
    assert {e["organisationId"] for e in club} == {5}

    status, _, body = await call(fake, "POST", "/api/public/v1/event", {"limit": 101})
    assert status == 400 and issues(body)[0]["code"] == "too_big"
    status, _, body = await call(fake, "POST", "/api/public/v1/event", {"limit": -1})
    assert status == 400 and issues(body)[0]["code"] == "too_small"
    status, _, body = await call(fake, "POST", "/api/public/v1/event", {"offset": "x"})
    assert status == 400
    assert issues(body) == [
        {
            "code": "invalid_type",
            "expected": "number",
            "received": "nan",
            "path": ["offset"],
            "message": "Expected number, received nan",
        }
    ]
    status, _, body = await call(fake, "POST", "/api/public/v1/event", b"{not json")
    assert status == 400 and body["error"] == "Bad Request"


async def test_unknown_path_wrong_method_and_bad_ids(fake: FakeService) -> None:
    status, _, body = await call(fake, "GET", "/api/public/v1/nothing")
    assert status == 404 and body["statusCode"] == 404
    status, resp, _ = await call(fake, "DELETE", "/api/orgs/me")
    assert status == 405 and resp.headers["Allow"] == "GET"
    status, _, body = await call(fake, "POST", "/api/public/v1/event/abc/entries")
    assert status == 400 and issues(body)[0]["path"] == ["id"]
    assert (await call(fake, "GET", f"{JOB}/xyz"))[0] == 400


# ---------------------------------------------------------------- entries


async def test_updated_after_and_field_filters(fake: FakeService) -> None:
    path = "/api/public/v1/event/2/entries"
    _, _, entries = await call(fake, "POST", path, {})
    with_rec = [e for e in entries if e["soundRecording"]]
    fake.advance(60)
    cursor = dt.datetime.fromtimestamp(fake.now(), tz=dt.UTC).isoformat()
    _, _, none = await call(fake, "POST", path, {"updatedAfter": cursor})
    assert none == []
    fake.advance(1)
    stamp = fake.touch_recording(with_rec[0]["id"])
    _, _, changed = await call(fake, "POST", path, {"updatedAfter": cursor})
    assert [e["id"] for e in changed] == [with_rec[0]["id"]]
    assert changed[0]["soundRecording"]["updatedAt"] == stamp
    # Old cursor: every entry with a recording, none without.
    _, _, old = await call(fake, "POST", path, {"updatedAfter": "2000-01-01T00:00:00.000Z"})
    assert [e["id"] for e in old] == [e["id"] for e in with_rec]
    status, _, body = await call(fake, "POST", path, {"updatedAfter": "2024-10-16:20:00.000Z"})
    assert status == 400 and issues(body)[0]["path"] == ["updatedAfter"]

    target = entries[0]["fields"][2]
    by_key = {"fields": [{"key": target["key"], "value": target["value"]}]}
    _, _, hits = await call(fake, "POST", path, by_key)
    assert hits and all(
        any(f["key"] == target["key"] and f["value"] == target["value"] for f in e["fields"])
        for e in hits
    )
    shouted = {"fields": [{"key": target["key"].upper(), "value": target["value"].upper()}]}
    assert (await call(fake, "POST", path, shouted))[2] == hits  # matching ignores case
    by_id = {"fields": [{"signupFieldId": target["signupFieldId"], "value": target["value"]}]}
    assert (await call(fake, "POST", path, by_id))[0] == 400  # key is required
    nothing = {"fields": [{"key": "division", "value": "Nobody"}]}
    assert (await call(fake, "POST", path, nothing))[2] == []


async def test_season_entries_are_their_events_entries(fake: FakeService) -> None:
    _, _, events = await call(fake, "POST", "/api/public/v1/event", {"limit": 100})
    expected: list[int] = []
    for event in events:
        if event["id"] in {e.id for e in fake.state.events.values() if e.season_id == 2}:
            _, _, entries = await call(fake, "POST", f"/api/public/v1/event/{event['id']}/entries")
            expected.extend(e["id"] for e in entries)
    direct = fake.add_entry(season_id=2, name="Direct Entry", fields={"externalId": "42"})
    _, _, season_entries = await call(fake, "POST", "/api/public/v1/season/2/entries")
    assert [e["id"] for e in season_entries] == sorted([*expected, direct])
    assert (await call(fake, "POST", "/api/public/v1/season/99/entries"))[0] == 404


# ---------------------------------------------------------------- jobs


async def test_job_lifecycle_on_the_fake_clock(fake: FakeService) -> None:
    fake.processing_delay = 5.0
    status, _, created = await call(fake, "POST", JOB, job_request())
    assert status == 200
    assert created["status"] == "Created" and created["recording"] is None
    assert created["soundRecordingId"] is None and created["errorMessage"] == ""
    assert created["startDate"] == "2024-09-01T00:00:00.000Z"
    seen = []
    for _ in range(6):
        _, _, job = await call(fake, "GET", f"{JOB}/{created['id']}")
        seen.append(job["status"])
        fake.advance(1.0)
    assert seen == ["Created", "Downloading", "DetectingMusic", "Matching", "Matched", "Processed"]
    assert job["soundRecordingId"] is not None
    rec = job["recording"]
    assert rec["status"] == "Complete" and rec["songs"]
    for song in rec["songs"]:
        checks = song["licenseChecks"]
        masters = {"Master Choreography Rights", "Master Adaptation Rights"}
        assert masters | {"Master Duplication Rights"} <= set(checks)  # all 13 today
        assert set(checks["Territory Match"]) == {"US", "GB"}
        assert song["licenseData"]["licenseSource"] in {"Service", "Other"}
    assert fake.jobs[created["id"]]["status"] == "Processed"
    # Same request, same verdict (derived deterministically).
    _, _, other = await call(fake, "POST", JOB, job_request())
    fake.finish_job(other["id"])
    again = fake.job(other["id"])["recording"]["songs"]
    assert [s["title"] for s in again] == [s["title"] for s in rec["songs"]]


async def test_job_outcomes_follow_the_documented_rules(fake: FakeService) -> None:
    async def run(**overrides: Any) -> dict[str, Any]:
        _, _, created = await call(fake, "POST", JOB, job_request(**overrides))
        fake.advance(4.0)
        return (await call(fake, "GET", f"{JOB}/{created['id']}"))[2]  # type: ignore[no-any-return]

    errored = await run(audioFileURL="https://media.example/corrupt.mp3")
    assert errored["status"] == "Errored" and errored["errorMessage"]
    assert errored["recording"] is None
    assert (await run(audioFileURL="https://media.example/notes.txt"))["status"] == "Errored"
    silent = await run(audioFileURL="https://media.example/silence.mp3")
    assert silent["status"] == "Processed" and silent["recording"]["status"] == "Failed"
    assert silent["recording"]["songs"] == []

    other = {"licenseSource": "Other", "licenseSourceName": "X", "licenseFileURLs": []}
    rejected = await run(
        email="nobody@club.example",
        licenseDetails=[{**other, "licenseFileURLs": ["https://l.example/reject.pdf"]}],
    )
    for song in rejected["recording"]["songs"]:
        assert song["licenseStatus"] == "Unverified"
        assert song["licenseChecks"]["Licensee Name Match"] == "Rejected"
        files = song["licenseData"]["externalLicense"]["files"]
        # A link may be null today (no file to show); present ones carry their token.
        assert files and all(f["downloadURL"] is None or "t=" in f["downloadURL"] for f in files)
    assert rejected["recording"]["licenseStatus"] == "Unverified"
    accepted = await run(
        email="nobody@club.example",
        licenseDetails=[{**other, "licenseFileURLs": ["https://l.example/ok.pdf"]}],
    )
    assert accepted["recording"]["licenseStatus"] == "Licensed"
    unlicensed = await run(email="nobody@club.example", licenseDetails=[])
    sources = {
        s["licenseData"]["licenseSource"] if s["licenseData"] else None
        for s in unlicensed["recording"]["songs"]
    }
    assert sources and sources <= {"Pending License", None}  # None: not checked yet
    fake.add_service_licence("held@club.example", territories=["US"])
    held = await run(email="held@club.example", licenseDetails=[])
    for song in held["recording"]["songs"]:
        assert song["licenseData"]["licenseSource"] == "Service"
        assert song["licenseData"]["svcLicense"]["territories"] == ["US"]
        assert song["licenseChecks"]["Territory Match"] == {"US": "Accepted", "GB": "Rejected"}


async def test_zero_delay_create_still_answers_created() -> None:
    async with FakeService(clock=FakeClock(start=START), processing_delay=0.0) as fake:
        transport = fake.transport()
        assert isinstance(transport, StreamingTransport)
        resp = await transport.send(make_request("POST", JOB, job_request()))
        created = resp.json()
        assert created["status"] == "Created" and created["recording"] is None
        job = (await transport.send(make_request("GET", f"{JOB}/{created['id']}"))).json()
        assert job["status"] == "Processed" and job["recording"] is not None
        outcome = await fake.handle(
            "GET", f"{JOB}/{created['id']}", headers={"authorization": f"bearer {TOKEN}"}
        )
        assert outcome.status == 200 and orjson.loads(outcome.body)["id"] == created["id"]
        await transport.aclose()


@pytest.mark.parametrize(
    ("override", "path"),
    [
        ({"email": "not-an-email"}, ["email"]),
        ({"requiredTerritories": ["usa"]}, ["requiredTerritories", 0]),
        ({"startDate": "01/09/2024"}, ["startDate"]),
        ({"audioFileURL": "ftp://x/y.mp3"}, ["audioFileURL"]),
        ({"organisationId": "1"}, ["organisationId"]),
        ({"tags": ["ok", 3]}, ["tags", 1]),
        (
            {"licenseDetails": [{"licenseSource": "Other"}]},
            ["licenseDetails", 0, "licenseSourceName"],
        ),
        ({"name": None}, ["name"]),
    ],
)
async def test_create_job_validation(
    fake: FakeService, override: dict[str, Any], path: list[Any]
) -> None:
    status, _, body = await call(fake, "POST", JOB, job_request(**override))
    assert status == 400
    found = issues(body)
    assert path in [i["path"] for i in found]
    assert all({"code", "path", "message"} <= set(i) for i in found)
    assert not fake.state.jobs or all(j.request["name"] for j in fake.state.jobs.values())


async def test_search_all_tags_count_statuses_and_lag(fake: FakeService) -> None:
    fake.search_lag = 5.0
    fake.processing_delay = 100.0
    search = f"{JOB}/search"
    _, _, before = await call(fake, "POST", search, {"tags": []})
    base_count = before["count"]
    ids = []
    for n in range(4):
        tags = ["batch", f"n{n}"] + (["even"] if n % 2 == 0 else [])
        ids.append((await call(fake, "POST", JOB, job_request(tags=tags)))[2]["id"])
    _, _, hidden = await call(fake, "POST", search, {"tags": ["batch"]})
    assert hidden == {"results": [], "count": 0}
    fake.advance(5.0)
    _, _, found = await call(fake, "POST", search, {"tags": ["batch"]})
    assert found["count"] == 4 and [j["id"] for j in found["results"]] == ids
    _, _, both = await call(fake, "POST", search, {"tags": ["batch", "even"]})
    assert [j["id"] for j in both["results"]] == [ids[0], ids[2]]
    _, _, page = await call(fake, "POST", search, {"tags": ["batch"], "limit": 1, "offset": 1})
    assert page["count"] == 4 and [j["id"] for j in page["results"]] == [ids[1]]
    _, _, everything = await call(fake, "POST", search, {})
    assert everything["count"] == base_count + 4
    fake.finish_job(ids[3])
    _, _, done = await call(fake, "POST", search, {"tags": ["batch"], "statuses": ["Processed"]})
    assert [j["id"] for j in done["results"]] == [ids[3]]
    _, _, club = await call(fake, "POST", search, {"orgId": 5})
    assert club["count"] == 0
    assert (await call(fake, "POST", search, {"limit": 101}))[0] == 400
    assert (await call(fake, "GET", f"{JOB}/99999"))[0] == 404


# ---------------------------------------------------------------- limits and headers


async def test_rate_limit_is_enforced_per_token() -> None:
    fake = FakeService(clock=FakeClock(start=START), rate_limit=(3, 10.0))
    remaining = []
    for _ in range(3):
        status, resp, _ = await call(fake, "GET", "/api/orgs/me")
        assert status == 200 and resp.headers["x-ratelimit-limit"] == "3"
        remaining.append(resp.headers["x-ratelimit-remaining"])
    assert remaining == ["2", "1", "0"]
    status, resp, body = await call(fake, "GET", "/api/orgs/me")
    assert status == 429 and body["statusCode"] == 429
    assert resp.headers["x-ratelimit-reset"] == "10" and resp.headers["Retry-After"] == "10"
    # Another token has its own budget.
    region = FakeService.REGION_TOKEN
    assert (await call(fake, "GET", "/api/orgs/me", token=region))[0] == 200
    assert fake.rate_limited == 1
    fake.advance(10.0)
    assert (await call(fake, "GET", "/api/orgs/me"))[0] == 200
    fake.rate_limit = None
    for _ in range(5):
        status, resp, _ = await call(fake, "GET", "/api/orgs/me")
        assert status == 200 and "x-ratelimit-limit" not in resp.headers


async def test_date_header_follows_clock_skew() -> None:
    fake = FakeService(clock=FakeClock(start=START), clock_skew=120.0, demo_data=False)
    _, resp, _ = await call(fake, "GET", "/api/orgs/me")
    assert parsedate_to_datetime(resp.headers["Date"]).timestamp() == START + 120.0
    entry = fake.add_entry(fake.add_event(1, "E"), recording="licensed")
    assert fake.entry(entry)["soundRecording"]["updatedAt"] == "2025-01-01T00:02:00.000Z"
    fake.advance(1.0)
    assert fake.touch_recording(entry) == "2025-01-01T00:02:01.000Z"


async def test_counters_and_recorded_requests(fake: FakeService) -> None:
    await call(fake, "GET", f"{JOB}/1")
    await call(fake, "GET", f"{JOB}/2")
    await call(fake, "POST", "/api/public/v1/event", {"limit": 1})
    assert fake.count("GET", f"{JOB}/{{verificationJobId}}") == 2
    assert fake.calls[("POST", "/api/public/v1/event")] == 1
    last = fake.requests[-1]
    assert last.json == {"limit": 1} and last.headers["Authorization"] == f"Bearer {TOKEN}"
    assert last.status == 200 and last.route == "/api/public/v1/event"
    fake.reset_counters()
    assert fake.requests == [] and fake.count("GET", f"{JOB}/{{verificationJobId}}") == 0


# ---------------------------------------------------------------- files


async def test_signed_links_download_range_and_expiry(fake: FakeService) -> None:
    fake.files.file_size = 1000
    _, _, entries = await call(fake, "POST", "/api/public/v1/event/1/entries")
    url = next(e for e in entries if e["soundRecording"])["soundRecording"]["downloadURL"]
    assert "X-Amz-Signature=" in url and "X-Amz-Expires=216000" in url
    status, resp, _ = await call(fake, "GET", url, token=None)
    assert status == 200 and len(resp.content) == 1000
    again = await call(fake, "GET", url, token=None)
    assert again[1].content == resp.content
    status, part, _ = await call(fake, "GET", url, token=None, headers={"Range": "bytes=990-"})
    assert status == 206 and part.content == resp.content[990:]
    assert part.headers["Content-Range"] == "bytes 990-999/1000"
    tampered = url.replace("X-Amz-Signature=", "X-Amz-Signature=0")
    assert (await call(fake, "GET", tampered, token=None))[0] == 403
    fake.advance(216001)
    status, expired, _ = await call(fake, "GET", url, token=None)
    assert status == 403 and b"<Code>AccessDenied</Code>" in expired.content
    assert b"Request has expired" in expired.content


# ---------------------------------------------------------------- over real sockets


async def test_serve_shares_state_with_the_in_process_transport(fake: FakeService) -> None:
    _, _, created = await call(fake, "POST", JOB, job_request(tags=["shared"]))
    async with fake.serve() as url, aiohttp.ClientSession() as session:
        assert url.startswith("http://127.0.0.1:")
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with session.get(f"{url}{JOB}/{created['id']}", headers=headers) as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("application/json")
            assert "x-ratelimit-remaining" in resp.headers
            job = await resp.json()
        assert job["id"] == created["id"]
        async with session.post(f"{url}{JOB}", json=job_request(), headers=headers) as resp:
            assert resp.status == 200
            over_socket = (await resp.json())["id"]
        async with session.get(f"{url}/api/orgs/me") as resp:
            assert resp.status == 401
        async with session.post(f"{url}/api/public/v1/event/1/entries", headers=headers) as resp:
            entries = await resp.json()
        link = next(e for e in entries if e["soundRecording"])["soundRecording"]["downloadURL"]
        # Signed links live on the files origin: another loopback port.
        assert link.startswith(fake.files_url + "/files/recordings/")
        assert fake.files_url.startswith("http://127.0.0.1:") and fake.files_url != url
        async with session.get(link) as resp:
            assert resp.status == 200 and len(await resp.read()) == fake.files.file_size
    assert over_socket in fake.state.jobs
    assert fake.base_url is None
