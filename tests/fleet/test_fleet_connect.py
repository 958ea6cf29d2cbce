"""Fleet URLs as operators run Redis: Sentinel, Cluster, TLS, an ACL user; and a failover.

Each kind of server is started once for the module (``svc_async.testing.redis_server``);
the fleet's features (the shared budget, a webhook delivery run once by two replicas, a
job wake-up across receivers) run through its URL. The failover test has a Sentinel set
of its own: its master is killed while a client makes calls.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote

import pytest

from svc_async import Client
from svc_async.fleet.connect import check_url, describe, parse_url, redis_client
from svc_async.fleet.store import Store
from svc_async.testing import FakeService
from svc_async.testing.redis_server import (
    ACL_CONFIG,
    ACL_PASSWORD,
    ACL_USER,
    ClusterSet,
    RedisServer,
    SentinelSet,
    TlsFiles,
    make_tls_files,
    tls_supported,
)
from svc_async.webhooks import JobStatusUpdate, WebhookReceiver, parse_delivery

from ..redis_server import require_binary

TOKEN = FakeService.DEFAULT_TOKEN
SECRET = "pa:ss/w@rd"
"""A password with every character a URL must escape in it."""
PASSWORD = quote(SECRET, safe="")
"""``SECRET`` as a URL carries it."""


# -- URLs: accepted forms, clear refusals, no secret shown --------------------------------


@pytest.mark.parametrize(
    ("url", "kind", "nodes", "master", "db"),
    [
        ("redis://h:7/2", "server", [("h", 7)], None, 2),
        ("rediss://h", "server", [("h", 6379)], None, 0),
        (
            "redis+sentinel://a,b:26380/mymaster",
            "sentinel",
            [("a", 26379), ("b", 26380)],
            "mymaster",
            0,
        ),
        ("rediss+sentinel://a:1/m/3", "sentinel", [("a", 1)], "m", 3),
        ("redis+cluster://a:7000,[::1]:7001/0", "cluster", [("a", 7000), ("::1", 7001)], None, 0),
        ("unix:///run/redis.sock?db=4", "server", [], None, 4),
    ],
)
def test_each_url_form_names_its_servers(
    url: str, kind: str, nodes: list[tuple[str, int]], master: str | None, db: int
) -> None:
    target = parse_url(url)
    assert (target.kind, list(target.nodes), target.master, target.db) == (kind, nodes, master, db)
    assert check_url(url) == url


def test_credentials_and_options_come_out_decoded() -> None:
    url = f"redis+sentinel://fleet:{PASSWORD}@h/m?sentinel_password={PASSWORD}&client_name=w1"
    target = parse_url(url)
    assert (target.username, target.password) == ("fleet", SECRET)
    assert target.options == {"sentinel_password": SECRET, "client_name": "w1"}
    tls = parse_url("rediss://:pw@h/0?ssl_cert_reqs=none&ssl_check_hostname=false")
    assert (tls.username, tls.password, tls.tls) == (None, "pw", True)
    assert tls.options == {"ssl_cert_reqs": "none", "ssl_check_hostname": False}


@pytest.mark.parametrize(
    ("url", "error", "match"),
    [
        (7, TypeError, "Redis URL string"),
        ("http://h", ValueError, r"redis\+sentinel, rediss\+sentinel, redis\+cluster"),
        (f"redis+sentinel://u:{PASSWORD}@h:26379", ValueError, "names the master"),
        ("redis+sentinel://h/m/x", ValueError, "database"),
        ("redis+cluster://h/1", ValueError, "database 0 only"),
        ("redis://h:99999/0", ValueError, "port"),
        ("redis://a:1,b:2/0", ValueError, "one host"),
        (f"redis://u:{PASSWORD}@h/0?socket_timeout=9", ValueError, "unknown here"),
        ("redis://h/0?ssl_ca_certs=/ca.pem", ValueError, "needs a TLS scheme"),
        (f"redis://h/0?sentinel_password={PASSWORD}", ValueError, "needs a Sentinel URL"),
        ("rediss://h/0?ssl_cert_reqs=maybe", ValueError, "required, optional or none"),
        (f"rediss+cluster://h?ssl_password={PASSWORD}", ValueError, "not for a Cluster"),
        (f"redis://u:{SECRET}@h/0", ValueError, "percent-encode"),  # '/' and '@' unescaped
    ],
)
def test_a_bad_url_says_what_is_wrong_and_never_shows_a_secret(
    url: object, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match) as info:
        check_url(url)
    assert SECRET not in str(info.value) and quote(SECRET) not in str(info.value)
    if isinstance(url, str):  # the client and the receiver check the same way
        with pytest.raises(error, match=match):
            Client("http://127.0.0.1:9", token="t", fleet=url)
        with pytest.raises(error, match=match):
            WebhookReceiver("s", fleet=url)


def test_a_url_shown_has_no_user_password_or_query_value() -> None:
    url = (
        f"rediss+sentinel://fleet:{PASSWORD}@a:1,b:2/m/0"
        f"?sentinel_password={PASSWORD}&ssl_ca_certs=/ca.pem"
    )
    shown = describe(url)
    assert shown == (
        "rediss+sentinel://a:1,b:2/m/0?sentinel_password=[REDACTED]&ssl_ca_certs=[REDACTED]"
    )
    store = Store(url)  # never connects: nothing is sent before a command
    for text in (repr(store), repr(parse_url(url))):
        assert PASSWORD not in text and SECRET not in text


# -- Real servers ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sentinel_set() -> Iterator[SentinelSet]:
    servers = SentinelSet(require_binary())
    servers.start()
    yield servers
    servers.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterSet]:
    servers = ClusterSet(require_binary())
    servers.start()
    yield servers
    servers.close()


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A CA and certificates; a skip (a failure under CI) when the binary lacks TLS."""
    binary = require_binary()
    if not tls_supported(binary):
        message = f"{binary} was built without TLS: install Debian's redis-server"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return make_tls_files(str(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="module")
def tls_server(tls_files: TlsFiles) -> Iterator[RedisServer]:
    server = RedisServer(require_binary(), tls=tls_files)
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def tls_sentinel_set(tls_files: TlsFiles) -> Iterator[SentinelSet]:
    servers = SentinelSet(require_binary(), tls=tls_files)
    servers.start()
    yield servers
    servers.close()


@pytest.fixture(scope="module")
def acl_server() -> Iterator[RedisServer]:
    server = RedisServer(require_binary(), config=ACL_CONFIG)
    server.start()
    yield server
    server.close()


def _acl_url(server: RedisServer, password: str = ACL_PASSWORD) -> str:
    return f"redis://{ACL_USER}:{quote(password, safe='')}@127.0.0.1:{server.port}/0"


_SERVERS = {
    "sentinel": "sentinel_set",
    "cluster": "cluster",
    "tls": "tls_server",
    "tls-sentinel": "tls_sentinel_set",
}


@pytest.fixture(params=["sentinel", "cluster", "tls", "tls-sentinel", "acl"])
def fleet(request: pytest.FixtureRequest) -> str:
    """The fleet URL of each kind of server (one per kind, for the module)."""
    if request.param == "acl":
        return _acl_url(request.getfixturevalue("acl_server"))
    return str(request.getfixturevalue(_SERVERS[request.param]).url)


async def _budget_keys(url: str) -> list[bytes]:
    redis = redis_client(url, timeout=2.0)
    try:
        return [key async for key in redis.scan_iter(match="svc:{*}:budget")]
    finally:
        await redis.aclose()


def _status(job_id: int, status: str = "Processed") -> JobStatusUpdate:
    update = parse_delivery({"id": job_id, "status": status})
    assert isinstance(update, JobStatusUpdate)
    return update


async def _connected(store: Store, timeout: float = 10.0) -> None:
    """Wait until ``store`` answers: its connection (a TLS handshake, the Sentinels asked)
    is made before the test's steps, which a slow first command would send local."""
    deadline = time.monotonic() + timeout
    while await store.run(lambda r: r.ping()) is not True:
        assert time.monotonic() < deadline, f"{store!r} never answered"
        await asyncio.sleep(0.05)


async def _until(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        await asyncio.sleep(0.01)


@pytest.fixture
def patient_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores made in the test wait 5 s for a command instead of 0.5 s: these tests are
    about what each kind of URL reaches, and on a loaded machine a TLS handshake through
    a Sentinel can take longer than the fleet's timeout (the store would rightly go local)."""
    monkeypatch.setattr("svc_async.fleet.store.DEFAULT_TIMEOUT", 5.0)


@pytest.mark.slow
@pytest.mark.usefixtures("patient_stores")
async def test_the_shared_budget_works_through_the_url(fleet: str) -> None:
    async with FakeService(seed=1, rate_limit=(50, 60.0)) as fake:
        client = Client("http://fake.invalid", token=TOKEN, transport=fake.transport(), fleet=fleet)
        async with client as svc:
            await _connected(svc._shared.fleet.store)
            for _ in range(3):
                await svc.orgs.list()
            await svc._shared.fleet.flush()
            assert svc._shared.fleet.store.up
        assert fake.rate_limited == 0
    (key,) = await _budget_keys(fleet)
    assert key.startswith(b"svc:{") and key.endswith(b"}:budget")


@pytest.mark.slow
@pytest.mark.usefixtures("patient_stores")
async def test_deliveries_and_wake_ups_work_through_the_url(fleet: str) -> None:
    runs: list[int] = []
    job = 7
    replicas = [WebhookReceiver("s", fleet=fleet) for _ in range(2)]
    for replica in replicas:
        replica.on_status_update(lambda u: runs.append(u.job_id))
    async with replicas[0], replicas[1], WebhookReceiver("s", fleet=fleet) as waiter:
        for receiver in (*replicas, waiter):
            await _connected(receiver._backend.store)
        sub = waiter.subscribe(job)
        await asyncio.wait_for(waiter._backend.wake.ready.wait(), 5)
        taken = [await r.accept(_status(job)) for r in replicas]
        assert taken == [True, False]  # the same delivery at two replicas: one takes it
        await asyncio.wait_for(sub.event.wait(), 5)  # published, heard in the waiter
        await _until(lambda: runs)
        await asyncio.gather(*(r.drain(5) for r in replicas))
        waiter.unsubscribe(sub)
    assert runs == [job]


@pytest.mark.slow
async def test_a_wrong_password_is_an_outage_whose_warning_shows_no_secret(
    acl_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "svc_async.fleet")
    store = Store(_acl_url(acl_server, SECRET))
    assert await store.run(lambda r: r.ping()) is None
    await store.aclose()
    assert not store.up
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "unavailable" in warning and "Authentication" in warning
    assert SECRET not in warning and PASSWORD not in warning


@pytest.mark.slow
async def test_tls_checks_the_servers_certificate(tls_server: RedisServer) -> None:
    assert tls_server.tls is not None
    trusted = Store(tls_server.url)
    untrusted = Store(tls_server.url.replace(tls_server.tls.ca, tls_server.tls.client_cert))
    try:
        assert await trusted.run(lambda r: r.ping()) is True
        assert await untrusted.run(lambda r: r.ping()) is None  # not the CA: refused
    finally:
        await trusted.aclose()
        await untrusted.aclose()


@pytest.mark.slow
async def test_a_silent_sentinel_first_in_the_url_never_keeps_the_store_away(
    sentinel_set: SentinelSet,
) -> None:
    # A Sentinel that accepts connections and never answers (a hung host): each is asked
    # for a share of the store's timeout, so the next one still answers in time.
    held: list[asyncio.StreamWriter] = []
    silent = await asyncio.start_server(lambda _, writer: held.append(writer), "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    url = sentinel_set.url.replace("127.0.0.1:", f"127.0.0.1:{port},127.0.0.1:", 1)
    assert len(parse_url(url).nodes) == 2
    store = Store(url)
    try:
        assert await store.run(lambda r: r.ping()) is True
    finally:
        await store.aclose()
        for writer in held:
            writer.close()
        silent.close()
        await silent.wait_closed()


# -- A Sentinel failover --------------------------------------------------------------------


@pytest.fixture
async def failing_over() -> AsyncIterator[SentinelSet]:
    servers = SentinelSet(require_binary())
    await asyncio.to_thread(servers.start)
    yield servers
    await asyncio.to_thread(servers.close)


@pytest.mark.slow
async def test_a_failover_costs_no_call_and_the_fleet_moves_to_the_new_master(
    failing_over: SentinelSet, monkeypatch: pytest.MonkeyPatch
) -> None:
    servers = failing_over
    calls = failed = 0
    runs: list[int] = []
    with monkeypatch.context() as patch:
        # The receivers' stores are patient: the wake-up checked below is published once,
        # right after the failover, and on a loaded machine that command can take longer
        # than the fleet's 0.5 s (then it is lost by design: a waiter also polls). The
        # client's store keeps the fleet's timeout: its calls are what must cost nothing.
        patch.setattr("svc_async.fleet.store.DEFAULT_TIMEOUT", 5.0)
        replica = WebhookReceiver("s", fleet=servers.url)
        waiter = WebhookReceiver("s", fleet=servers.url)
    replica.on_status_update(lambda u: runs.append(u.job_id))
    async with FakeService(seed=1, rate_limit=(10_000, 60.0)) as fake, replica, waiter:
        client = Client(
            "http://fake.invalid", token=TOKEN, transport=fake.transport(), fleet=servers.url
        )
        async with client as svc:
            store = svc._shared.fleet.store
            assert (store.timeout, replica._backend.store.timeout) == (0.5, 5.0)
            for ready in (store, replica._backend.store, waiter._backend.store):
                await _connected(ready)

            async def call() -> None:
                nonlocal calls, failed
                try:
                    await svc.orgs.list(timeout=5.0)
                except Exception:
                    failed += 1
                calls += 1
                await asyncio.sleep(0.01)

            sub = waiter.subscribe(9)
            await asyncio.wait_for(waiter._backend.wake.ready.wait(), 5)
            for _ in range(10):
                await call()
            assert store.up
            await svc._shared.fleet.flush()
            # Replication is asynchronous: what the master took in its last moments may be
            # lost with it. Here the replica has it all, so the budget carries over.
            assert await asyncio.to_thread(servers.master.command, "WAIT", 1, 2000) == 1
            servers.master.stop()  # SIGKILL, mid-run
            killed = time.monotonic()
            while await _serving_port(store) != servers.replica.port:
                assert time.monotonic() - killed < 10.0, f"never on the new master: {store!r}"
                await call()
            moved = time.monotonic() - killed
            assert servers.master_port() == servers.replica.port  # the sentinel promoted it
            before = await _remaining(servers.replica)
            for _ in range(5):
                await call()
            await svc._shared.fleet.flush()
            assert await _remaining(servers.replica) < before  # the budget is kept there now
            assert store.up and store.outages >= 1  # it was down (one WARNING), and is back
        # The receivers' stores find the new master too (a store that failed over looks
        # again after its retry interval; meanwhile a delivery runs locally, unannounced):
        # a delivery runs once, and its wake-up reaches the waiter, subscribed again (to
        # the new master) on its own.
        for receiver in (replica, waiter):
            await _on_port(receiver._backend.store, servers.replica.port)
        await asyncio.wait_for(waiter._backend.wake.ready.wait(), 15)
        assert await asyncio.to_thread(servers.replica.command, "PUBSUB", "CHANNELS", "svc:*")
        assert await replica.accept(_status(9))
        # Bounds for a loaded machine: each piece looks again once a second after a failure.
        await _until(lambda: runs, 15)
        await asyncio.wait_for(sub.event.wait(), 15)
        await replica.drain(5)
        waiter.unsubscribe(sub)
    assert runs == [9]
    assert failed == 0 and calls > 15 and fake.rate_limited == 0
    assert 0.5 < moved < 10.0


async def _on_port(store: Store, port: int, timeout: float = 10.0) -> None:
    """Wait until ``store``'s commands reach the server on ``port``."""
    deadline = time.monotonic() + timeout
    while await _serving_port(store) != port:
        assert time.monotonic() < deadline, f"{store!r} never reached port {port}"
        await asyncio.sleep(0.05)


async def _serving_port(store: Store) -> int | None:
    """The port of the server the store's commands reach now (None: the store is down)."""
    info = await store.run(lambda r: r.info("server"))
    return None if info is None else int(info["tcp_port"])


async def _remaining(server: RedisServer) -> int:
    """The shared budget's ``rem`` on ``server``."""

    def read() -> int:
        (key,) = server.command("KEYS", "svc:*:budget")
        return int(server.command("HGET", key, "rem"))

    return await asyncio.to_thread(read)
