"""OpenTelemetry metrics (``Client(metrics=...)``), read back with the SDK's in-memory reader."""

from __future__ import annotations

import asyncio
import datetime as dt
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from svc_async import (
    Client,
    ConnectError,
    JobRequest,
    JobWaitTimeout,
    MockTransport,
    PollPolicy,
    Request,
    Response,
    RetryPolicy,
    json_response,
)
from svc_async.testing import FakeService, VirtualClock
from svc_async.webhooks import WebhookReceiver

from ..conftest import load
from ..redis_server import free_port


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


def test_clients_and_receivers_of_one_provider_share_its_instruments(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    def handler(request: Request) -> Response:
        left = "7" if request.url.host == "a.example" else "9"
        return json_response([], headers={"x-ratelimit-remaining": left})

    first = Client(
        "https://a.example", token="t", transport=MockTransport(handler), metrics=provider
    )
    second = Client(
        "https://b.example", token="t", transport=MockTransport(handler), metrics=provider
    )
    assert first.metrics is second.metrics is WebhookReceiver("s", metrics=provider).metrics

    async def both() -> None:
        async with first, second:
            await first.orgs.list()
            await second.orgs.list()

    asyncio.run(both())
    left = {
        p.attributes["server.address"]: p.value
        for p in _points(reader)["svc_async.client.rate_limit.remaining"]
    }
    assert left == {"a.example": 7, "b.example": 9}  # the gauge reads every client's


async def test_the_rate_limit_left_is_read_as_the_pacer_reads_it(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    """A value the pacer ignores (a superscript digit) is ignored here too, never raised
    into the call; one it reads (a sign, spaces) is recorded."""
    values = iter(["\xb2", " +5 "])

    def handler(request: Request) -> Response:
        return json_response([], headers={"x-ratelimit-remaining": next(values)})

    async with Client(
        "https://a.example", token="t", transport=MockTransport(handler), metrics=provider
    ) as svc:
        await svc.orgs.list()
        assert "svc_async.client.rate_limit.remaining" not in _points(reader)
        await svc.orgs.list()
    (left,) = _points(reader)["svc_async.client.rate_limit.remaining"]
    assert left.value == 5


def test_metrics_takes_a_meter_provider_or_true() -> None:
    with pytest.raises(TypeError, match="MeterProvider"):
        Client("https://a.example", token="t", metrics="yes")


_LOADED = (
    "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')"
    " or m == 'svc_async._pipeline.metrics'))\n"
)


@pytest.mark.slow
def test_without_metrics_nothing_of_opentelemetry_is_imported() -> None:
    code = (
        "import sys, svc_async\n"
        "from svc_async.webhooks import WebhookReceiver\n"
        "svc_async.Client('https://a.example', token='t')\n"
        "WebhookReceiver('s')\n" + _LOADED
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_without_metrics_a_fleet_imports_nothing_of_opentelemetry_itself() -> None:
    # redis-py (8.x) imports OpenTelemetry itself when it is installed, for its own
    # observability: what is loaded once redis is must not grow with the fleet's parts.
    code = (
        "import sys, redis.asyncio, svc_async\n"
        "from svc_async.webhooks import WebhookReceiver\n" + _LOADED + "svc_async.Client("
        "'https://a.example', token='t', fleet='redis://127.0.0.1:1/0', account='a')\n"
        "WebhookReceiver('s', fleet='redis://127.0.0.1:1/0')\n" + _LOADED
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after = out.stdout.strip().splitlines()
    assert after == before
    assert "svc_async._pipeline.metrics" not in after


def test_the_receiver_takes_a_meter_provider_or_true() -> None:
    with pytest.raises(TypeError, match="MeterProvider"):
        WebhookReceiver("s", metrics="yes")


# ------------------------------------------------------------------ job waits


QUICK = PollPolicy(wait_initial=0.02, wait_exp_base=1.5, wait_max=0.1, wait_jitter=0.0, timeout=5)


def _job_request() -> JobRequest:
    return JobRequest(
        name="Routine",
        email="coach@team.example",
        organisation_id=1,
        audio_file_url="https://files.example/routine.mp3",
        start_date=dt.date(2025, 1, 1),
        end_date=dt.date(2025, 6, 1),
        required_territories=["GB"],
    )


def _fake(delay: float) -> FakeService:
    return FakeService(
        demo_data=False, processing_delay=delay, rate_limit=None, clock=VirtualClock()
    )


def _on(service: FakeService, provider: MeterProvider) -> Client:
    return Client(
        "http://fake.invalid",
        token=FakeService.DEFAULT_TOKEN,
        transport=service.transport(),
        clock=service.clock.source,
        metrics=provider,
    )


def _waits(reader: InMemoryMetricReader) -> dict[str, Any]:
    """The job-wait points by outcome."""
    return {
        p.attributes["svc_async.outcome"]: p for p in _points(reader)["svc_async.job.wait.duration"]
    }


@pytest.mark.looptime
async def test_a_job_waited_for_records_its_wait_and_final_status(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    service = _fake(2.0)
    async with _on(service, provider) as svc:
        job = await svc.jobs.create(_job_request())
        done = await svc.jobs.wait(job.id, policy=QUICK)
        await svc.jobs.create_and_wait(_job_request(), policy=QUICK)
    (finished,) = _waits(reader).values()
    assert finished.attributes["svc_async.outcome"] == "finished"
    assert finished.attributes["svc_async.job.status"] == str(done.status)
    assert finished.count == 2
    # each wait took the job's 2 s of processing, and at most one pause more
    assert 4.0 <= finished.sum <= 4.0 + 2 * QUICK.wait_max + 0.01


@pytest.mark.looptime
async def test_a_wait_that_times_out_or_is_cancelled_records_how_it_ended(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    service = _fake(60.0)
    async with _on(service, provider) as svc:
        job = await svc.jobs.create(_job_request())
        with pytest.raises(JobWaitTimeout):
            await svc.jobs.wait(job.id, policy=QUICK, timeout=1.5)
        waiting = asyncio.create_task(svc.jobs.wait(job.id, policy=QUICK))
        await asyncio.sleep(0.5)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
    waits = _waits(reader)
    assert set(waits) == {"timeout", "cancelled"}
    assert waits["timeout"].count == 1 and waits["timeout"].sum == pytest.approx(1.5, abs=0.01)
    assert waits["cancelled"].sum == pytest.approx(0.5, abs=0.01)
    assert "svc_async.job.status" not in waits["timeout"].attributes


@pytest.mark.looptime
async def test_a_wait_that_fails_records_the_error_type(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    service = _fake(1.0)
    async with _on(service, provider) as svc:
        job = await svc.jobs.create(_job_request())

        def refuse(job: Any) -> None:
            raise ValueError("not this one")

        with pytest.raises(ValueError):
            await svc.jobs.wait(job.id, policy=QUICK, on_status=refuse)
    (failed,) = _waits(reader).values()
    assert failed.attributes == {"svc_async.outcome": "error", "error.type": "ValueError"}


# ------------------------------------------------------------------ webhook deliveries


SECRET = "metrics-hook-secret"
QUERY = {"key": SECRET}
STATUS = b'{"id": 5, "status": "Processed"}'


def _deliveries(reader: InMemoryMetricReader) -> dict[tuple[str, str, str | None], int]:
    """The delivery counts by (kind, event, outcome)."""
    return {
        (
            p.attributes["svc_async.webhook.kind"],
            p.attributes["svc_async.webhook.event"],
            p.attributes.get("svc_async.outcome"),
        ): p.value
        for p in _points(reader)["svc_async.webhook.deliveries"]
    }


async def test_deliveries_received_run_and_duplicates_are_counted(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    receiver = WebhookReceiver(SECRET, metrics=provider)
    seen: list[int] = []
    receiver.on_status_update(lambda update: seen.append(update.job_id))
    for _ in range(2):  # the second is a duplicate: dropped, still received
        assert (await receiver.receive(STATUS, QUERY, {})).status == 204
    test = b'{"id": 0, "status": "Processed", "isTest": true}'
    assert (await receiver.receive(test, QUERY, {})).status == 204
    assert (await receiver.receive(STATUS, {"key": "wrong"}, {})).status == 401
    await receiver.aclose()
    assert seen == [5]
    assert _deliveries(reader) == {
        ("status", "received", "accepted"): 1,
        ("status", "received", "duplicate"): 1,
        ("status", "received", "test"): 1,
        ("unknown", "received", "rejected"): 1,
        ("status", "run", None): 1,
    }


@pytest.mark.looptime
async def test_a_delivery_whose_callback_keeps_failing_is_counted_given_up(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    retry = RetryPolicy(attempts=3, wait_initial=1.0, wait_jitter=0)
    receiver = WebhookReceiver(SECRET, callback_retry=retry, metrics=provider)
    calls: list[int] = []

    def broken(update: Any) -> None:
        calls.append(update.job_id)
        raise RuntimeError("callback down")

    receiver.on_status_update(broken)
    assert (await receiver.receive(STATUS, QUERY, {})).status == 204
    await receiver.drain()
    await receiver.aclose()
    assert calls == [5, 5, 5]
    assert _deliveries(reader) == {
        ("status", "received", "accepted"): 1,
        ("status", "given_up", None): 1,
    }


# ------------------------------------------------------------------ the fleet


def _fleet_counts(reader: InMemoryMetricReader, name: str, key: str) -> dict[str, int]:
    return {p.attributes[key]: p.value for p in _points(reader).get(name, [])}


async def _three_fleet_calls(fleet: str, provider: MeterProvider) -> None:
    """Three calls of a client in the fleet at ``fleet``, recording to ``provider``."""
    service = FakeService(demo_data=False)
    async with (
        service,
        Client(
            "http://fake.invalid",
            token=FakeService.DEFAULT_TOKEN,
            transport=service.transport(),
            fleet=fleet,
            account="metrics-test",
            metrics=provider,
        ) as svc,
    ):
        for _ in range(3):
            await svc.orgs.list()


async def test_calls_granted_by_the_shared_budget_are_counted(
    redis_url: str, provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    await _three_fleet_calls(redis_url, provider)
    grants = _fleet_counts(reader, "svc_async.fleet.grants", "svc_async.fleet.budget")
    assert grants == {"shared": 3}
    assert "svc_async.fleet.store.outages" not in _points(reader)


async def test_a_store_outage_is_counted_and_calls_are_granted_locally(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    await _three_fleet_calls(closed, provider)
    outages = _fleet_counts(reader, "svc_async.fleet.store.outages", "svc_async.fleet.role")
    assert outages == {"budget": 1}  # one outage, however many calls met it
    grants = _fleet_counts(reader, "svc_async.fleet.grants", "svc_async.fleet.budget")
    assert grants == {"local": 3}


async def test_a_fleet_receiver_counts_its_store_outage_and_its_deliveries(
    provider: MeterProvider, reader: InMemoryMetricReader
) -> None:
    closed = f"redis://127.0.0.1:{free_port()}/0"
    receiver = WebhookReceiver(SECRET, fleet=closed, metrics=provider)
    seen: list[int] = []
    receiver.on_status_update(lambda update: seen.append(update.job_id))
    async with receiver:
        assert (await receiver.receive(STATUS, QUERY, {})).status == 204
        await receiver.drain()
    assert seen == [5]  # handled locally while the store is away
    outages = _fleet_counts(reader, "svc_async.fleet.store.outages", "svc_async.fleet.role")
    assert outages == {"receiver": 1}
    assert _deliveries(reader) == {
        ("status", "received", "accepted"): 1,
        ("status", "run", None): 1,
    }


def test_every_instrument_is_listed_in_the_logging_guide(provider: MeterProvider) -> None:
    from pathlib import Path

    from svc_async._pipeline.metrics import Metrics

    page = (Path(__file__).parents[2] / "docs" / "guides" / "logging.md").read_text()
    names = [v.name for v in vars(Metrics(provider)).values() if hasattr(v, "name")]
    assert len(names) == 9
    assert [name for name in names if f"| `{name}` |" not in page] == []
