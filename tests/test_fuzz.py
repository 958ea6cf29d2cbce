"""Property tests: whatever the server sends, a model or an SvcError; whatever the
caller passes, a result or a ValueError/TypeError before anything is sent."""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svc_async import Client, MockTransport, Request, Response, RetryPolicy, SvcError, json_response

from .conftest import load
from .test_examples import example_request

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(
        [
            "",
            "2024-10-17T14:41:56.000Z",
            "Licensed",
            "Completed",
            "\u0000",
            "\ud7ff\U0010ffff",
            "\uff12\uff10\uff12\uff14-01-01",
        ]
    ),
)
json_value = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)

Call = Callable[[Client], Awaitable[Any]]

ENDPOINTS: list[tuple[str, Call]] = [
    ("get-my-organisations.response.json", lambda s: s.orgs.list()),
    ("get-seasons.response.json", lambda s: s.seasons.list()),
    ("get-events.response.json", lambda s: s.events.list()),
    ("get-event-entries.response-0.json", lambda s: s.entries.for_event(1)),
    ("get-season-entries.response-0.json", lambda s: s.entries.for_season(1)),
    (
        "create-verification-job.response.json",
        lambda s: s.jobs.create(example_request(), creation_tag=False),
    ),
    ("get-verification-job.response.json", lambda s: s.jobs.get(1)),
    ("search-verification-jobs.response.json", lambda s: s.jobs.search()),
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return doc


def _run(call: Call, body: bytes) -> None:
    async def go() -> None:
        transport = MockTransport(lambda request: Response(status=200, content=body))
        async with Client(
            "https://x.example", token="t", transport=transport, retry=RetryPolicy(attempts=1)
        ) as svc:
            try:
                await call(svc)
            except SvcError as exc:
                assert str(exc)  # a useful message, never empty

    asyncio.run(go())


@SETTINGS
@given(data=st.data(), which=st.sampled_from(range(len(ENDPOINTS))))
def test_mutated_examples_give_a_model_or_svc_error(data: st.DataObject, which: int) -> None:
    name, call = ENDPOINTS[which]
    doc = load(name)
    path = data.draw(st.sampled_from(_paths(doc)))
    mutated = _replace(doc, path, data.draw(json_value))
    _run(call, orjson.dumps(mutated))


@SETTINGS
@given(body=json_value, which=st.sampled_from(range(len(ENDPOINTS))))
def test_random_json_gives_a_model_or_svc_error(body: Any, which: int) -> None:
    _run(ENDPOINTS[which][1], orjson.dumps(body))


@SETTINGS
@given(data=st.data(), which=st.sampled_from(range(len(ENDPOINTS))))
def test_truncated_or_garbled_bodies(data: st.DataObject, which: int) -> None:
    name, call = ENDPOINTS[which]
    raw = orjson.dumps(load(name))
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    junk = data.draw(st.binary(max_size=8))
    _run(call, raw[:cut] + junk)


def _recording_client() -> tuple[Client, MockTransport]:
    def handler(request: Request) -> Response:
        path = request.url.path
        if path.endswith("/search"):
            return json_response({"jobs": [], "count": 0})
        if "verification-job" in path:
            return json_response(load("create-verification-job.response.json"))
        return json_response([])

    transport = MockTransport(handler)
    return Client("https://x.example", token="t", transport=transport), transport


anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=10**6),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.lists(st.text(max_size=4), max_size=3),
    st.datetimes(),
    st.datetimes(timezones=st.just(dt.UTC)),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)

ARG_CALLS: list[Callable[[Client, Any], Awaitable[Any]]] = [
    lambda s, a: s.jobs.get(a),
    lambda s, a: s.entries.for_event(a),
    lambda s, a: s.entries.for_event(1, updated_after=a),
    lambda s, a: s.entries.for_season(1, fields=a),
    lambda s, a: s.events.list(limit=a),
    lambda s, a: s.events.list(offset=a),
    lambda s, a: s.events.list(organisation_id=a),
    lambda s, a: s.jobs.search(tags=a),
    lambda s, a: s.jobs.search(statuses=a),
    lambda s, a: s.jobs.search(limit=a),
    lambda s, a: s.jobs.search(organisation_id=a),
    lambda s, a: s.jobs.create(a),
]


@SETTINGS
@given(arg=anything, which=st.sampled_from(range(len(ARG_CALLS))))
def test_random_arguments_are_refused_before_sending(arg: Any, which: int) -> None:
    async def go() -> None:
        svc, transport = _recording_client()
        async with svc:
            try:
                await ARG_CALLS[which](svc, arg)
            except (ValueError, TypeError):
                assert transport.requests == []
            else:
                assert len(transport.requests) >= 1

    asyncio.run(go())


job_requests = st.builds(
    lambda base, **kw: __import__("attrs").evolve(base, **kw),
    st.just(example_request()),
    name=st.one_of(st.text(max_size=5), st.integers()),
    email=st.sampled_from(["a@b.c", "nope", "", "x@", "@y"]),
    required_territories=st.lists(st.sampled_from(["US", "GB", "gb", "USA", "U1", ""]), max_size=3),
    start_date=st.dates(min_value=dt.date(2024, 1, 1), max_value=dt.date(2024, 12, 31)),
    end_date=st.dates(min_value=dt.date(2024, 1, 1), max_value=dt.date(2024, 12, 31)),
    audio_file_url=st.sampled_from(
        ["https://f.example/a.mp3", "ftp://f.example/a", "not a url", "/a.mp3"]
    ),
    tags=st.lists(st.text(min_size=0, max_size=300), max_size=3),
    organisation_id=st.one_of(st.integers(min_value=-2, max_value=3), st.booleans()),
)


@SETTINGS
@given(request=job_requests)
def test_job_requests_are_valid_or_refused_before_sending(request: Any) -> None:
    async def go() -> None:
        svc, transport = _recording_client()
        async with svc:
            try:
                await svc.jobs.create(request)
            except (ValueError, TypeError):
                assert transport.requests == []
            else:
                body = transport.requests[0].json()
                assert body["startDate"] <= body["endDate"]
                assert all(len(t) == 2 and t.isupper() for t in body["requiredTerritories"])
                assert "@" in body["email"]

    asyncio.run(go())
