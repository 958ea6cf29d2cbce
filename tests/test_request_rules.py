"""Requests mirror the service's published validation rules.

``service_problems`` below is a test-side statement of the service's rules, written from
the service's published rules and not from the SDK's code. Two things are checked against it:

- every request body the SDK sends, over a sweep of calls, breaks none of the rules;
- a table of inputs, each marked with the service's verdict: what the service refuses
  the SDK refuses before sending (a ValueError/TypeError naming the argument), what it
  accepts the SDK sends. A few rows are marked ``SDK`` where the SDK is deliberately
  stricter; each says why.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest

from svc_async import (
    BadRequestError,
    Client,
    JobRequest,
    JobStatus,
    LicenseDetails,
    LicenseSource,
    MockTransport,
    Request,
    Response,
    RetryPolicy,
    json_response,
)
from svc_async.models import JobType, OutputFileRequest
from svc_async.testing import FakeService

from .conftest import load

API = "https://verify.example"

# ------------------------------------------------------------------ the service's rules

SOURCES = {
    "Service",
    "Public Domain Music",
    "Bespoke Music",
    "Stock Arrangement",
    "Other",
    "Pending License",
}
NO_FILES = {"Service", "Pending License"}
"""Sources the service's rules say to give no files for; it does not say the service refuses them."""
CURRENT = [
    "Created",
    "Downloading",
    "DetectingMusic",
    "Matching",
    "Matched",
    "Processed",
    "Submitted",
    "Errored",
]
# A typical server-side email check: local@domain.tld, no spaces, one @, a TLD of 2+ letters.
EMAIL = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}"
)
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
URL = re.compile(r"https?://[^\s/]+(/\S*)?")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _create_problems(body: Any) -> list[str]:
    p: list[str] = []
    required = (
        "name",
        "email",
        "requiredTerritories",
        "startDate",
        "endDate",
        "externalId",
        "organisationId",
        "audioFileURL",
        "tags",
        "licenseDetails",
    )
    p += [f"{key} missing" for key in required if key not in body]
    if p:
        return p
    if not isinstance(body["name"], str):
        p.append("name")
    email = body["email"]
    if email is not None and not (isinstance(email, str) and EMAIL.fullmatch(email)):
        p.append("email")
    territories = body["requiredTerritories"]
    if not isinstance(territories, list) or any(
        not isinstance(t, str) or len(t) != 2 for t in territories
    ):
        p.append("requiredTerritories")
    for key in ("startDate", "endDate"):
        if not (isinstance(body[key], str) and DATE.fullmatch(body[key])):
            p.append(key)
    if body["externalId"] is not None and not isinstance(body["externalId"], str):
        p.append("externalId")
    if not _number(body["organisationId"]):
        p.append("organisationId")
    if not (isinstance(body["audioFileURL"], str) and URL.fullmatch(body["audioFileURL"])):
        p.append("audioFileURL")
    tags = body["tags"]
    if not isinstance(tags, list) or any(
        not isinstance(t, str) or not 2 <= len(t) <= 255 for t in tags
    ):
        p.append("tags")
    details = body["licenseDetails"]
    if not isinstance(details, list):
        p.append("licenseDetails")
    else:
        for d in details:
            files = d.get("licenseFileURLs", [])
            if d.get("licenseSource") not in SOURCES or not isinstance(
                d.get("licenseSourceName"), str
            ):
                p.append("licenseDetails.licenseSource")
            elif not isinstance(files, list) or any(
                not (isinstance(f, str) and URL.fullmatch(f)) for f in files
            ):
                p.append("licenseDetails.licenseFileURLs")
    if "type" in body and body["type"] not in ("VOD", "Routine"):
        p.append("type")
    if "outputFile" in body:
        out = body["outputFile"]
        if not isinstance(out, dict) or out.get("operation") != "Mute":
            p.append("outputFile.operation")
        elif "fileType" in out and out["fileType"] != "Audio":
            p.append("outputFile.fileType")
        elif "callbackURL" in out and not isinstance(out["callbackURL"], str):
            p.append("outputFile.callbackURL")
    return p


def _search_problems(body: Any) -> list[str]:
    p: list[str] = []
    tags = body.get("tags", [])
    if not isinstance(tags, list) or len(tags) > 100 or any(not isinstance(t, str) for t in tags):
        p.append("tags")
    statuses = body.get("statuses", [])
    if not isinstance(statuses, list) or any(s not in CURRENT for s in statuses):
        p.append("statuses")
    if "orgId" in body and not _number(body["orgId"]):
        p.append("orgId")
    limit = body.get("limit", 25)
    if not _number(limit) or limit > 100:
        p.append("limit")
    if not _number(body.get("offset", 0)):
        p.append("offset")
    return p


def _numberish(value: Any) -> bool:
    return _number(value) or (isinstance(value, str) and value.isdigit())


def _events_problems(body: Any) -> list[str]:
    p = [
        key
        for key in ("limit", "offset", "organisationId")
        if key in body and not _numberish(body[key])
    ]
    if "limit" in body and _numberish(body["limit"]) and int(body["limit"]) > 100:
        p.append("limit > 100")
    return p


def _entries_problems(body: Any) -> list[str]:
    p: list[str] = []
    since = body.get("updatedAfter")
    if since is not None:
        try:
            dt.datetime.fromisoformat(since.replace("Z", "+00:00"))
        except (AttributeError, ValueError):
            p.append("updatedAfter")
    fields = body.get("fields")
    if fields is not None and (
        not isinstance(fields, list)
        or any(
            not isinstance(f, dict)
            or not isinstance(f.get("key"), str)
            or not isinstance(f.get("value"), str)
            for f in fields
        )
    ):
        p.append("fields")
    return p


def service_problems(request: Request) -> list[str]:
    """The rules the service's validation would find broken by ``request`` (none: OK)."""
    path = request.url.path
    body = request.json() if request.content else {}
    if body is not None and not isinstance(body, dict):
        return ["body must be a JSON object"]
    body = body or {}
    if request.method == "POST" and path == "/api/public/v1/verification-job":
        return _create_problems(body)
    if path == "/api/public/v1/verification-job/search":
        return _search_problems(body)
    if path == "/api/public/v1/event":
        return _events_problems(body)
    if path.endswith("/entries"):
        return _entries_problems(body)
    return [] if request.method == "GET" else [f"no rule for {request.method} {path}"]


# ------------------------------------------------------------------ a checking service


class Checked:
    """A MockTransport handler that answers plausibly and records broken rules."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, list[str]]] = []
        self.transport = MockTransport(self.handle)

    def handle(self, request: Request) -> Response:
        problems = service_problems(request)
        if problems:
            self.problems.append((str(request.url.path), problems))
            return json_response({"message": problems}, status=400)
        path = request.url.path
        if path.endswith("/search"):
            return json_response({"results": [], "count": 0})
        if path == "/api/public/v1/verification-job":
            return json_response(load("create-verification-job.response.json"))
        if path.startswith("/api/public/v1/verification-job/"):
            return json_response(load("get-verification-job.response.json"))
        if path == "/api/public/v1/event":
            return json_response(load("get-events.response.json"))
        if path.endswith("/entries"):
            return json_response([])
        return json_response([])

    def client(self) -> Client:
        return Client(API, token="t", transport=self.transport, creation_tags=False)


def base_request(**changes: Any) -> JobRequest:
    request = JobRequest(
        name="Routine",
        email="coach@team.example",
        organisation_id=1,
        audio_file_url="https://files.example/routine.mp3",
        start_date=dt.date(2025, 1, 1),
        end_date=dt.date(2025, 6, 1),
        required_territories=["GB"],
        external_id="ext-1",
        tags=["season-2025"],
        license_details=[],
    )
    return attrs.evolve(request, **changes)


def details(source: Any, files: list[str] | None = None) -> list[LicenseDetails]:
    return [
        LicenseDetails(
            license_source=source,
            license_source_name="Somewhere",
            license_file_urls=files or [],
        )
    ]


PDF = "https://files.example/licence.pdf"

# ------------------------------------------------------------------ the table
# (row id, the change to the base request, verdict, what the error must name)
# verdict: "ok" the service accepts it; "refused" the service refuses it; "SDK" the
# service would accept it but the SDK refuses it on purpose (the row says why).

CREATE_ROWS: list[tuple[str, dict[str, Any], str, str]] = [
    ("email-null", {"email": None}, "ok", ""),
    ("email-plus-subdomain", {"email": "first.last+tag@mail.club.example"}, "ok", ""),
    ("email-no-tld", {"email": "coach@team"}, "refused", "request.email"),
    ("email-space", {"email": "coach smith@team.example"}, "refused", "request.email"),
    ("email-empty", {"email": ""}, "refused", "request.email"),
    ("email-no-local", {"email": "@team.example"}, "refused", "request.email"),
    ("email-two-ats", {"email": "a@b@team.example"}, "refused", "request.email"),
    ("email-short-tld", {"email": "coach@team.e"}, "refused", "request.email"),
    ("email-leading-dot", {"email": ".coach@team.example"}, "refused", "request.email"),
    ("email-not-str", {"email": 42}, "refused", "request.email"),
    ("email-local-64", {"email": "l" * 64 + "@team.example"}, "ok", ""),
    ("email-local-65", {"email": "l" * 65 + "@team.example"}, "refused", "request.email"),
    (
        "email-254",
        {"email": "coach@" + "d" * 60 + "." + "e" * 60 + "." + "f" * 60 + "." + "g" * 62 + ".io"},
        "ok",
        "",
    ),
    (
        "email-255",
        {"email": "coach@" + "d" * 60 + "." + "e" * 60 + "." + "f" * 60 + "." + "g" * 63 + ".io"},
        "refused",
        "request.email",
    ),
    ("external-id-null", {"external_id": None}, "ok", ""),
    ("external-id-empty", {"external_id": ""}, "ok", ""),
    ("external-id-int", {"external_id": 7}, "refused", "request.external_id"),
    ("territories-lower", {"required_territories": ["gb", "Us"]}, "ok", ""),
    ("territories-none", {"required_territories": []}, "ok", ""),
    ("territories-length-only", {"required_territories": ["1a"]}, "ok", ""),
    (
        "territory-three",
        {"required_territories": ["GB", "GBR"]},
        "refused",
        "request.required_territories[1]",
    ),
    (
        "territory-one",
        {"required_territories": ["G"]},
        "refused",
        "request.required_territories[0]",
    ),
    ("territories-str", {"required_territories": "GB"}, "refused", "request.required_territories"),
    ("tags-none", {"tags": []}, "ok", ""),
    ("tag-two-chars", {"tags": ["ab"]}, "ok", ""),
    ("tag-255", {"tags": ["x" * 255]}, "ok", ""),
    ("tag-one-char", {"tags": ["ok-tag", "ok-too", "a"]}, "refused", "request.tags[2]"),
    ("tag-256", {"tags": ["x" * 256]}, "refused", "request.tags[0]"),
    ("tag-not-str", {"tags": ["ok-tag", 5]}, "refused", "request.tags"),
    *[
        (
            f"source-{s.value}",
            {"license_details": details(s, [] if s.value in NO_FILES else [PDF])},
            "ok",
            "",
        )
        for s in LicenseSource
    ],
    ("source-plain-string", {"license_details": details("Stock Arrangement", [PDF])}, "ok", ""),
    ("source-service-no-files", {"license_details": details("Service")}, "ok", ""),
    ("source-other-no-files", {"license_details": details("Other")}, "ok", ""),
    (
        "source-wrong-case",
        {"license_details": details("service")},
        "refused",
        "request.license_details[0].license_source",
    ),
    (
        "source-unknown",
        {"license_details": details("Spotify", [PDF])},
        "refused",
        "request.license_details[0].license_source",
    ),
    # SDK: the service's rules say to supply no files for these sources but not that the service
    # refuses them; the SDK refuses so that a file is never silently ignored.
    (
        "source-service-with-files",
        {"license_details": details(LicenseSource.SERVICE, [PDF])},
        "SDK",
        "request.license_details[0].license_file_urls",
    ),
    (
        "source-pending-with-files",
        {"license_details": details("Pending License", [PDF])},
        "SDK",
        "request.license_details[0].license_file_urls",
    ),
    (
        "source-file-not-url",
        {"license_details": details("Other", ["licence.pdf"])},
        "refused",
        "request.license_details[0].license_file_urls[0]",
    ),
    ("type-vod", {"type": JobType.VOD}, "ok", ""),
    ("type-routine-string", {"type": "Routine"}, "ok", ""),
    ("type-lower", {"type": "vod"}, "refused", "request.type"),
    ("output-mute", {"type": "VOD", "output_file": OutputFileRequest(operation="Mute")}, "ok", ""),
    (
        "output-full",
        {
            "type": "VOD",
            "output_file": OutputFileRequest(
                operation="Mute", file_type="Audio", callback_url="https://me.example/hook?key=s"
            ),
        },
        "ok",
        "",
    ),
    (
        "output-operation",
        {"output_file": OutputFileRequest(operation="Trim")},
        "refused",
        "request.output_file.operation",
    ),
    (
        "output-file-type",
        {"output_file": OutputFileRequest(file_type="Video")},
        "refused",
        "request.output_file.file_type",
    ),
    # SDK: the service takes any string, but a callback that is not a URL never arrives.
    (
        "output-callback-not-url",
        {"output_file": OutputFileRequest(callback_url="me")},
        "SDK",
        "request.output_file.callback_url",
    ),
    # SDK: the service takes any number; no organisation has id 0 or below.
    ("organisation-zero", {"organisation_id": 0}, "SDK", "request.organisation_id"),
    ("name-empty", {"name": ""}, "ok", ""),
    ("audio-not-url", {"audio_file_url": "routine.mp3"}, "refused", "request.audio_file_url"),
]


@pytest.mark.parametrize(
    ("change", "verdict", "names"), [r[1:] for r in CREATE_ROWS], ids=[r[0] for r in CREATE_ROWS]
)
async def test_create_refuses_what_the_service_refuses_and_sends_the_rest(
    change: dict[str, Any], verdict: str, names: str
) -> None:
    checked = Checked()
    request = base_request(**change)
    async with checked.client() as svc:
        if verdict == "ok":
            await svc.jobs.create(request)
            [sent] = checked.transport.requests
            assert checked.problems == []
            assert service_problems(sent) == []
        else:
            with pytest.raises((ValueError, TypeError), match=re.escape(names)):
                await svc.jobs.create(request)
            assert checked.transport.requests == []  # refused before anything was sent


async def test_create_sends_null_email_and_external_id_and_upper_case_territories() -> None:
    checked = Checked()
    async with checked.client() as svc:
        await svc.jobs.create(
            base_request(email=None, external_id=None, required_territories=["gb", "us"])
        )
    body = checked.transport.requests[0].json()
    assert body["email"] is None and body["externalId"] is None
    assert "email" in body and "externalId" in body
    assert body["requiredTerritories"] == ["GB", "US"]


async def test_a_vod_request_sends_type_and_output_file() -> None:
    checked = Checked()
    request = base_request(
        type=JobType.VOD,
        output_file=OutputFileRequest(operation="Mute", callback_url="https://me.example/cb"),
    )
    async with checked.client() as svc:
        await svc.jobs.create(request)
    body = checked.transport.requests[0].json()
    assert body["type"] == "VOD"
    assert body["outputFile"] == {"operation": "Mute", "callbackURL": "https://me.example/cb"}
    routine = Checked()
    async with routine.client() as svc:
        await svc.jobs.create(base_request())
    assert "type" not in routine.transport.requests[0].json()


SearchCall = Callable[[Client], Awaitable[Any]]

SEARCH_ROWS: list[tuple[str, dict[str, Any], str, str]] = [
    ("tag-one-char", {"tags": ["a"]}, "ok", ""),
    ("tag-empty", {"tags": [""]}, "ok", ""),
    ("tag-long", {"tags": ["x" * 300]}, "ok", ""),
    ("tags-100", {"tags": [f"t{i}" for i in range(100)]}, "ok", ""),
    ("tags-101", {"tags": [f"t{i}" for i in range(101)]}, "refused", "tags"),
    ("tag-not-str", {"tags": [3]}, "refused", "tags"),
    ("statuses-current", {"statuses": CURRENT}, "ok", ""),
    ("status-member", {"statuses": [JobStatus.PROCESSED]}, "ok", ""),
    ("status-completed", {"statuses": ["Processed", "Completed"]}, "refused", "statuses[1]"),
    ("status-confirmed", {"statuses": [JobStatus.CONFIRMED]}, "refused", "statuses[0]"),
    ("status-unknown", {"statuses": ["Done"]}, "refused", "statuses[0]"),
    ("limit-100", {"limit": 100}, "ok", ""),
    ("limit-101", {"limit": 101}, "refused", "limit"),
    # SDK: a page of nothing is never what a caller means.
    ("limit-0", {"limit": 0}, "SDK", "limit"),
    ("org", {"organisation_id": 7}, "ok", ""),
]


@pytest.mark.parametrize(
    ("kwargs", "verdict", "names"), [r[1:] for r in SEARCH_ROWS], ids=[r[0] for r in SEARCH_ROWS]
)
async def test_search_refuses_what_the_service_refuses_and_sends_the_rest(
    kwargs: dict[str, Any], verdict: str, names: str
) -> None:
    checked = Checked()
    async with checked.client() as svc:
        if verdict == "ok":
            await svc.jobs.search(**kwargs)
            assert checked.problems == [] and len(checked.transport.requests) == 1
        else:
            with pytest.raises((ValueError, TypeError), match=re.escape(names)):
                await svc.jobs.search(**kwargs)
            if "limit" not in kwargs:  # iter_search checks the same rules at once
                with pytest.raises((ValueError, TypeError), match=re.escape(names)):
                    svc.jobs.iter_search(**kwargs)
            assert checked.transport.requests == []


async def test_a_legacy_status_error_names_the_current_list() -> None:
    async with Checked().client() as svc:
        with pytest.raises(ValueError) as caught:
            await svc.jobs.search(statuses=["Completed"])
    message = str(caught.value)
    assert (
        "Created, Downloading, DetectingMusic, Matching, Matched, Processed, Submitted, Errored"
        in message
    )
    assert "Processed or Submitted" in message


FIELDS_ROWS: list[tuple[str, Any, str, str]] = [
    ("none", None, "ok", ""),
    ("empty", [], "ok", ""),
    ("one", [{"key": "division", "value": "Senior"}], "ok", ""),
    ("tuple-of-dicts", ({"key": "a", "value": ""},), "ok", ""),
    ("missing-value", [{"key": "division"}], "refused", "fields[0]"),
    (
        "key-not-str",
        [{"key": "ok", "value": "x"}, {"key": 1, "value": "x"}],
        "refused",
        "fields[1].key",
    ),
    ("value-list", [{"key": "a", "value": ["x", "y"]}], "refused", "fields[0].value"),
    ("value-null", [{"key": "a", "value": None}], "refused", "fields[0].value"),
    ("a-dict-not-a-list", {"key": "a", "value": "b"}, "refused", "fields"),
    ("pairs", [("a", "b")], "refused", "fields[0]"),
    # SDK: the service would drop "op" silently, filtering on something else than meant.
    ("unknown-key", [{"key": "a", "value": "b", "op": "ne"}], "SDK", "fields[0]"),
]


@pytest.mark.parametrize(
    ("fields", "verdict", "names"), [r[1:] for r in FIELDS_ROWS], ids=[r[0] for r in FIELDS_ROWS]
)
async def test_entry_field_filters_mirror_the_service(
    fields: Any, verdict: str, names: str
) -> None:
    checked = Checked()
    async with checked.client() as svc:
        for call in (svc.entries.for_event, svc.entries.for_season):
            if verdict == "ok":
                await call(5, fields=fields)
            else:
                with pytest.raises((ValueError, TypeError), match=re.escape(names)):
                    await call(5, fields=fields)
    assert checked.problems == []
    assert len(checked.transport.requests) == (2 if verdict == "ok" else 0)
    if verdict == "ok" and fields is not None:
        assert checked.transport.requests[0].json()["fields"] == list(fields)


async def test_every_call_in_a_sweep_sends_only_what_the_service_accepts() -> None:
    """One pass over every request-building call with varied arguments."""
    checked = Checked()
    since = dt.datetime(2025, 3, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    async with checked.client() as svc:
        await svc.jobs.create(base_request(required_territories=["fr"], email=None))
        await svc.jobs.create(base_request(license_details=details(LicenseSource.SERVICE)))
        await svc.jobs.create(base_request(type="VOD", output_file=OutputFileRequest()))
        await svc.jobs.get(4)
        await svc.jobs.search()
        await svc.jobs.search(
            tags=["a", "bb"],
            statuses=["Processed", "Errored"],
            organisation_id=2,
            limit=100,
            offset=300,
        )
        [job async for job in svc.jobs.iter_search(tags=["x"], statuses=[JobStatus.SUBMITTED])]
        await svc.events.list()
        await svc.events.list(organisation_id=3, limit=100, offset=100)
        await svc.entries.for_event(5, updated_after=since, fields=[{"key": "k", "value": "v"}])
        await svc.entries.for_season(6, updated_after=since)
        await svc.entries.for_season(6)
    assert len(checked.transport.requests) == 12
    assert checked.problems == []
    assert all(service_problems(r) == [] for r in checked.transport.requests)


def test_the_rules_statement_itself_refuses_what_types_md_refuses() -> None:
    """The checker is not vacuous: it finds the documented faults in hand-made bodies."""
    good = load("create-verification-job.request.json")
    assert _create_problems(good) == []
    assert _create_problems({**good, "email": "x@y"}) == ["email"]
    assert _create_problems({k: w for k, w in good.items() if k != "externalId"}) == [
        "externalId missing"
    ]
    assert _create_problems({**good, "tags": ["a"]}) == ["tags"]
    bad_source = [{"licenseSource": "Spotify", "licenseSourceName": "", "licenseFileURLs": [PDF]}]
    assert _create_problems({**good, "licenseDetails": bad_source}) != []
    assert _search_problems({"statuses": ["Completed"]}) == ["statuses"]
    assert _search_problems({"limit": 101}) == ["limit"]
    assert _entries_problems({"fields": [{"key": "a", "value": 1}]}) == ["fields"]
    assert _events_problems({"limit": "101"}) == ["limit > 100"]


# ------------------------------------------------------------------ the fake agrees


def _fake_client(fake: FakeService) -> Client:
    return Client(
        "http://fake.invalid",
        token=FakeService.DEFAULT_TOKEN,
        transport=fake.transport(),
        creation_tags=False,
        retry=RetryPolicy(attempts=1),
    )


@pytest.mark.parametrize(
    "change",
    [r[1] for r in CREATE_ROWS if r[2] == "ok"],
    ids=[r[0] for r in CREATE_ROWS if r[2] == "ok"],
)
async def test_the_fake_accepts_every_create_the_table_accepts(change: dict[str, Any]) -> None:
    async with FakeService(demo_data=False, rate_limit=None) as fake, _fake_client(fake) as svc:
        job = await svc.jobs.create(base_request(**change))
    assert job.id > 0


REFUSED_BODIES = [
    ("email", {"email": "coach@team"}),
    ("email-missing", {"email": ...}),
    ("external-id-missing", {"externalId": ...}),
    ("territory", {"requiredTerritories": ["GBR"]}),
    ("tag", {"tags": ["a"]}),
    (
        "source",
        {
            "licenseDetails": [
                {"licenseSource": "Spotify", "licenseSourceName": "", "licenseFileURLs": []}
            ]
        },
    ),
    ("type", {"type": "vod"}),
    ("operation", {"outputFile": {"operation": "Trim"}}),
]


@pytest.mark.parametrize(
    "change", [r[1] for r in REFUSED_BODIES], ids=[r[0] for r in REFUSED_BODIES]
)
async def test_the_fake_refuses_the_bodies_the_table_refuses(change: dict[str, Any]) -> None:
    good = load("create-verification-job.request.json")
    body = {k: w for k, w in (good | change).items() if w is not ...}
    assert _create_problems(body) != []  # the rules statement refuses it too
    async with FakeService(demo_data=False, rate_limit=None) as fake, _fake_client(fake) as svc:
        with pytest.raises(BadRequestError):
            await svc.request("POST", "/api/public/v1/verification-job", json=body)


@pytest.mark.parametrize(
    ("statuses", "accepted"), [(["Processed", "Submitted"], True), (["Completed"], False)]
)
async def test_the_fake_searches_by_todays_statuses_only(
    statuses: list[str], accepted: bool
) -> None:
    body = {"tags": ["a"], "statuses": statuses, "limit": 100, "offset": 0}
    async with FakeService(demo_data=False, rate_limit=None) as fake, _fake_client(fake) as svc:
        if accepted:
            assert "results" in await svc.request(
                "POST", "/api/public/v1/verification-job/search", json=body
            )
        else:
            with pytest.raises(BadRequestError):
                await svc.request("POST", "/api/public/v1/verification-job/search", json=body)


# ------------------------------------------------------------------ the options of a call

CALLS: list[tuple[str, Callable[..., Awaitable[object]]]] = [
    ("orgs.list", lambda svc, **o: svc.orgs.list(**o)),
    ("seasons.list", lambda svc, **o: svc.seasons.list(**o)),
    ("events.list", lambda svc, **o: svc.events.list(limit=5, **o)),
    ("entries.for_event", lambda svc, **o: svc.entries.for_event(1, **o)),
    ("entries.for_season", lambda svc, **o: svc.entries.for_season(1, **o)),
    ("jobs.create", lambda svc, **o: svc.jobs.create(base_request(), **o)),
    ("jobs.create", lambda svc, **o: svc.jobs.create(base_request(), idempotency_key="k", **o)),
    ("jobs.get", lambda svc, **o: svc.jobs.get(7, **o)),
    ("jobs.search", lambda svc, **o: svc.jobs.search(tags=["ab"], **o)),
    ("request", lambda svc, **o: svc.request("GET", "/api/public/v1/season", **o)),
    ("jobs.get", lambda svc, **o: svc.with_raw_response.jobs.get(7, **o)),
]
CALL_IDS = [
    "orgs",
    "seasons",
    "events",
    "for_event",
    "for_season",
    "create",
    "keyed-create",
    "get",
    "search",
    "request",
    "raw-get",
]


def _answer(request: Request) -> Response:
    """Whatever each call expects, enough to structure."""
    path = request.url.path
    if path.endswith("/search"):
        return json_response({"results": [], "count": 0})
    if path.endswith("/verification-job") or path.endswith("/verification-job/7"):
        return json_response(load("get-verification-job.response.json"))
    return json_response([])


@pytest.mark.parametrize(
    "bad",
    [
        {"timout": 2},  # a misspelling
        {"org_id": 7},  # a removed spelling
        {"reply": True},  # the sub-client's own fields are not the caller's options
        {"idempotent": False},
        {"decode": None},
        {"host": "account"},
        {"authenticate": False},
        {"headers": {"X-A": "1"}},
    ],
    ids=lambda bad: next(iter(bad)),
)
@pytest.mark.parametrize(("operation", "call"), CALLS, ids=CALL_IDS)
async def test_an_unknown_option_is_a_type_error_naming_it_before_sending(
    operation: str, call: Callable[..., Awaitable[object]], bad: dict[str, Any]
) -> None:
    name = next(iter(bad))
    if operation == "request" and name in ("idempotent", "host"):
        pytest.skip("request() takes these of its own (any endpoint, either host)")
    transport = MockTransport(_answer)
    async with Client(API, token="t", transport=transport) as svc:
        with pytest.raises(
            TypeError, match=rf"{operation}\(\) got an unexpected keyword argument '{name}'"
        ):
            await call(svc, **bad)
    assert transport.requests == []


@pytest.mark.parametrize(
    ("bad", "error", "names"),
    [
        ({"timeout": 0}, ValueError, "timeout"),
        ({"timeout": "soon"}, TypeError, "timeout"),
        ({"attempt_timeout": -1}, ValueError, "attempt_timeout"),
        ({"retry": 3}, TypeError, "retry"),
        ({"extra_headers": {"Authorization": "Bearer x"}}, ValueError, "extra_headers"),
        ({"extra_headers": ["X-A"]}, TypeError, "extra_headers"),
        ({"extra_query": {"q": "a\nb"}}, ValueError, "extra_query"),
        ({"extra_query": 5}, TypeError, "extra_query"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
@pytest.mark.parametrize(
    ("operation", "call"), CALLS[:6] + CALLS[7:], ids=CALL_IDS[:6] + CALL_IDS[7:]
)
async def test_a_bad_option_value_is_refused_before_sending(
    operation: str,
    call: Callable[..., Awaitable[object]],
    bad: dict[str, Any],
    error: type[Exception],
    names: str,
) -> None:
    transport = MockTransport(_answer)
    async with Client(API, token="t", transport=transport) as svc:
        with pytest.raises(error, match=names):
            await call(svc, **bad)
    assert transport.requests == []


@pytest.mark.parametrize(("operation", "call"), CALLS, ids=CALL_IDS)
async def test_every_call_applies_its_options_and_default_is_the_clients(
    operation: str, call: Callable[..., Awaitable[object]]
) -> None:
    from svc_async import Timeout

    limits = Timeout(total=3.0, connect=1.0, read=2.0)
    transport = MockTransport(_answer)
    async with Client(API, token="t", transport=transport, creation_tags=False) as svc:
        await call(
            svc,
            attempt_timeout=limits,
            retry=RetryPolicy(attempts=1),
            extra_headers={"X-Trace": "on"},
            extra_query={"debug": "1"},
        )
        sent = transport.requests[-1]
        assert sent.timeout == limits
        assert sent.headers["X-Trace"] == "on"
        assert sent.url.query["debug"] == "1"
        await call(svc, timeout="default", attempt_timeout="default")
        plain = transport.requests[-1]
        assert plain.timeout == Timeout(total=30.0, connect=10.0)  # the client's
        assert "X-Trace" not in plain.headers and "debug" not in plain.url.query
