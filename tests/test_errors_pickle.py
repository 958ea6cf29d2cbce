"""Errors that travel: a real failure pickles and unpickles whole, without its secrets."""

from __future__ import annotations

import pickle
import socket
from typing import Any

import pytest

from svc_async import (
    AmbiguousCreateError,
    APIError,
    Client,
    ConnectError,
    JobWaitTimeout,
    MockTransport,
    NotFoundError,
    Request,
    Response,
    RetryPolicy,
    SvcError,
    json_response,
)
from svc_async.testing import FakeService

from .conftest import load

TOKEN = "tok-very-secret-0123456789"
ONCE = RetryPolicy(attempts=1)


def _round_trip(exc: SvcError) -> tuple[SvcError, bytes]:
    data = pickle.dumps(exc)
    back = pickle.loads(data)
    assert type(back) is type(exc)
    assert str(back) == str(exc)
    assert TOKEN.encode() not in data
    return back, data


async def _failure(transport: Any) -> SvcError:
    async with Client("https://verify.example", token=TOKEN, transport=transport) as svc:
        with pytest.raises(SvcError) as info:
            await svc.jobs.get(5, retry=ONCE)
    return info.value


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422, 429, 500, 302])
async def test_each_status_error_round_trips_with_its_fields(status: int) -> None:
    def answer(request: Request) -> Any:
        body = {"statusCode": status, "error": "Nope", "message": f"token {TOKEN} refused"}
        return json_response(body, status, headers={"Retry-After": "7", "X-Trace": "a"})

    exc = await _failure(MockTransport(answer))
    assert isinstance(exc, APIError) and exc.status == status
    back, _ = _round_trip(exc)
    assert isinstance(back, APIError)
    for field in ("status", "body", "method", "url", "error", "message", "issues"):
        assert getattr(back, field) == getattr(exc, field), field
    assert back.request_id == exc.request_id is not None
    assert type(back.headers) is dict and back.headers == dict(exc.headers)
    assert getattr(back, "retry_after", None) == getattr(exc, "retry_after", None)
    assert not str(back).startswith("HTTP HTTP")


async def test_a_real_404_from_the_fake_round_trips() -> None:
    fake = FakeService()
    async with Client(
        "http://fake.invalid", token=fake.DEFAULT_TOKEN, transport=fake.transport()
    ) as svc:
        with pytest.raises(NotFoundError) as info:
            await svc.jobs.get(999_999)
    back, _ = _round_trip(info.value)
    assert back.status == 404 and back.headers == dict(info.value.headers)


async def test_a_connection_refused_keeps_a_redacted_request() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with Client(f"http://127.0.0.1:{port}", token=TOKEN) as svc:
        with pytest.raises(ConnectError) as info:
            await svc.jobs.get(5, retry=ONCE)
    exc = info.value
    assert exc.request is not None
    back, _ = _round_trip(exc)
    assert isinstance(back, ConnectError) and back.maybe_sent is False
    assert isinstance(back.request, Request)
    assert back.request.method == exc.request.method
    assert back.request.url == exc.request.url
    assert back.request.headers["Authorization"] == "[REDACTED]"
    assert back.request.content is None


def test_an_ambiguous_create_unpickles_with_its_tag_and_cause() -> None:
    cause = ConnectError("reset")
    try:
        raise AmbiguousCreateError("could not tell", tag="svc-async-create:ab") from cause
    except AmbiguousCreateError as exc:
        back, _ = _round_trip(exc)
    assert isinstance(back, AmbiguousCreateError) and back.tag == "svc-async-create:ab"
    assert isinstance(back.__cause__, ConnectError)


async def test_header_values_that_are_no_strings_pickle_as_text() -> None:
    """A transport of your own may hand headers whose values are not ``str``: the error
    still pickles, a link's query values still hidden."""
    link = b"https://storage.example/f?X-Amz-Signature=abc123"
    answer = Response(404, {"Location": link, "X-Count": 3}, b"")
    error = await _failure(MockTransport(lambda request: answer))
    back, data = _round_trip(error)
    assert b"abc123" not in data
    assert back.headers["X-Count"] == "3"  # type: ignore[attr-defined]


async def test_a_signed_link_under_a_key_the_sdk_does_not_model_does_not_travel() -> None:
    """The live service adds keys (a job's ``extra``): a signed link there, or in a
    nested object, loses its query values in a pickled ``JobWaitTimeout`` as the modelled
    links do, and the job keeps everything else (its absent keys too)."""
    document = load("get-verification-job.response.json")
    signed = "https://storage.example/p.mp3?X-Amz-Signature=sig-SECRET-xyz"
    document["previewURL"] = signed
    document["preview"] = {"links": [signed], "size": 3}
    transport = MockTransport(lambda request: json_response(document))
    async with Client("https://verify.example", token=TOKEN, transport=transport) as svc:
        job = await svc.jobs.get(1)
    data = pickle.dumps(JobWaitTimeout("job 1 is still Matching", job=job))
    assert b"sig-SECRET-xyz" not in data
    back = pickle.loads(data).job
    assert back.extra["previewURL"].startswith("https://storage.example/p.mp3?X-Amz-Signature=")
    assert back.extra["preview"]["size"] == 3
    assert back.extra.absent == job.extra.absent
    assert (back.id, back.status, back.tags) == (job.id, job.status, job.tags)
