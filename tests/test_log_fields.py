"""Every record the SDK logs about a call carries the call's fields as attributes
(``extra=``): a JSON formatter reads them without parsing the message."""

from __future__ import annotations

import logging

import pytest

from svc_async import Client, MockTransport, Request, Response, RetryPolicy, json_response
from svc_async.retry import RetryBudget

pytestmark = pytest.mark.looptime

SEASON = {
    "id": 1,
    "title": "Spring",
    "organisationId": 1,
    "startDate": "2026-03-01T00:00:00Z",
    "endDate": "2026-06-01T00:00:00Z",
}
FIELDS = ("request_id", "operation", "method", "status", "attempt")


def _flaky(failures: int, status: int = 503) -> MockTransport:
    answers = iter([json_response({"error": "busy"}, status)] * failures)

    def handler(request: Request) -> Response:
        return next(answers, None) or json_response([SEASON], headers={"X-Request-Id": "srv-1"})

    return MockTransport(handler)


def _call_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("svc_async") and "request_id" in vars(r)]


async def test_a_retried_call_logs_its_fields_on_every_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="svc_async")
    async with Client("https://v.example", token="t", transport=_flaky(2), rate_limit=False) as svc:
        await svc.seasons.list()
    records = _call_records(caplog)
    assert [(r.levelname, r.status, r.attempt) for r in records] == [
        ("DEBUG", 503, 1),
        ("INFO", 503, 1),
        ("DEBUG", 503, 2),
        ("INFO", 503, 2),
        ("DEBUG", 200, 3),
    ]
    for record in records:
        assert all(hasattr(record, name) for name in FIELDS)
        assert (record.operation, record.method) == ("seasons.list", "GET")
    sent = {r.request_id for r in records[:-1]}
    assert len(sent) == 1 and sent != {"srv-1"}  # one id on every attempt: the call's own
    assert records[-1].request_id == "srv-1"  # the server's own when its answer names one
    retries = [r for r in records if r.levelname == "INFO"]
    assert [r.reason for r in retries] == ["HTTP 503", "HTTP 503"]
    assert all(r.wait > 0 and f"{r.wait:.2f}s" in r.getMessage() for r in retries)
    # The message stays readable as it was.
    assert retries[0].getMessage().startswith("retrying GET /api/public/v1/season (attempt 2)")


async def test_a_spent_retry_budget_logs_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="svc_async")
    budget = RetryBudget(capacity=4, retry_cost=5)  # cannot pay for one retry
    async with Client(
        "https://v.example",
        token="t",
        transport=_flaky(5),
        rate_limit=False,
        retry_budget=budget,
        retry=RetryPolicy(attempts=3),
    ) as svc:
        with pytest.raises(Exception, match="503"):
            await svc.seasons.list()
    (record,) = _call_records(caplog)
    assert (record.reason, record.status, record.attempt) == ("retry budget exhausted", 503, 1)
    assert record.operation == "seasons.list"
