"""The fake accepts and refuses requests exactly as the service's published request rules say.

Each probe is (endpoint, body change, accepted?, issue path when refused). Refusals
are 400 ``{statusCode, error, message}`` whose message is a JSON-encoded issue list.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from svc_async.testing import FakeClock, FakeService

START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC).timestamp()
V1 = "/api/public/v1"
DROP = object()  # remove the key


def create_body() -> dict[str, Any]:
    return {
        "name": "Sample Producer",
        "email": "producer@service.example",
        "requiredTerritories": ["US", "GB"],
        "startDate": "2024-09-01",
        "endDate": "2024-09-04",
        "externalId": "1234567890",
        "organisationId": 1,
        "audioFileURL": "https://media.example/mix.mp3",
        "tags": ["Seniors"],
        "licenseDetails": [
            {
                "licenseSource": "Other",
                "licenseSourceName": "Other Platform",
                "licenseFileURLs": ["https://media.example/licence.pdf"],
            }
        ],
    }


def detail(**change: Any) -> list[dict[str, Any]]:
    one = {**create_body()["licenseDetails"][0], **change}
    return [{k: v for k, v in one.items() if v is not DROP}]


CREATE = f"{V1}/verification-job"
SEARCH = f"{V1}/verification-job/search"
EVENTS = f"{V1}/event"
ENTRIES = f"{V1}/event/1/entries"

# (path, change to the base body, accepted, path of an issue when refused)
PROBES: list[tuple[str, dict[str, Any], bool, list[Any] | None]] = [
    # create: email
    (CREATE, {}, True, None),
    (CREATE, {"email": None}, True, None),
    (CREATE, {"email": DROP}, False, ["email"]),
    (CREATE, {"email": "not-an-email"}, False, ["email"]),
    (CREATE, {"email": "a@b"}, False, ["email"]),
    (CREATE, {"email": "first.last+tag@club.example.co.uk"}, True, None),
    (CREATE, {"email": 5}, False, ["email"]),
    # create: externalId
    (CREATE, {"externalId": None}, True, None),
    (CREATE, {"externalId": DROP}, False, ["externalId"]),
    (CREATE, {"externalId": 12}, False, ["externalId"]),
    # create: territories
    (CREATE, {"requiredTerritories": ["us", "gb"]}, True, None),
    (CREATE, {"requiredTerritories": ["USA"]}, False, ["requiredTerritories", 0]),
    (CREATE, {"requiredTerritories": ["G"]}, False, ["requiredTerritories", 0]),
    (CREATE, {"requiredTerritories": []}, True, None),
    # create: tags
    (CREATE, {"tags": DROP}, False, ["tags"]),
    (CREATE, {"tags": []}, True, None),
    (CREATE, {"tags": ["a"]}, False, ["tags", 0]),
    (CREATE, {"tags": ["ab"]}, True, None),
    (CREATE, {"tags": ["x" * 255]}, True, None),
    (CREATE, {"tags": ["x" * 256]}, False, ["tags", 0]),
    (CREATE, {"tags": ["ok", 3]}, False, ["tags", 1]),
    # create: licence details
    (CREATE, {"licenseDetails": DROP}, False, ["licenseDetails"]),
    (CREATE, {"licenseDetails": []}, True, None),
    (
        CREATE,
        {"licenseDetails": detail(licenseSource="Spotify")},
        False,
        ["licenseDetails", 0, "licenseSource"],
    ),
    (CREATE, {"licenseDetails": detail(licenseSource="Stock Arrangement")}, True, None),
    (CREATE, {"licenseDetails": detail(licenseSource="Public Domain Music")}, True, None),
    (
        CREATE,
        {"licenseDetails": detail(licenseFileURLs=["not a url"])},
        False,
        ["licenseDetails", 0, "licenseFileURLs", 0],
    ),
    (
        CREATE,
        {"licenseDetails": detail(licenseSourceName=DROP)},
        False,
        ["licenseDetails", 0, "licenseSourceName"],
    ),
    # create: type and output file
    (CREATE, {"type": "VOD"}, True, None),
    (CREATE, {"type": "Routine"}, True, None),
    (CREATE, {"type": "Live"}, False, ["type"]),
    (CREATE, {"type": "VOD", "outputFile": {"operation": "Mute"}}, True, None),
    (
        CREATE,
        {
            "outputFile": {
                "operation": "Mute",
                "fileType": "Audio",
                "callbackURL": "http://127.0.0.1:9/cb",
            }
        },
        True,
        None,
    ),
    (CREATE, {"outputFile": {"operation": "Cut"}}, False, ["outputFile", "operation"]),
    (CREATE, {"outputFile": {}}, False, ["outputFile", "operation"]),
    (
        CREATE,
        {"outputFile": {"operation": "Mute", "fileType": "Video"}},
        False,
        ["outputFile", "fileType"],
    ),
    (CREATE, {"outputFileType": "Audio"}, True, None),
    (CREATE, {"organisationId": "1"}, False, ["organisationId"]),
    (CREATE, {"startDate": "01/09/2024"}, False, ["startDate"]),
    (CREATE, {"audioFileURL": "mix.mp3"}, False, ["audioFileURL"]),
    (CREATE, {"somethingNew": {"x": 1}}, True, None),
    # search
    (SEARCH, {"tags": ["a"]}, True, None),
    (SEARCH, {"tags": ["x" * 300]}, True, None),
    (SEARCH, {"tags": [f"t{i}" for i in range(100)]}, True, None),
    (SEARCH, {"tags": [f"t{i}" for i in range(101)]}, False, ["tags"]),
    (SEARCH, {"statuses": ["Processed", "Submitted", "Errored"]}, True, None),
    (SEARCH, {"statuses": ["Matched"]}, True, None),
    (SEARCH, {"statuses": ["Completed"]}, False, ["statuses", 0]),
    (SEARCH, {"statuses": ["Confirmed"]}, False, ["statuses", 0]),
    (SEARCH, {"limit": 100}, True, None),
    (SEARCH, {"limit": 101}, False, ["limit"]),
    (SEARCH, {"orgId": "1"}, False, ["orgId"]),
    (SEARCH, {"unknown": True}, True, None),
    # events
    (EVENTS, {"limit": 100}, True, None),
    (EVENTS, {"limit": 101}, False, ["limit"]),
    (EVENTS, {"limit": "10", "offset": "2"}, True, None),
    (EVENTS, {"limit": "ten"}, False, ["limit"]),
    (EVENTS, {"organisationId": "5"}, True, None),
    (EVENTS, {"offset": -1}, False, ["offset"]),
    # entries
    (ENTRIES, {"updatedAfter": None}, True, None),
    (ENTRIES, {"updatedAfter": "2024-10-16"}, True, None),
    (ENTRIES, {"updatedAfter": "2024-10-16T20:00:00.000Z"}, True, None),
    (ENTRIES, {"updatedAfter": "2024-10-16T20:00:00+01:00"}, True, None),
    (ENTRIES, {"updatedAfter": "Wed, 16 Oct 2024 20:00:00 GMT"}, True, None),
    (ENTRIES, {"updatedAfter": "yesterday"}, False, ["updatedAfter"]),
    (ENTRIES, {"updatedAfter": 1729108800}, False, ["updatedAfter"]),
    (ENTRIES, {"fields": None}, True, None),
    (ENTRIES, {"fields": [{"key": "division", "value": "Group"}]}, True, None),
    (ENTRIES, {"fields": [{"key": "division", "value": ["Group"]}]}, False, ["fields", 0, "value"]),
    (ENTRIES, {"fields": [{"signupFieldId": 30, "value": "Group"}]}, False, ["fields", 0, "key"]),
    (ENTRIES, {"fields": [{"key": 3, "value": "Group"}]}, False, ["fields", 0, "key"]),
    (ENTRIES, {"fields": {"key": "division"}}, False, ["fields"]),
]


def _body(path: str, change: dict[str, Any]) -> dict[str, Any]:
    body = create_body() if path == CREATE else {}
    for key, value in change.items():
        if value is DROP:
            body.pop(key, None)
        else:
            body[key] = value
    return body


@pytest.fixture
async def fake() -> AsyncIterator[FakeService]:
    async with FakeService(seed=1, clock=FakeClock(start=START), rate_limit=None) as f:
        yield f


@pytest.mark.parametrize(
    ("path", "change", "accepted", "where"),
    PROBES,
    ids=[f"{p.rsplit('/', 1)[-1]}-{i}" for i, (p, *_rest) in enumerate(PROBES)],
)
async def test_probe(
    fake: FakeService, path: str, change: dict[str, Any], accepted: bool, where: list[Any] | None
) -> None:
    outcome = await fake.handle(
        "POST",
        path,
        headers={"Authorization": f"Bearer {FakeService.DEFAULT_TOKEN}"},
        body=orjson.dumps(_body(path, change)),
    )
    data = orjson.loads(outcome.body)
    if accepted:
        assert outcome.status == 200, data
        return
    assert outcome.status == 400, data
    assert set(data) == {"statusCode", "error", "message"}
    assert data["statusCode"] == 400 and data["error"] == "Bad Request"
    found = orjson.loads(data["message"])
    assert isinstance(found, list) and all({"code", "path", "message"} <= set(i) for i in found)
    assert where in [i["path"] for i in found], found


def test_enough_probes_on_both_sides() -> None:
    assert len(PROBES) >= 40
    assert sum(p[2] for p in PROBES) >= 20 and sum(not p[2] for p in PROBES) >= 20


async def test_unknown_keys_are_dropped_and_nulls_kept(fake: FakeService) -> None:
    body = _body(CREATE, {"email": None, "externalId": None, "colour": "red", "type": "VOD"})
    outcome = await fake.handle(
        "POST",
        CREATE,
        headers={"Authorization": f"Bearer {FakeService.DEFAULT_TOKEN}"},
        body=orjson.dumps(body),
    )
    job = orjson.loads(outcome.body)
    assert job["email"] is None and job["externalId"] is None and job["type"] == "VOD"
    assert "colour" not in fake.state.jobs[job["id"]].request


async def test_legacy_search_accepts_the_old_statuses() -> None:
    async with FakeService(clock=FakeClock(start=START), legacy=True) as fake:
        outcome = await fake.handle(
            "POST",
            SEARCH,
            headers={"Authorization": f"Bearer {FakeService.DEFAULT_TOKEN}"},
            body=orjson.dumps({"statuses": ["Completed", "Errored"]}),
        )
        assert outcome.status == 200
        answer = orjson.loads(outcome.body)
        assert answer["count"] == 4 and len(answer["jobs"]) == 4
