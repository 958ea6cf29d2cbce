"""OpenTelemetry metrics (``Client(metrics=...)``), read back with the SDK's in-memory reader."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from svc_async import (
    Client,
    ConnectError,
    MockTransport,
    Request,
    Response,
    RetryPolicy,
    json_response,
)
from svc_async.testing import VirtualClock

from .conftest import load


@pytest.fixture
def reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def provider(reader: InMemoryMetricReader) -> MeterProvider:
    return MeterProvider(metric_readers=[reader])


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Each instrument's data points, by name."""
    found: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "svc_async"
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


@pytest.mark.looptime
async def test_a_paced_retried_call_records_its_attempts_hold_retry_and_budget(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    job = load("get-verification-job.response.json")
    answers = [
        json_response(
            job,
            headers={
                "x-ratelimit-limit": "5",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": "3",
            },
        ),
        json_response({"message": "slow down"}, 429, {"Retry-After": "1"}),
        json_response({"message": "busy"}, 503, {"x-ratelimit-remaining": "4"}),
        json_response(job, headers={"x-ratelimit-remaining": "3", "x-ratelimit-reset": "59"}),
    ]

    def handler(request: Request) -> Response:
        return answers.pop(0)

    clock = VirtualClock()
    policy = RetryPolicy(attempts=4, wait_initial=0.5, wait_jitter=0)
    async with Client(
        "https://api.example",
        token="t",
        transport=MockTransport(handler),
        metrics=provider,
        clock=clock,
        retry=policy,
    ) as svc:
        await svc.jobs.get(job["id"])
        await svc.jobs.get(job["id"])

    points = _points(reader)
    durations = {
        (p.attributes.get("http.response.status_code"), p.attributes["svc_async.operation"]): p
        for p in points["http.client.request.duration"]
    }
    assert set(durations) == {(200, "jobs.get"), (429, "jobs.get"), (503, "jobs.get")}
    assert durations[(200, "jobs.get")].count == 2
    assert all(p.attributes["http.request.method"] == "GET" for p in durations.values())
    assert all(p.attributes["server.address"] == "api.example" for p in durations.values())
    (limited,) = points["svc_async.client.rate_limited"]
    assert limited.value == 1
    reasons = {
        p.attributes["svc_async.retry.reason"]: p.value for p in points["svc_async.client.retries"]
    }
    assert sum(reasons.values()) == 2 and any("429" in r for r in reasons)
    (hold,) = points["svc_async.client.pacing.duration"]
    assert hold.count == 1 and 3.0 <= hold.sum < 3.5  # held for the window's reset
    (remaining,) = points["svc_async.client.rate_limit.remaining"]
    assert remaining.value == 3


async def test_a_failed_attempt_records_its_error_type(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    def handler(request: Request) -> Response:
        raise ConnectError("connection refused")

    async with Client(
        "https://api.example",
        token="t",
        transport=MockTransport(handler),
        metrics=provider,
        retry=RetryPolicy(attempts=1),
    ) as svc:
        with pytest.raises(ConnectError):
            await svc.orgs.list()
    (point,) = _points(reader)["http.client.request.duration"]
    assert point.attributes["error.type"] == "ConnectError"
    assert "http.response.status_code" not in point.attributes


def test_metrics_takes_a_meter_provider_or_true() -> None:
    with pytest.raises(TypeError, match="MeterProvider"):
        Client("https://a.example", token="t", metrics="yes")


@pytest.mark.slow
def test_without_metrics_nothing_of_opentelemetry_is_imported() -> None:
    code = (
        "import sys, svc_async\n"
        "svc_async.Client('https://a.example', token='t')\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry') or m == 'svc_async._pipeline.metrics'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
