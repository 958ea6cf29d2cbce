"""Exactly-once job creation against a stateful mock that loses answers on purpose."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from svc_async import (
    AmbiguousCreateError,
    BadRequestError,
    Client,
    ConnectError,
    ConnectionLostError,
    MockTransport,
    Request,
    RequestTimeout,
    Response,
    RetryPolicy,
    ServerError,
    json_response,
)
from svc_async.testing import VirtualClock

from ..conftest import load
from ..test_examples import example_request

POLICY = RetryPolicy(attempts=4, wait_initial=0.0, wait_max=0.0)


class _Service:
    """Creates jobs; ``plan`` says what happens to each create attempt, in order."""

    def __init__(self, plan: list[str], *, search_lag: int = 0) -> None:
        self.plan = plan
        self.jobs: list[dict[str, Any]] = []
        self.creates = 0
        self.searches = 0
        self.search_lag = search_lag  # searches that see nothing after a create

    def __call__(self, request: Request) -> Response:
        path = request.url.path
        if path.endswith("/verification-job"):
            step = self.plan[self.creates] if self.creates < len(self.plan) else "ok"
            self.creates += 1
            if step == "refused":
                raise ConnectError("connection refused")
            if step == "503-before":
                return Response(status=503, headers={"Retry-After": "0"}, content=b"busy")
            if step == "400":
                return json_response(
                    {"statusCode": 400, "error": "Bad Request", "message": "x"}, 400
                )
            job = {
                **load("create-verification-job.response.json"),
                "id": len(self.jobs) + 1,
                "tags": request.json()["tags"],
            }
            self.jobs.append(job)
            if step == "dup":
                self.jobs.append({**job, "id": len(self.jobs) + 1})
                raise ConnectionLostError("connection reset after two jobs were created")
            if step == "reset-after":
                raise ConnectionLostError("connection reset after the job was created")
            if step == "timeout-after":
                raise RequestTimeout("read timeout")
            if step == "502-after":
                return Response(status=502, content=b"<html>bad gateway</html>")
            if step == "cut-after":
                return Response(status=200, content=b'{"id": 1, "na')
            return json_response(job)
        if path.endswith("/search"):
            self.searches += 1
            if self.search_lag > 0:
                self.search_lag -= 1
                return json_response({"jobs": [], "count": 0})
            tags = set(request.json()["tags"])
            found = [j for j in self.jobs if tags <= set(j["tags"])]
            return json_response({"jobs": found, "count": len(found)})
        raise AssertionError(path)


# The resolver's searches, pauses and deadlines run on virtual time: instant, and the
# same on a loaded machine.
pytestmark = pytest.mark.looptime


def _client(service: _Service, **kw: Any) -> Client:
    return Client(
        "https://v.example",
        token="t",
        transport=MockTransport(service),
        retry=POLICY,
        clock=VirtualClock(),
        **kw,
    )


@pytest.mark.parametrize("loss", ["reset-after", "timeout-after", "502-after", "cut-after"])
async def test_lost_answer_is_recovered_by_tag_search(loss: str) -> None:
    service = _Service([loss])
    async with _client(service) as svc:
        job = await svc.jobs.create(example_request())
    assert len(service.jobs) == 1
    assert job.id == service.jobs[0]["id"]
    assert service.creates == 1


async def test_lagging_index_is_waited_for() -> None:
    service = _Service(["reset-after"], search_lag=2)
    async with _client(service) as svc:
        job = await svc.jobs.create(example_request())
    assert len(service.jobs) == 1
    assert job.id == 1
    assert service.searches == 3


async def test_request_that_never_left_is_resent_at_once() -> None:
    service = _Service(["refused", "refused"])
    async with _client(service) as svc:
        job = await svc.jobs.create(example_request())
    assert service.creates == 3
    assert service.searches == 0
    assert len(service.jobs) == 1
    assert job.id == 1


async def test_503_before_processing_is_resent_without_search() -> None:
    service = _Service(["503-before"])
    async with _client(service) as svc:
        await svc.jobs.create(example_request())
    assert service.creates == 2
    assert service.searches == 0
    assert len(service.jobs) == 1


async def test_503_on_every_attempt_is_a_definite_refusal_not_ambiguous() -> None:
    service = _Service(["503-before"] * 4)
    async with _client(service) as svc:
        with pytest.raises(ServerError) as info:
            await svc.jobs.create(example_request())
    assert not isinstance(info.value, AmbiguousCreateError)
    assert info.value.status == 503
    assert service.creates == POLICY.attempts  # then it stops: attempts spent
    assert service.searches == 0  # nothing was processed, so nothing to look for
    assert service.jobs == []


async def test_validation_failure_is_never_retried() -> None:
    service = _Service(["400"])
    async with _client(service) as svc:
        with pytest.raises(BadRequestError):
            await svc.jobs.create(example_request())
    assert service.creates == 1


async def test_duplicates_are_reported_and_the_first_returned(
    caplog: pytest.LogCaptureFixture,
) -> None:
    service = _Service(["reset-after"])
    # As if an earlier, unseen attempt had landed too: a second job with the same tag.
    service.plan = ["dup", "reset-after"]
    async with _client(service) as svc:
        with caplog.at_level(logging.WARNING, logger="svc_async"):
            job = await svc.jobs.create(example_request())
    assert len(service.jobs) == 2
    assert job.id == 1
    assert any("produced 2 jobs" in r.getMessage() for r in caplog.records)


async def test_unresolved_ambiguity_raises_with_the_tag() -> None:
    service = _Service(["reset-after"] * 10, search_lag=1000)
    quick = RetryPolicy(attempts=4, wait_initial=0.0, wait_max=0.0)
    async with _client(service) as svc:
        with pytest.raises(AmbiguousCreateError) as info:
            await svc.jobs.create(example_request(), retry=quick, timeout=1.0)
    assert info.value.tag.startswith("svc-async-create:")
    assert all(info.value.tag in j["tags"] for j in service.jobs)
    assert service.creates == 1  # searched until the deadline, never sent again


async def test_without_a_tag_an_ambiguous_failure_is_raised() -> None:
    service = _Service(["reset-after"])
    async with _client(service, creation_tags=False) as svc:
        with pytest.raises(ConnectionLostError):
            await svc.jobs.create(example_request())
    assert service.creates == 1
    assert service.searches == 0


async def test_same_request_twice_on_purpose_creates_two_jobs() -> None:
    service = _Service([])
    async with _client(service) as svc:
        first = await svc.jobs.create(example_request())
        second = await svc.jobs.create(example_request())
    assert first.id != second.id
    assert len(service.jobs) == 2


async def test_429_on_create_is_resent_after_the_wait() -> None:
    calls = []

    def handler(request: Request) -> Response:
        calls.append(request)
        if len(calls) == 1:
            return Response(status=429, headers={"Retry-After": "0"}, content=b"{}")
        return json_response(load("create-verification-job.response.json"))

    async with Client(
        "https://v.example", token="t", transport=MockTransport(handler), retry=POLICY
    ) as svc:
        await svc.jobs.create(example_request())
    assert len(calls) == 2


async def test_a_failing_search_never_leads_to_a_second_post() -> None:
    service = _Service(["reset-after"])
    original = service.__call__

    def handler(request: Request) -> Response:
        if request.url.path.endswith("/search"):
            service.searches += 1
            return Response(status=502, content=b"<html>bad gateway</html>")
        return original(request)

    transport = MockTransport(handler)
    quick = RetryPolicy(attempts=4, wait_initial=0.0, wait_max=0.0)
    async with Client(
        "https://v.example",
        token="t",
        transport=transport,
        retry=quick,
        timeout=1.0,
        clock=VirtualClock(),
    ) as svc:
        with pytest.raises(AmbiguousCreateError) as info:
            await svc.jobs.create(example_request())
    assert service.creates == 1
    assert len(service.jobs) == 1
    assert service.searches >= 2  # it kept looking until the deadline
    assert info.value.tag in service.jobs[0]["tags"]


async def test_job_dates_must_be_dates_not_datetimes() -> None:
    import datetime as dt

    import attrs

    service = _Service([])
    request = attrs.evolve(example_request(), start_date=dt.datetime(2024, 9, 1, tzinfo=dt.UTC))
    async with _client(service) as svc:
        with pytest.raises(TypeError, match="start_date"):
            await svc.jobs.create(request)
    assert service.creates == 0
