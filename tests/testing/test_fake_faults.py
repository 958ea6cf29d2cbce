"""FakeService fault injection: each knob, in-process and over real sockets."""

from __future__ import annotations

import asyncio

import aiohttp
import orjson
import pytest

from svc_async.errors import ConnectionLostError, RequestTimeout
from svc_async.testing import FakeClock, FakeService, FaultConfig, VirtualClock

from .test_fake_service import JOB, START, TOKEN, call, job_request, make_request

AUTH = {"Authorization": f"Bearer {TOKEN}"}


# Latency and stalls sleep on virtual time: exact durations, whatever the machine's load.
pytestmark = pytest.mark.looptime


def new_fake(faults: FaultConfig | None = None, **kwargs: object) -> FakeService:
    """A demo fake on a frozen clock with ``faults``; its latency sleeps on virtual time."""
    clock = FakeClock(start=START, source=VirtualClock())
    return FakeService(clock=clock, faults=faults, **kwargs)  # type: ignore[arg-type]


def _now() -> float:
    return asyncio.get_running_loop().time()


async def test_error_5xx_html_with_retry_after() -> None:
    fake = new_fake(FaultConfig(error_5xx=1.0, error_statuses=(502,), retry_after=2))
    status, resp, data = await call(fake, "GET", "/api/orgs/me")
    assert status == 502 and data is None
    assert resp.headers["Content-Type"] == "text/html"
    assert b"<center>nginx</center>" in resp.content and resp.headers["Retry-After"] == "2"
    assert fake.requests[-1].fault == "error_5xx" and fake.faults_injected == 1


async def test_reset_in_process_and_over_sockets() -> None:
    fake = new_fake(FaultConfig(reset=1.0, paths=("/api/orgs/me",)))
    transport = fake.transport()
    with pytest.raises(ConnectionLostError):
        await transport.send(make_request("GET", "/api/orgs/me"))
    # Restricted by path: other routes are untouched.
    assert (await call(fake, "GET", "/api/public/v1/season"))[0] == 200
    async with fake.serve() as url, aiohttp.ClientSession() as session:
        with pytest.raises((aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)):
            async with session.get(url + "/api/orgs/me", headers=AUTH) as resp:
                await resp.read()
    assert fake.requests[0].status == 0
    await transport.aclose()


async def test_latency_and_in_flight_peak() -> None:
    fake = new_fake(FaultConfig(latency=0.05))
    t0 = _now()
    results = await asyncio.gather(*(call(fake, "GET", "/api/orgs/me") for _ in range(8)))
    elapsed = _now() - t0
    assert all(r[0] == 200 for r in results)
    assert elapsed == pytest.approx(0.05)  # eight at once: one latency, not eight
    assert fake.max_in_flight == 8 and fake.in_flight == 0
    fake.reset_counters()
    assert fake.max_in_flight == 0


async def test_latency_spikes_are_seeded() -> None:
    def spikes(seed: int) -> list[bool]:
        fake = new_fake(FaultConfig(latency_spike=0.5, spike_seconds=9.0, seed=seed))
        return [fake.core.injector.decide("GET", "/x", None).delay > 0 for _ in range(32)]

    assert spikes(1) == spikes(1)
    assert spikes(1) != spikes(2)
    assert 4 < sum(spikes(1)) < 28


async def test_malformed_json() -> None:
    fake = new_fake(FaultConfig(malformed_json=1.0))
    status, resp, data = await call(fake, "GET", "/api/orgs/me")
    assert status == 200 and data is None
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(resp.content)


async def test_burst_429_headers() -> None:
    fake = new_fake(FaultConfig(burst_429=1.0, burst_retry_after=3, max_faults=2))
    statuses = []
    for _ in range(3):
        status, resp, _ = await call(fake, "GET", "/api/orgs/me")
        statuses.append(status)
        if status == 429:
            assert resp.headers["Retry-After"] == "3"
            assert resp.headers["x-ratelimit-reset"] == "3"
            assert resp.headers["x-ratelimit-remaining"] == "0"
    assert statuses == [429, 429, 200]
    assert fake.rate_limited == 2


async def test_create_503_before_creates_nothing() -> None:
    fake = new_fake(FaultConfig(create_503_before=1.0))
    jobs_before = len(fake.state.jobs)
    status, _, _ = await call(fake, "POST", JOB, job_request())
    assert status == 503 and len(fake.state.jobs) == jobs_before
    # Only creates are affected.
    assert (await call(fake, "GET", f"{JOB}/1"))[0] == 200


async def test_create_cut_off_creates_the_job() -> None:
    fake = new_fake(FaultConfig(create_cut_off=1.0))
    jobs_before = set(fake.state.jobs)
    with pytest.raises(ConnectionLostError):
        await fake.transport().send(make_request("POST", JOB, job_request(tags=["cut"])))
    (new,) = set(fake.state.jobs) - jobs_before
    _, _, found = await call(fake, "POST", f"{JOB}/search", {"tags": ["cut"]})
    assert [j["id"] for j in found["results"]] == [new]
    async with fake.serve() as url, aiohttp.ClientSession() as session:
        with pytest.raises((aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)):
            async with session.post(url + JOB, json=job_request(), headers=AUTH) as resp:
                await resp.read()
    assert len(fake.state.jobs) == len(jobs_before) + 2


async def test_create_stall_times_out_but_creates() -> None:
    fake = new_fake(FaultConfig(create_stall=1.0, stall_seconds=5.0))
    jobs_before = len(fake.state.jobs)
    t0 = _now()
    with pytest.raises(RequestTimeout):
        await fake.transport().send(make_request("POST", JOB, job_request(), timeout=0.1))
    assert _now() - t0 == pytest.approx(0.1)  # the timeout, not the 5 s stall
    assert len(fake.state.jobs) == jobs_before + 1
    async with fake.serve() as url, aiohttp.ClientSession() as session:
        with pytest.raises(asyncio.TimeoutError):
            async with session.post(
                url + JOB,
                json=job_request(),
                headers=AUTH,
                timeout=aiohttp.ClientTimeout(total=0.1),
            ) as resp:
                await resp.read()
    assert len(fake.state.jobs) == jobs_before + 2


async def test_cut_body_on_downloads() -> None:
    fake = new_fake(file_size=4096)
    _, _, entries = await call(fake, "POST", "/api/public/v1/event/1/entries")
    url = next(e for e in entries if e["soundRecording"])["soundRecording"]["downloadURL"]
    fake.faults = FaultConfig(cut_body=1.0)
    got = bytearray()
    with pytest.raises(ConnectionLostError):
        async with fake.transport().stream(make_request("GET", url, token=None)) as resp:
            assert resp.status == 200 and resp.headers["Content-Length"] == "4096"
            async for chunk in resp.iter_chunks(1000):
                got.extend(chunk)
    assert len(got) == 2048
    with pytest.raises(ConnectionLostError):
        await fake.transport().send(make_request("GET", url, token=None))
    async with fake.serve(), aiohttp.ClientSession() as session:
        # Same signed path, now on the files origin's loopback port.
        live = url.replace("http://files.fake.invalid", fake.files_url)
        with pytest.raises(aiohttp.ClientPayloadError):
            async with session.get(live) as r:
                await r.read()


async def test_fault_filters_max_faults_and_runtime_changes() -> None:
    fake = new_fake(FaultConfig(error_5xx=1.0, methods=("POST",), max_faults=1))
    assert (await call(fake, "GET", "/api/orgs/me"))[0] == 200
    assert (await call(fake, "POST", "/api/public/v1/event"))[0] >= 500
    assert (await call(fake, "POST", "/api/public/v1/event"))[0] == 200
    fake.faults = FaultConfig(error_5xx=1.0, paths=(f"{JOB}/{{verificationJobId}}",))
    assert (await call(fake, "GET", f"{JOB}/1"))[0] >= 500
    assert (await call(fake, "GET", "/api/orgs/me"))[0] == 200
    fake.faults = None
    assert (await call(fake, "GET", f"{JOB}/1"))[0] == 200
    with pytest.raises(ValueError, match="between 0 and 1"):
        FaultConfig(reset=1.5)


async def test_fault_sequence_is_deterministic() -> None:
    async def sequence(seed: int) -> list[int]:
        fake = new_fake(FaultConfig(error_5xx=0.3, burst_429=0.2, seed=seed))
        return [(await call(fake, "GET", "/api/orgs/me"))[0] for _ in range(30)]

    first = await sequence(5)
    assert first == await sequence(5)
    assert first != await sequence(6)
    assert {200, 429} <= set(first) and any(s >= 500 for s in first)
