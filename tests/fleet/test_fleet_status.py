"""``fleet_status`` and ``svc-async fleet status`` against a real redis-server.

The budget comes from real clients calling a FakeService, a live consumer from a real
receiver holding a delivery; pending entries, dead consumers and lapsed leases are
written with redis-py under the documented key layout (``svc_async.fleet.keys``).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import pytest
import redis.asyncio as aioredis

from svc_async import Client
from svc_async.cli import ExitCode, main
from svc_async.fleet.keys import Keys, account_namespace
from svc_async.fleet.status import (
    FleetStoreError,
    fleet_status,
    is_dead,
    namespace_for,
)
from svc_async.testing import FakeService
from svc_async.testing.redis_server import ACL_CONFIG, ACL_PASSWORD, ACL_USER, ClusterSet
from svc_async.webhooks import JobStatusUpdate, WebhookReceiver, parse_delivery

from ..redis_server import RedisServer, free_port, require_binary

TOKEN = FakeService.DEFAULT_TOKEN
BASE = "http://fake.invalid"


@asynccontextmanager
async def _redis(url: str) -> AsyncIterator[Any]:
    client = aioredis.Redis.from_url(url)
    try:
        yield client
    finally:
        await client.aclose()


async def _now_ms(redis: Any) -> int:
    seconds, micros = await redis.time()
    return int(seconds) * 1000 + int(micros) // 1000


async def _calls(url: str, count: int, **options: Any) -> None:
    """``count`` calls of a fleet client (closed after: its answers are written)."""
    fake = FakeService(seed=1, rate_limit=(10, 60))
    async with Client(BASE, token=TOKEN, transport=fake.transport(), fleet=url, **options) as svc:
        for _ in range(count):
            await svc.orgs.list()


async def _deliveries(url: str, namespace: str) -> None:
    """A status stream of 4 entries added 90 s ago: ``web-1`` took 2 and went quiet,
    ``spare`` read nothing, and (0.4 s later) ``web-2`` took 1; one is unread."""
    key = Keys(namespace).stream("status")
    async with _redis(url) as redis:
        now = await _now_ms(redis)
        await redis.xgroup_create(key, "callbacks", id="0", mkstream=True)
        for n in range(4):
            await redis.xadd(key, {"slot": f"status:{n}", "body": b"{}"}, id=f"{now - 90_000}-{n}")
        await redis.xreadgroup("callbacks", "web-1:4242:ab12cd", {key: ">"}, count=2)
        await redis.xgroup_createconsumer(key, "callbacks", "spare:7:000000")
        await asyncio.sleep(0.4)
        await redis.xreadgroup("callbacks", "web-2:77:ef0011", {key: ">"}, count=1)


# ------------------------------------------------------------------ the API


async def test_a_clients_budget_after_a_few_calls_and_its_leases(redis_url: str) -> None:
    await _calls(redis_url, 3)
    [status] = await fleet_status(redis_url)  # every namespace: there is one
    assert status.namespace == namespace_for(base_url=BASE + "/", token=TOKEN)
    budget = status.budget
    assert budget is not None
    assert (budget.limit, budget.granted, budget.remaining) == (10, 3, 7)
    assert (budget.in_flight, budget.lapsed, budget.window) == (0, 0, 0)
    assert budget.window_ends_in is not None and 50 < budget.window_ends_in <= 60.1
    assert budget.probe_ends_in is None
    assert status.streams == ()
    assert "budget" in {g.name for g in status.memory.groups}
    assert status.memory.keys >= 1 and status.memory.bytes > 0

    leases = Keys(status.namespace).leases
    async with _redis(redis_url) as redis:  # a live holder's call, and a crashed one's
        now = await _now_ms(redis)
        await redis.zadd(leases, {"live:1": now + 60_000, "crashed:1": now - 1_000})
    [status] = await fleet_status(redis_url, namespace=status.namespace)
    assert status.budget is not None
    assert (status.budget.in_flight, status.budget.lapsed) == (1, 1)
    assert status.memory.keys == sum(g.keys for g in status.memory.groups)


async def test_an_accounts_namespace_and_every_namespace_found(redis_url: str) -> None:
    await _calls(redis_url, 1, account="acme")
    await _calls(redis_url, 2)
    found = await fleet_status(redis_url)
    acme = account_namespace("account", "acme")
    client = namespace_for(base_url=BASE, token=TOKEN)
    assert [s.namespace for s in found] == sorted([acme, client])
    granted = {s.namespace: s.budget.granted for s in found if s.budget is not None}
    assert granted == {acme: 1, client: 2}
    assert namespace_for(account="acme") == acme
    [empty] = await fleet_status(redis_url, namespace=namespace_for(account="nobody"))
    assert (empty.budget, empty.streams, empty.memory.keys) == (None, (), 0)


async def test_pending_deliveries_and_dead_consumers(redis_url: str) -> None:
    namespace = namespace_for(account="acme")
    await _deliveries(redis_url, namespace)
    [status] = await fleet_status(redis_url, namespace=namespace, claim_after=0.3)
    [stream] = status.streams
    assert (stream.kind, stream.length, stream.pending, stream.unread) == ("status", 4, 3, 1)
    assert stream.group
    assert stream.oldest_pending_age is not None and 90 <= stream.oldest_pending_age < 120
    assert stream.oldest_pending_idle is not None and 0.3 < stream.oldest_pending_idle < 30
    assert stream.oldest_unread_age is not None and 90 <= stream.oldest_unread_age < 120
    consumers = {c.name: c for c in stream.consumers}
    assert set(consumers) == {"web-1:4242:ab12cd", "web-2:77:ef0011", "spare:7:000000"}
    web1, web2 = consumers["web-1:4242:ab12cd"], consumers["web-2:77:ef0011"]
    spare = consumers["spare:7:000000"]
    assert (web1.host, web1.pid, web1.pending, web1.dead) == ("web-1", 4242, 2, True)
    assert web1.idle > 0.3
    assert (web2.pending, web2.dead) == (1, False)
    assert (spare.pending, spare.dead) == (0, False)  # idle, but holding nothing (yet)
    assert stream.held_by_dead == 2 and status.dead_consumers == (web1,)

    key = Keys(namespace).stream("status")
    async with _redis(redis_url) as redis:  # the oldest entry idle 45 s (not renewed)
        oldest = (await redis.xpending(key, "callbacks"))["min"]
        await redis.xclaim(key, "callbacks", "web-1:4242:ab12cd", 0, [oldest], idle=45_000)
    [status] = await fleet_status(redis_url, namespace=namespace)  # claim_after 30
    [stream] = status.streams
    assert stream.oldest_pending_idle is not None and 45 <= stream.oldest_pending_idle < 60
    assert not any(c.dead for c in stream.consumers)


@pytest.mark.slow
async def test_every_namespace_of_a_cluster_is_found_on_its_node() -> None:
    cluster = ClusterSet(require_binary())
    await asyncio.to_thread(cluster.start)
    try:
        for account in ("acme", "beta", "gamma"):  # three namespaces, spread over the nodes
            await _calls(cluster.url, 1, account=account)
        found = await fleet_status(cluster.url)
    finally:
        await asyncio.to_thread(cluster.close)
    expected = sorted(namespace_for(account=a) for a in ("acme", "beta", "gamma"))
    assert [s.namespace for s in found] == expected
    assert all(s.budget is not None and s.budget.granted for s in found)
    assert all(s.memory.keys >= 1 and s.memory.bytes > 0 for s in found)


def test_a_consumer_is_dead_idle_past_claim_after_with_pending_or_idle_very_long() -> None:
    assert is_dead(31, 1, 30) and not is_dead(29, 5, 30)
    assert not is_dead(31, 0, 30) and not is_dead(300, 0, 30)
    assert is_dead(301, 0, 30)


def _status_update(job_id: int) -> JobStatusUpdate:
    update = parse_delivery({"id": job_id, "status": "Processed"})
    assert isinstance(update, JobStatusUpdate)
    return update


async def test_a_receiver_holding_a_delivery_is_a_live_consumer(redis_url: str) -> None:
    release, started = asyncio.Event(), asyncio.Event()

    async def callback(update: JobStatusUpdate) -> None:
        started.set()
        await release.wait()

    async with WebhookReceiver("whsec-fleet-test", fleet=redis_url) as receiver:
        receiver.on_status_update(callback)
        assert await receiver.accept(_status_update(7))
        await asyncio.wait_for(started.wait(), 10)
        namespace = namespace_for(webhook_secret="whsec-fleet-test")
        [status] = await fleet_status(redis_url, namespace=namespace)
        release.set()
        await receiver.drain(5)
    stream = next(s for s in status.streams if s.kind == "status")
    assert (stream.pending, stream.unread) == (1, 0)
    [consumer] = [c for c in stream.consumers if c.pending]
    assert (consumer.host, consumer.pid) == (socket.gethostname(), os.getpid())
    assert not consumer.dead and consumer.idle < 30
    assert status.budget is None
    assert status.wake_listeners >= 1
    assert "deliveries" in {g.name for g in status.memory.groups}


async def test_an_unreachable_redis_is_a_fleet_store_error_without_its_password() -> None:
    url = f"redis://ops:hunter2-pass@127.0.0.1:{free_port()}/0"
    with pytest.raises(FleetStoreError) as info:
        await fleet_status(url, timeout=2)
    assert "hunter2" not in str(info.value)
    assert str(info.value).startswith("fleet store redis://127.0.0.1:")


def test_namespace_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        namespace_for(account="a", webhook_secret="s")
    with pytest.raises(ValueError, match="exactly one"):
        namespace_for()
    with pytest.raises(ValueError, match="credential"):
        namespace_for(base_url=BASE)
    with pytest.raises(ValueError, match="http"):
        namespace_for(base_url="ftp://x", token="t")


# ------------------------------------------------------------------ the command line


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _build(url: str) -> str:
    """A budget with a lapsed lease, and the deliveries above, in account ``acme``."""

    async def build() -> None:
        await _calls(url, 2, account="acme")
        keys = Keys(namespace_for(account="acme"))
        async with _redis(url) as redis:
            await redis.zadd(keys.leases, {"crashed:1": await _now_ms(redis) - 1_000})
        await _deliveries(url, keys.namespace)

    asyncio.run(build())
    return namespace_for(account="acme")


def test_the_cli_prints_json(
    redis_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = _build(redis_url)
    monkeypatch.setenv("SVC_FLEET_URL", redis_url)
    code, out, err = _run(capsys, "fleet", "status", "--account", "acme", "--claim-after", "0.3",
                          "--json")  # fmt: skip
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["fleet"] == redis_url and data["claimAfter"] == 0.3
    [found] = data["namespaces"]
    assert (found["namespace"], found["label"]) == (namespace, "account acme")
    budget = found["budget"]
    assert (budget["limit"], budget["granted"], budget["remaining"]) == (10, 2, 8)
    assert (budget["inFlight"], budget["lapsedLeases"]) == (0, 1)
    [stream] = found["streams"]
    assert (stream["pending"], stream["unread"]) == (3, 1)
    assert stream["heldByDead"] >= 2  # web-1's (web-2 took its one 0.3 s ago at most)
    dead = [c["name"] for c in stream["consumers"] if c["dead"]]
    assert "web-1:4242:ab12cd" in dead and "spare:7:000000" not in dead
    assert found["memory"]["keys"] >= 2
    notes = " ".join(found["notes"])
    assert "1 lapsed lease" in notes and "deliveries held by dead consumers" in notes


def test_the_cli_draws_tables_with_advice(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _build(redis_url)
    code, out, err = _run(capsys, "fleet", "status", "--fleet", redis_url, "--account", "acme",
                          "--claim-after", "0.3", "--table")  # fmt: skip
    assert (code, err) == (0, "")
    for shown in ("Rate budget", "Lapsed leases", "Delivery streams", "Consumers", "Redis memory",
                  "web-1:4242:ab12cd", "dead", "live", "(account acme)",
                  "! 1 lapsed lease", "deliveries held by dead consumers"):  # fmt: skip
        assert shown in out, shown
    assert max(len(line) for line in out.splitlines()) <= 80  # not a terminal: 80 columns


def test_the_cli_with_nothing_in_redis(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "fleet", "status", "--fleet", redis_url, "--table")
    assert code == 0 and "No fleet keys in " in out
    code, out, _ = _run(capsys, "fleet", "status", "--fleet", redis_url)
    assert code == 0 and json.loads(out)["namespaces"] == []


def test_the_cli_names_a_clients_namespace_by_base_url_and_token(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_calls(redis_url, 1))
    code, out, err = _run(capsys, "--base-url", BASE, "--token", TOKEN,
                          "fleet", "status", "--fleet", redis_url)  # fmt: skip
    assert (code, err) == (0, "")
    [found] = json.loads(out)["namespaces"]
    assert found["budget"]["granted"] == 1
    assert found["label"] == f"client of {BASE}"
    assert TOKEN not in out


def test_nothing_secret_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    """A fleet user with a password (the fleet's ACL: MEMORY USAGE and XINFO allowed)."""
    server = RedisServer(require_binary(), config=ACL_CONFIG)
    server.start()
    try:
        port = server.port
        url = f"redis://{ACL_USER}:{quote(ACL_PASSWORD, safe='')}@127.0.0.1:{port}/0"
        _build(url)
        secret = "whsec-never-shown-1234"
        for argv in (
            ["--table"],
            ["--account", "acme"],
            ["--webhook-secret", secret, "--table"],
            ["--webhook-secret", secret],
        ):
            code, out, err = _run(capsys, "fleet", "status", "--fleet", url, *argv)
            assert (code, err) == (0, ""), argv
            assert f"redis://127.0.0.1:{port}/0" in out
            for hidden in (ACL_PASSWORD, quote(ACL_PASSWORD, safe=""), secret):
                assert hidden not in out, (argv, hidden)
        code, out, err = _run(capsys, "fleet", "status", "--fleet", url, "--account", "acme")
        assert json.loads(out)["namespaces"][0]["memory"]["bytes"] > 0
        wrong = url.replace(quote(ACL_PASSWORD, safe=""), "wrong-pass-5678")
        code, out, err = _run(
            capsys, "fleet", "status", "--fleet", wrong, "--webhook-secret", secret
        )
        assert code == ExitCode.NETWORK and out == ""
        assert "wrong-pass-5678" not in err and secret not in err
    finally:
        server.close()


def test_an_unreachable_redis_is_one_line_and_exit_6(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"redis://ops:hunter2-pass@127.0.0.1:{free_port()}/0"
    code, out, err = _run(capsys, "fleet", "status", "--fleet", url)
    assert code == ExitCode.NETWORK and out == ""
    assert err.startswith("svc-async: error: fleet store redis://127.0.0.1:")
    assert err.count("\n") == 1 and "hunter2" not in err
    assert err.rstrip().endswith("(check --fleet / SVC_FLEET_URL)")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "no fleet: pass --fleet URL or set SVC_FLEET_URL"),
        (["--fleet", "http://redis:6379"], "--fleet: fleet must be a redis, rediss"),
        (["--fleet", "redis://x", "--json", "--table"], "--json and --table: choose one"),
        (["--fleet", "redis://x", "--account", ""], "--account must name the account"),
    ],
)
def test_usage_errors(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SVC_FLEET_URL", raising=False)
    code, out, err = _run(capsys, "fleet", "status", *argv)
    assert code == ExitCode.USAGE and out == ""
    assert message in err and "Traceback" not in err


def test_base_url_with_an_account_or_without_a_credential_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("SVC_API_TOKEN", "SVC_API_KEY_ID", "SVC_API_KEY_SECRET"):
        monkeypatch.delenv(name, raising=False)
    code, _, err = _run(capsys, "--base-url", BASE, "fleet", "status", "--fleet", "redis://x",
                        "--account", "acme")  # fmt: skip
    assert code == ExitCode.USAGE and "--base-url and --account name different namespaces" in err
    code, _, err = _run(capsys, "--base-url", BASE, "fleet", "status", "--fleet", "redis://x")
    assert code == ExitCode.USAGE and "pass --token" in err


@pytest.mark.slow
def test_the_command_in_a_real_process(redis_url: str) -> None:
    env = {**os.environ, "SVC_FLEET_URL": f"redis://127.0.0.1:{free_port()}/0"}
    done = subprocess.run(
        [sys.executable, "-m", "svc_async", "fleet", "status", "--table"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 6 and done.stdout == ""
    assert (
        done.stderr.startswith("svc-async: error: fleet store ") and "Traceback" not in done.stderr
    )
    env["SVC_FLEET_URL"] = redis_url
    done = subprocess.run(
        [sys.executable, "-m", "svc_async", "fleet", "status"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and json.loads(done.stdout)["namespaces"] == []
