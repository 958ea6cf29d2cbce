"""Issue 12's numbered failures, each reproduced over loopback or a mock, then held fixed."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import stat
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from svc_async import (
    AmbiguousCreateError,
    APIError,
    ApiKeyAuth,
    Client,
    ClientClosedError,
    ConnectionLostError,
    MockTransport,
    Pacer,
    RateLimitError,
    Request,
    Response,
    RetryPolicy,
    json_response,
)
from svc_async._transports.aiohttp import AiohttpTransport
from svc_async.auth import BearerAuth, HeaderAuth
from svc_async.testing import FakeService, VirtualClock
from svc_async.testing.faults import FaultConfig

from ..conftest import load, serve_app
from ..test_examples import example_request

TOKEN = FakeService.DEFAULT_TOKEN
SECRET_TOKEN = "tok-0123456789abcdef-SECRET"
JOB = load("create-verification-job.response.json")


def _rate(remaining: int, reset: str, limit: int = 10) -> dict[str, str]:
    return {
        "x-ratelimit-limit": str(limit),
        "x-ratelimit-remaining": str(remaining),
        "x-ratelimit-reset": reset,
    }


# 1. Pacing ignores every timeout -------------------------------------------------------


@pytest.mark.looptime
@pytest.mark.parametrize("reset", ["60", "3600"])
async def test_pacing_that_cannot_fit_the_deadline_raises_at_once(reset: str) -> None:
    transport = MockTransport(lambda r: json_response([], headers=_rate(0, reset)))
    clock = VirtualClock()
    async with Client(
        "https://v.example", token="t", transport=transport, timeout=5, clock=clock
    ) as svc:
        await svc.seasons.list()  # learns: budget spent until the window resets
        start = clock.now()
        with pytest.raises(RateLimitError) as info:
            await svc.seasons.list(timeout=2)
        assert clock.now() == start  # no time spent waiting
    assert info.value.retry_after is not None
    assert float(reset) - 1 < info.value.retry_after <= float(reset) + 1
    assert len(transport.requests) == 1  # nothing was sent for the refused call


@pytest.mark.parametrize("reset", ["1e308", "1e15", "nan", "-5"])
async def test_absurd_reset_values_are_unknown_not_a_forever_wait(reset: str) -> None:
    transport = MockTransport(lambda r: json_response([], headers=_rate(0, reset)))
    async with Client("https://v.example", token="t", transport=transport) as svc:
        await svc.seasons.list()
        async with asyncio.timeout(2):
            await svc.seasons.list()  # unknown reset, nothing in flight: no hold
    assert len(transport.requests) == 2


def test_epoch_milliseconds_read_as_epoch() -> None:
    from svc_async.retry import parse_reset

    now = 1_700_000_000.0
    assert parse_reset(str(int((now + 30) * 1000)), now=now) == pytest.approx(30)
    assert parse_reset("1e308", now=now) is None
    assert parse_reset(str(now + 10 * 86_400), now=now) is None


@pytest.mark.looptime
async def test_a_hold_longer_than_a_second_logs_one_info_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    transport = MockTransport(lambda r: json_response([], headers=_rate(0, "1.2")))
    caplog.set_level(logging.INFO, logger="svc_async.pacing")
    clock = VirtualClock()
    async with Client("https://v.example", token="t", transport=transport, clock=clock) as svc:
        await svc.seasons.list()
        start = clock.now()
        await asyncio.gather(svc.seasons.list(), svc.seasons.list())
        assert clock.now() - start >= 1.2  # both held until the window's end
    holds = [r for r in caplog.records if r.name == "svc_async.pacing"]
    assert len(holds) == 1
    assert "holding calls" in holds[0].getMessage()
    assert holds[0].svc_hold_seconds > 1.0  # type: ignore[attr-defined]
    assert holds[0].svc_hold_reason  # type: ignore[attr-defined]


# 2. Exactly-once create under a lagging index ------------------------------------------


_CREATE_ONCE = FaultConfig(
    create_cut_off=1.0, max_faults=1, paths=("/api/public/v1/verification-job",)
)


@pytest.mark.looptime
@pytest.mark.parametrize("lag", [0.0, 4.0, 8.0])
async def test_cut_off_create_under_search_lag_makes_exactly_one_job(lag: float) -> None:
    clock = VirtualClock()
    async with FakeService(seed=3, rate_limit=None, search_lag=lag, clock=clock) as fake:
        before = set(fake.jobs)
        fake.faults = _CREATE_ONCE
        async with _on(fake, clock, timeout=lag + 6) as svc:
            start = clock.now()
            job = await svc.jobs.create(example_request())
            assert lag <= clock.now() - start < lag + 6  # found once the index caught up
        created = [k for k in fake.jobs if k not in before]
        assert created == [job.id]


@pytest.mark.slow
async def test_a_create_cut_off_on_a_real_connection_is_found_not_repeated() -> None:
    async with FakeService(seed=3, rate_limit=None) as fake, fake.serve() as url:
        before = set(fake.jobs)
        fake.faults = _CREATE_ONCE
        async with Client(url, token=TOKEN, timeout=30) as svc:
            job = await svc.jobs.create(example_request())
        assert [k for k in fake.jobs if k not in before] == [job.id]
        creates = [r for r in fake.requests if r.path == "/api/public/v1/verification-job"]
        assert [r.status for r in creates] == [0]  # one create, its connection dropped


def _on(fake: FakeService, clock: VirtualClock, **options: Any) -> Client:
    """A client of ``fake`` in process, on ``clock`` (the fake's too)."""
    return Client(
        "http://fake.invalid", token=TOKEN, transport=fake.transport(), clock=clock, **options
    )


@pytest.mark.looptime
async def test_an_index_slower_than_the_deadline_gives_ambiguous_never_a_second_job(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = VirtualClock()
    async with FakeService(seed=3, rate_limit=None, search_lag=5.0, clock=clock) as fake:
        before = set(fake.jobs)
        fake.faults = _CREATE_ONCE
        async with _on(fake, clock, timeout=2) as svc:
            start = clock.now()
            with pytest.raises(AmbiguousCreateError) as info:
                await svc.jobs.create(example_request())
            assert clock.now() - start <= 2.0  # within the deadline, searches included
        assert len([k for k in fake.jobs if k not in before]) == 1
        assert info.value.tag in caplog.text  # the tag is logged for a later search
        await clock.sleep(5.1)
        async with _on(fake, clock) as svc:
            found = await svc.jobs.find_created(info.value.tag)
        assert found is not None and found.id in fake.jobs


@pytest.mark.looptime
async def test_many_cut_off_creates_under_lag_are_each_a_job_or_ambiguous() -> None:
    clock = VirtualClock()
    async with FakeService(seed=5, rate_limit=None, search_lag=2.0, clock=clock) as fake:
        before = set(fake.jobs)
        fake.faults = FaultConfig(
            create_cut_off=0.3, create_503_before=0.1, paths=("/api/public/v1/verification-job",)
        )
        async with _on(fake, clock, timeout=6) as svc:
            results = await asyncio.gather(
                *(svc.jobs.create(example_request()) for _ in range(40)), return_exceptions=True
            )
        created = [v for k, v in fake.jobs.items() if k not in before]
        tags = Counter(t for job in created for t in job["tags"] if t.startswith("svc-async"))
        assert set(tags.values()) == {1}  # 0 duplicates
        # A create answered 503 (before processing) on every attempt is a definite
        # refusal: it made nothing and says so.
        refused = [r for r in results if isinstance(r, APIError) and r.status == 503]
        assert all(
            not isinstance(r, BaseException) or isinstance(r, AmbiguousCreateError)
            for r in results
            if not any(r is x for x in refused)
        ), [repr(r) for r in results if isinstance(r, BaseException)]
        assert len(created) == 40 - len(refused)  # every other create made exactly one job


@pytest.mark.looptime
async def test_idempotency_key_repeat_returns_the_existing_job() -> None:
    clock = VirtualClock()
    async with FakeService(seed=3, rate_limit=None, search_lag=0.2, clock=clock) as fake:
        before = set(fake.jobs)
        async with _on(fake, clock) as svc:
            first = await svc.jobs.create(example_request(), idempotency_key="order-123")
            await clock.sleep(0.3)  # past the index's lag
        async with _on(fake, clock) as svc:  # a restarted process
            again = await svc.jobs.create(example_request(), idempotency_key="order-123")
            found = await svc.jobs.find_created("order-123")
            other = await svc.jobs.create(example_request(), idempotency_key="order-124")
        assert again.id == first.id and found is not None and found.id == first.id
        assert other.id != first.id
        assert len([k for k in fake.jobs if k not in before]) == 2


async def test_idempotency_key_is_checked_before_sending() -> None:
    transport = MockTransport(lambda r: json_response(JOB))
    async with Client("https://v.example", token="t", transport=transport) as svc:
        with pytest.raises(ValueError, match="idempotency_key"):
            await svc.jobs.create(example_request(), idempotency_key="  ")
    assert transport.requests == []


# 3. Two clients on one budget ------------------------------------------------------------


async def _acquired_within(pacer: Pacer, seconds: float) -> bool:
    try:
        async with asyncio.timeout(seconds):
            await pacer.acquire()
    except TimeoutError:
        return False
    return True


async def test_an_answer_below_the_pacers_own_count_means_a_shared_budget() -> None:
    # Alone, an answer never falls below the count: that count already spends every
    # call in flight. Seven in flight used to hide up to seven calls of another client.
    pacer = Pacer()
    await pacer.acquire()
    pacer.release(_rate(29, "2", limit=30), 200)
    for _ in range(8):
        await pacer.acquire()  # 21 left by the pacer's count, 8 in flight
    pacer.release(_rate(21, "2", limit=30), 200)
    assert not pacer.shared  # every call counted: exactly the pacer's own count
    pacer.release(_rate(20, "2", limit=30), 200)
    assert pacer.shared  # one call more than its own was spent


@pytest.mark.parametrize(("second", "shared"), [(16, False), (12, True)])
async def test_a_first_answer_showing_someone_elses_spending_holds_the_burst(
    second: int, shared: bool
) -> None:
    # 13 of 30 spent when this client's first call was counted: someone else spends, or
    # spent. One call goes alone; its answer tells whether they still spend.
    pacer = Pacer()
    await pacer.acquire()
    pacer.release(_rate(17, "2", limit=30), 200)
    assert not pacer.shared
    await pacer.acquire()
    assert not await _acquired_within(pacer, 0.05)  # no burst on a count maybe stale
    pacer.release(_rate(second, "2", limit=30), 200)
    assert pacer.shared is shared
    if not shared:  # alone after all: the burst goes
        assert all([await _acquired_within(pacer, 0.05) for _ in range(8)])


async def test_a_first_answer_of_the_whole_budget_bursts_at_once() -> None:
    pacer = Pacer()
    await pacer.acquire()
    pacer.release(_rate(29, "2", limit=30), 200)
    assert all([await _acquired_within(pacer, 0.05) for _ in range(8)])
    assert not pacer.shared


@pytest.mark.looptime
async def test_two_clients_sharing_one_budget_fail_no_call() -> None:
    # Eight windows of 2 s each on virtual time: the waits take no real time and a
    # loaded machine cannot stretch a call across a window's end. The same across real
    # processes (no shared memory): tests/fleet/test_fleet_processes.py, without a fleet.
    clock = VirtualClock()
    async with FakeService(seed=1, rate_limit=(30, 2.0), demo_data=True, clock=clock) as fake:
        failures: list[BaseException] = []

        async def worker(svc: Client, n: int) -> None:
            sem = asyncio.Semaphore(8)

            async def one() -> None:
                async with sem:
                    try:
                        await svc.seasons.list()
                    except Exception as exc:
                        failures.append(exc)

            await asyncio.gather(*(one() for _ in range(n)))

        url = "http://fake.invalid"
        async with (
            Client(url, token=TOKEN, timeout=60, transport=fake.transport(), clock=clock) as a,
            Client(url, token=TOKEN, timeout=60, transport=fake.transport(), clock=clock) as b,
        ):
            start = clock.now()
            await asyncio.gather(worker(a, 120), worker(b, 120))
            took = clock.now() - start
        assert failures == []
        assert fake.rate_limited < 240 * 0.05, fake.rate_limited
        assert 14.0 <= took < 30.0  # 240 calls at 30 per 2 s window: about 8 windows


# 4. Secrets echoed by a server ---------------------------------------------------------


def _echo_app(secret: str) -> web.Application:
    async def json_400(request: web.Request) -> web.Response:
        return web.json_response(
            {"error": "Bad", "message": f"bad header {request.headers['Authorization']}"},
            status=400,
        )

    async def json_401(request: web.Request) -> web.Response:
        return web.json_response({"message": [{"message": f"unknown {secret}"}]}, status=401)

    async def text_500(request: web.Request) -> web.Response:
        return web.Response(
            text=f"crash with {request.headers.get('X-Api-Key', secret)}", status=400
        )

    async def bad_json(request: web.Request) -> web.Response:
        return web.Response(text=f"{{not json {secret}", content_type="application/json")

    async def login(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"message": f"no key {body['secret']}"}, status=401)

    app = web.Application()
    app.router.add_get("/json400", json_400)
    app.router.add_get("/json401", json_401)
    app.router.add_get("/text", text_500)
    app.router.add_get("/badjson", bad_json)
    app.router.add_post("/api/auth/api-key/login", login)
    return app


@pytest.mark.parametrize("kind", ["bearer", "header", "apikey"])
async def test_secrets_echoed_by_the_server_never_reach_messages(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth: Any = {
        "bearer": BearerAuth(SECRET_TOKEN),
        "header": HeaderAuth("X-Api-Key", SECRET_TOKEN),
        "apikey": ApiKeyAuth("key-id", SECRET_TOKEN),
    }[kind]
    texts: list[str] = []
    async with serve_app(_echo_app(SECRET_TOKEN)) as url:
        async with Client(url, auth=auth, retry=RetryPolicy(attempts=1)) as svc:
            for path in ("/json400", "/json401", "/text", "/badjson"):
                with pytest.raises(Exception) as info:
                    await svc.request("GET", path)
                exc = info.value
                texts += [str(exc), repr(exc), repr(getattr(exc, "body", None))]
                texts += [repr(exc.args)]
    texts.append(caplog.text)
    leaked = [t for t in texts if SECRET_TOKEN in t]
    assert leaked == []
    assert len(texts) == 17


# 5. A transport handed to Client is closed by it -----------------------------------------


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_fifty_clients_with_given_transports_leave_no_fds() -> None:
    async with FakeService(seed=1, rate_limit=None, demo_data=True) as fake, fake.serve() as url:
        await asyncio.sleep(0)
        before = _fds()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(50):
                async with Client(url, token=TOKEN, transport=AiohttpTransport(limit=50)) as svc:
                    await svc.seasons.list()
            await asyncio.sleep(0.05)
            gc.collect()
        assert _fds() <= before
        assert [w for w in caught if "nclosed" in str(w.message)] == []


async def test_a_callers_own_session_is_not_closed() -> None:
    import aiohttp

    async with FakeService(seed=1, rate_limit=None, demo_data=True) as fake, fake.serve() as url:
        async with aiohttp.ClientSession() as session:
            transport = AiohttpTransport(session=session)
            async with Client(url, token=TOKEN, transport=transport) as svc:
                await svc.seasons.list()
            assert not session.closed


# 6. aclose() during login; auth calls retried; refresh keeps its token -----------------


async def test_aclose_during_login_ends_the_call_with_client_closed_quickly() -> None:
    started = asyncio.Event()

    async def slow_login(request: web.Request) -> web.Response:
        started.set()
        await asyncio.sleep(5)
        return web.json_response({"accessToken": "a"})

    app = web.Application()
    app.router.add_post("/api/auth/api-key/login", slow_login)
    async with serve_app(app) as url:
        svc = Client(url, auth=ApiKeyAuth("k", "s-secret"))
        task = asyncio.create_task(svc.seasons.list())
        await started.wait()
        closing = asyncio.create_task(svc.aclose())
        start = time.monotonic()
        with pytest.raises(ClientClosedError):
            await task
        assert time.monotonic() - start < 2.5  # not after the login's 5 s (generous: load)
        await closing


async def test_aclose_after_a_nested_login_still_ends_the_call_quickly() -> None:
    started = asyncio.Event()

    async def login(request: web.Request) -> web.Response:
        return web.json_response({"accessToken": "a", "refreshToken": "r"})

    async def slow(request: web.Request) -> web.Response:
        started.set()
        await asyncio.sleep(5)
        return web.json_response([])

    app = web.Application()
    app.router.add_post("/api/auth/api-key/login", login)
    app.router.add_get("/api/public/v1/season", slow)
    async with serve_app(app) as url:
        svc = Client(url, auth=ApiKeyAuth("k", "s-secret"))
        task = asyncio.create_task(svc.seasons.list())  # logs in first, then waits
        await started.wait()
        start = time.monotonic()
        await svc.aclose()
        with pytest.raises(ClientClosedError):
            await task
        assert time.monotonic() - start < 2.5  # not after the answer's 5 s (generous: load)


async def test_a_dropped_login_connection_is_retried() -> None:
    logins = 0

    def handler(request: Request) -> Response:
        nonlocal logins
        if request.url.path.endswith("/login"):
            logins += 1
            if logins == 1:
                raise ConnectionLostError("reset during login")
            return json_response({"accessToken": "acc", "refreshToken": "ref"})
        return json_response([])

    policy = RetryPolicy(wait_initial=0.0, wait_max=0.0)
    async with Client(
        "https://v.example",
        auth=ApiKeyAuth("k", "secret"),
        transport=MockTransport(handler),
        retry=policy,
    ) as svc:
        assert await svc.seasons.list() == []
    assert logins == 2


async def test_a_refresh_without_a_new_refresh_token_keeps_the_old_one() -> None:
    seen: list[Any] = []
    server = {"valid": "", "issued": 0}

    def handler(request: Request) -> Response:
        path = request.url.path
        if path.endswith("/login"):
            server["valid"] = "acc0"
            return json_response({"accessToken": "acc0", "refreshToken": "ref0"})
        if path.endswith("/refresh"):
            seen.append(request.json()["refreshToken"])
            server["issued"] = int(server["issued"]) + 1
            server["valid"] = f"acc{server['issued']}"
            return json_response({"accessToken": server["valid"]})  # no new refreshToken
        if request.headers["Authorization"] != f"Bearer {server['valid']}":
            return json_response({"message": "expired"}, status=401)
        return json_response([])

    auth = ApiKeyAuth("k", "secret")
    async with Client("https://v.example", auth=auth, transport=MockTransport(handler)) as svc:
        await svc.seasons.list()
        server["valid"] = "expired"  # the server expires the token, twice
        await svc.seasons.list()
        server["valid"] = "expired"
        await svc.seasons.list()
    assert seen == ["ref0", "ref0"]
    assert auth.logins == 1


# 7. A client reused across asyncio.run() -------------------------------------------------


def test_a_client_works_in_a_second_event_loop() -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            hits.append(self.path)
            body = b"[]"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # A short poll: shutdown() waits for serve_forever to look (0.5 s by default).
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        svc = Client(f"http://127.0.0.1:{server.server_address[1]}", token="t")
        assert asyncio.run(svc.seasons.list()) == []
        assert asyncio.run(svc.seasons.list()) == []  # a new loop: fresh connections
        asyncio.run(svc.aclose())
        assert hits == ["/api/public/v1/season", "/api/public/v1/season"]  # no retries
    finally:
        server.shutdown()
        server.server_close()


# 8. Downloads: cancelled by aclose(), usual permissions ----------------------------------


async def test_aclose_cancels_a_download(tmp_path: Path) -> None:
    streaming = asyncio.Event()

    async def slow(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"x" * 1024)
        streaming.set()
        await asyncio.sleep(5)
        return response

    app = web.Application()
    app.router.add_get("/files/slow", slow)
    async with serve_app(app) as url:
        svc = Client(url, token="t")
        task = asyncio.create_task(svc.download(f"{url}/files/slow", tmp_path / "out.bin"))
        await streaming.wait()
        start = time.monotonic()
        await svc.aclose()
        with pytest.raises(ClientClosedError):
            await task
        assert time.monotonic() - start < 2.5  # not after the server's 5 s (generous: load)
    assert list(tmp_path.iterdir()) == []  # the partial file is gone


async def test_downloaded_files_get_umask_permissions(tmp_path: Path) -> None:
    async def file(request: web.Request) -> web.Response:
        return web.Response(body=b"data")

    app = web.Application()
    app.router.add_get("/files/a", file)
    old = os.umask(0o027)
    try:
        async with serve_app(app) as url, Client(url, token="t") as svc:
            await svc.download(f"{url}/files/a", tmp_path / "a.bin")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.bin").stat().st_mode) == 0o640


# 9. Ids beyond 64 bits ---------------------------------------------------------------


@pytest.mark.parametrize("big", [2**64, 2**70 + 1, -(2**63) - 1, 2**53 + 1])
async def test_ids_stay_exact_integers(big: int) -> None:
    # orjson itself cannot write integers beyond 64 bits: splice the number in as text.
    raw = orjson.dumps({**JOB, "id": 0}).replace(b'"id":0', f'"id":{big}'.encode())
    transport = MockTransport(lambda r: Response(200, {}, raw))
    async with Client("https://v.example", token="t", transport=transport) as svc:
        got = await svc.jobs.get(7)
    assert got.id == big and isinstance(got.id, int)
    from svc_async._pipeline.run import decode_json

    assert decode_json(Response(200, {}, b'{"n": 123456789012345678901234567890}')) == {
        "n": 123456789012345678901234567890
    }


# issue 15: an unclosed client says so ---------------------------------------------------


async def test_an_unclosed_client_warns_once_naming_where_it_was_made() -> None:
    gc.collect()  # clients other tests dropped say their piece first
    svc = Client(
        "https://v.example", token="t", transport=MockTransport(lambda r: json_response([]))
    )
    await svc.seasons.list()
    view = svc.with_options(timeout=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del svc, view
        gc.collect()
    unclosed = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert len(unclosed) == 1
    assert "svc_async.Client" in str(unclosed[0].message)
    assert "test_pipeline_faults.py" in str(unclosed[0].message)


async def test_a_closed_client_does_not_warn() -> None:
    svc = Client(
        "https://v.example", token="t", transport=MockTransport(lambda r: json_response([]))
    )
    await svc.seasons.list()
    await svc.aclose()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del svc
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


# The decoder hook: a streamed body handed to a decoder unread (for incremental decoding)


async def test_a_stream_decoder_gets_the_2xx_body_unread_and_errors_stay_errors() -> None:
    from svc_async import NotFoundError
    from svc_async._pipeline.answers import Decoder
    from svc_async._transports.base import StreamResponse

    def handler(request: Request) -> Response:
        if request.url.path.endswith("/missing"):
            return json_response({"message": "no such thing"}, status=404)
        return json_response(list(range(1000)))

    chunks_seen: list[int] = []

    class Streamed(Decoder[Any]):
        streams = True

        async def read_stream(self, stream: StreamResponse) -> Any:
            parts = []
            async for chunk in stream.iter_chunks(512):
                chunks_seen.append(len(chunk))
                parts.append(chunk)
            return orjson.loads(b"".join(parts))

    decoder = Streamed()

    async with Client("https://v.example", token="t", transport=MockTransport(handler)) as svc:
        reply = await svc._send("GET", "/big", idempotent=True, decode=decoder, reply=True)
        assert reply.data == list(range(1000))
        assert reply.meta is not None and reply.meta.status == 200
        with pytest.raises(NotFoundError, match="no such thing"):
            await svc._send("GET", "/missing", idempotent=True, decode=decoder)
    assert len(chunks_seen) > 1  # it was streamed, not handed over whole
