"""Shared test helpers: the service's published examples as fixtures."""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from svc_async import retry

from .redis_server import RedisServer, require_binary

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    """Mark the main thread's event loop as set (to none) before any test runs; pause
    the cyclic garbage collector while the test modules are collected.

    The looptime plugin asks the policy for the current loop around every test; on
    Python 3.11 the first ask, in a sync test before any async one, would create a
    loop that nobody closes (a ResourceWarning later, an error under
    ``filterwarnings = error``). With the loop explicitly unset the ask raises instead,
    which the plugin expects.

    Collecting parses and rewrites the assertions of every module: millions of short-lived
    AST nodes (freed by reference counting) that would set off a collection of the whole
    heap over and over, for a quarter of the collection time.
    """
    asyncio.set_event_loop(None)
    gc.disable()
    _forget_proxies()


WORKERS = 4
"""Processes the whole suite runs in (``-n auto`` in pyproject's addopts). More than the
cores of a small machine: many tests wait (real servers, subprocesses, leases lapsing),
and the others' work fills those waits."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many processes ``-n auto`` means: ``WORKERS`` for the whole suite; none (this
    process) when tests are named on the command line or picked with ``-k``, where
    starting workers would cost more than it saves. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` or
    ``-n N`` decides instead."""
    chosen = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if chosen:
        return int(chosen)
    tests = Path(__file__).parent
    named = any(Path(arg.split("::")[0]).resolve() != tests for arg in config.args)
    return 0 if named or config.option.keyword else WORKERS


_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def _forget_proxies() -> None:
    """Unset the proxy variables of the shell running the suite: the transports read them
    by default (``trust_env``), and the tests talk to loopback servers directly. Tests of
    proxies set the variables they need (``monkeypatch``)."""
    for name in _PROXY_VARIABLES:
        os.environ.pop(name, None)
        os.environ.pop(name.lower(), None)


REAL_SERVERS = frozenset(
    {
        "_redis_session",
        "redis_server",
        "sentinel_set",
        "cluster",
        "tls_server",
        "tls_sentinel_set",
        "acl_server",
        "failing_over",
    }
)
"""Fixtures that start real redis-servers: a test using one is ``slow`` (real time)."""


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests on real redis-servers ``slow``, and run every slow test first.

    Slow tests mostly wait (on servers, subprocesses, leases lapsing); started first,
    spread over the processes, their waits are filled by the fast tests' work instead of
    ending the run in a tail of waits. The order within each group is the collected one.
    """
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if REAL_SERVERS.intersection(fixtures):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The collector back on for the tests, with what collection built left out of it,
    and a first threshold of 10,000 allocations instead of 700: the tests churn through
    objects on a large heap, and at the default pace the collector scanned all of it
    about once a second (a few seconds of the run). Cycles are still collected, a few
    thousand allocations later."""
    gc.enable()
    gc.collect()
    gc.freeze()  # the modules, items and fixtures live to the end: never scanned again
    gc.set_threshold(10_000, 10, 10)


def load(name: str) -> Any:
    """A published example, decoded."""
    return orjson.loads((FIXTURES / name).read_bytes())


@asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[str]:
    """Serve an aiohttp app on a free loopback port; yields its base URL."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest.fixture
def no_backoff() -> Any:
    """Zero the retry waits for the duration of a test."""
    retry.set_testing(True)
    yield
    retry.set_testing(False)


@pytest.fixture(scope="session")
def _redis_session() -> Iterator[RedisServer]:
    server = RedisServer(require_binary())
    server.start()
    yield server
    server.close()


@pytest.fixture
def redis_url(_redis_session: RedisServer) -> str:
    """The URL of a real redis-server shared by the session, emptied for each test."""
    import socket

    with socket.create_connection(("127.0.0.1", _redis_session.port), timeout=5) as sock:
        sock.sendall(b"FLUSHALL\r\n")
        assert sock.recv(16).startswith(b"+OK")
    return _redis_session.url


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of the test's own, to kill and restart (``stop``, ``start``)."""
    server = RedisServer(require_binary())
    server.start()
    yield server
    server.close()


def _patch_aioresponses_for_aiohttp_314() -> None:
    """aioresponses 0.7.9 builds ClientResponse without aiohttp 3.14's ``stream_writer``.

    Known upstream (pnuckowski/aioresponses#289); until a release fixes it, hand the
    response class a finished writer stand-in so mocked responses can be built.
    """
    import inspect
    import types

    import aiohttp
    import aioresponses.core

    if "stream_writer" not in inspect.signature(aiohttp.ClientResponse.__init__).parameters:
        return

    class _CompatResponse(aiohttp.ClientResponse):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("stream_writer", types.SimpleNamespace(output_size=0))
            super().__init__(*args, **kwargs)

    aioresponses.core.ClientResponse = _CompatResponse  # type: ignore[misc]


_patch_aioresponses_for_aiohttp_314()
