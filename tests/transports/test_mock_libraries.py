"""The SDK under the HTTP mocking libraries users know: aioresponses, respx.

The Testing page shows both as test modules (run by tests/test_doc_blocks.py); here, what
the page relies on beyond them: its aioresponses workaround is all a fresh project needs,
and without it aiohttp 3.14 breaks as the page says; every attempt of a call carries one
request id, the error's; no error shows the token.
"""

from __future__ import annotations

import inspect
import traceback
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import respx
from aioresponses import aioresponses, core
from yarl import URL

from svc_async import (
    Client,
    ConnectionLostError,
    HttpxTransport,
    NotFoundError,
    ServerError,
    SvcError,
    TransportError,
)

from ..test_doc_blocks import python_blocks
from ..testing.test_pytest_plugin import LOAD, OTHERS_OFF

pytest_plugins = ["pytester"]

PAGE = Path(__file__).parents[2] / "docs" / "testing.md"
API = "https://verify.example"
JOB_7 = f"{API}/api/public/v1/verification-job/7"
TOKEN = "tok-3f9a1c7e5b2d"  # distinctive, to search for in messages
JOB = {"id": 7, "organisationId": 1, "status": "Matching"}
NOT_FOUND = {"statusCode": 404, "error": "Not Found", "message": "Verification job not found"}
AIOHTTP_314 = "stream_writer" in inspect.signature(aiohttp.ClientResponse.__init__).parameters


def _page_block(marker: str) -> str:
    [block] = [b for b in python_blocks(PAGE) if marker in b.source]
    return block.source


def _shown(exc: BaseException) -> str:
    """Everything a log or traceback of ``exc`` shows, its causes included."""
    return "".join(traceback.format_exception(exc)) + repr(exc) + repr(vars(exc))


@pytest.mark.slow
def test_the_pages_aioresponses_module_passes_in_a_fresh_project(
    pytester: pytest.Pytester,
) -> None:
    """In its own process nothing else patches aioresponses: the page's lines suffice."""
    pytester.makeini(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_user=_page_block("from aioresponses import"))
    result = pytester.runpytest_subprocess(*LOAD, *OTHERS_OFF, "-q")
    result.assert_outcomes(passed=5)


@pytest.mark.skipif(not AIOHTTP_314, reason="aiohttp before 3.14 needs no workaround")
async def test_without_the_workaround_aioresponses_breaks_as_the_page_says(
    monkeypatch: pytest.MonkeyPatch, no_backoff: None
) -> None:
    """When this fails, an aioresponses release builds responses aiohttp 3.14 accepts:
    drop the workaround from the Testing page and tests/conftest.py."""
    monkeypatch.setattr(core, "ClientResponse", aiohttp.ClientResponse)
    with aioresponses() as mocked:
        mocked.get(JOB_7, payload=JOB)
        async with Client(API, token=TOKEN) as svc:
            with pytest.raises(TransportError) as raised:
                await svc.jobs.get(7)
    said = "TypeError: ClientResponse.__init__() missing 1 required keyword-only argument:"
    assert f"{said} 'stream_writer'" in str(raised.value)
    assert f"{said} 'stream_writer'" in " ".join(PAGE.read_text(encoding="utf-8").split())


# ----------------------------------------------------------------- aioresponses


async def test_aioresponses_sees_one_request_id_on_every_attempt(no_backoff: None) -> None:
    with aioresponses() as mocked:
        mocked.get(JOB_7, status=503, repeat=True)
        async with Client(API, token=TOKEN) as svc:
            with pytest.raises(ServerError) as raised:
                await svc.jobs.get(7)
    sent = mocked.requests[("GET", URL(JOB_7))]
    assert len(sent) == 4
    assert {call.kwargs["headers"]["X-Request-Id"] for call in sent} == {raised.value.request_id}
    assert {call.kwargs["headers"]["Authorization"] for call in sent} == {f"Bearer {TOKEN}"}


async def test_aioresponses_calls_get_a_new_request_id_each() -> None:
    with aioresponses() as mocked:
        mocked.get(JOB_7, payload=JOB, repeat=True)
        async with Client(API, token=TOKEN) as svc:
            await svc.jobs.get(7)
            await svc.jobs.get(7)
    first, second = mocked.requests[("GET", URL(JOB_7))]
    assert first.kwargs["headers"]["X-Request-Id"] != second.kwargs["headers"]["X-Request-Id"]


async def test_aioresponses_errors_never_show_the_token(no_backoff: None) -> None:
    errors: list[SvcError] = []
    with aioresponses() as mocked:
        mocked.get(JOB_7, status=404, payload=NOT_FOUND)
        mocked.get(f"{API}/api/public/v1/verification-job/8", status=503, repeat=True)
        async with Client(API, token=TOKEN) as svc:
            for job_id, expected in (
                (7, NotFoundError),
                (8, ServerError),
                (9, ConnectionLostError),
            ):
                with pytest.raises(expected) as raised:  # 9: nothing mocked
                    await svc.jobs.get(job_id)
                errors.append(raised.value)
    for error in errors:
        assert error.request_id
        assert TOKEN not in _shown(error), type(error)


async def test_a_single_mocked_503_ends_as_a_refused_connection(no_backoff: None) -> None:
    """What the page warns of: the retries find no registration left."""
    with aioresponses() as mocked:
        mocked.get(JOB_7, status=503)
        async with Client(API, token=TOKEN) as svc:
            with pytest.raises(ConnectionLostError, match="Connection refused"):
                await svc.jobs.get(7)
    assert len(mocked.requests[("GET", URL(JOB_7))]) == 4


# ----------------------------------------------------------------------- respx


async def test_respx_sees_one_request_id_on_every_attempt(
    respx_mock: respx.MockRouter, no_backoff: None
) -> None:
    route = respx_mock.get(JOB_7).respond(503)
    async with Client(API, token=TOKEN, transport=HttpxTransport()) as svc:
        with pytest.raises(ServerError) as raised:
            await svc.jobs.get(7)
    assert route.call_count == 4
    sent = [call.request for call in route.calls]
    assert {r.headers["X-Request-Id"] for r in sent} == {raised.value.request_id}
    assert {r.headers["Authorization"] for r in sent} == {f"Bearer {TOKEN}"}


async def test_respx_errors_never_show_the_token(
    respx_mock: respx.MockRouter, no_backoff: None
) -> None:
    respx_mock.get(JOB_7).respond(404, json=NOT_FOUND)
    respx_mock.get(f"{API}/api/public/v1/verification-job/8").mock(
        side_effect=httpx.ConnectError("connection refused")
    )
    errors: list[SvcError] = []
    async with Client(API, token=TOKEN, transport=HttpxTransport()) as svc:
        for job_id, expected in ((7, NotFoundError), (8, TransportError), (9, TransportError)):
            with pytest.raises(expected) as raised:  # 9: no route
                await svc.jobs.get(job_id)
            errors.append(raised.value)
    assert "not mocked" in str(errors[2])
    for error in errors:
        assert error.request_id
        assert TOKEN not in _shown(error), type(error)


async def test_respx_sees_the_json_body_of_a_search(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post(f"{API}/api/public/v1/verification-job/search").respond(
        json={"results": [JOB], "count": 1}
    )
    async with Client(API, token=TOKEN, transport=HttpxTransport()) as svc:
        found = await svc.jobs.search(tags=["spring-cup"], limit=10)
    assert [job.id for job in found.jobs] == [7] and found.count == 1
    body: Any = route.calls.last.request.read()
    assert httpx.Response(200, content=body).json() == {
        "tags": ["spring-cup"],
        "statuses": [],
        "limit": 10,
        "offset": 0,
    }
