"""pytest fixtures for testing code that uses svc_async, loaded by the ``pytest11`` entry point.

Installing ``svc-async`` makes these fixtures available in every project (no conftest
needed). They are declared with ``pytest_asyncio.fixture``, so they work in
pytest-asyncio's default strict mode as well as in auto mode:

* ``svc_fake``: a seeded ``svc_async.testing.FakeService`` serving on a free
  loopback port (``svc_fake.base_url``); knobs come from ``@pytest.mark.svc_fake(...)``;
* ``svc_client``: a ``svc_async.Client`` bound to ``svc_fake`` with the default
  account's token;
* ``svc_fake_factory``: ``await svc_fake_factory(**knobs)`` serves another fake.

Everything is torn down after the test. The fixtures have function scope and run in the
event loop of your ``asyncio_default_fixture_loop_scope`` (the test's own loop by
default). Without pytest-asyncio installed they fail with a message saying so, and
nothing else in pytest is affected.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from svc_async import Client
    from svc_async.testing import FakeService

__all__ = ["FAKE_DEFAULTS", "FakeFactory", "svc_client", "svc_fake", "svc_fake_factory"]

FAKE_DEFAULTS: dict[str, Any] = {"seed": 0, "processing_delay": 0.1}
"""What ``svc_fake`` changes from ``FakeService``'s own defaults: jobs finish in 0.1 s."""

FakeFactory = Callable[..., Awaitable["FakeService"]]
"""The type of ``svc_fake_factory``: keyword arguments of ``FakeService``, a served fake."""

_MARKER = "svc_fake"


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``svc_fake`` marker so ``--strict-markers`` accepts it."""
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(**knobs): FakeService keyword arguments for the svc_fake fixture "
        "(seed, processing_delay, rate_limit, faults, ...)",
    )


def _knobs(request: pytest.FixtureRequest) -> dict[str, Any]:
    """FAKE_DEFAULTS overlaid with the closest ``svc_fake`` marker's keyword arguments."""
    knobs = dict(FAKE_DEFAULTS)
    marker = request.node.get_closest_marker(_MARKER)
    if marker is not None:
        if marker.args:
            raise TypeError("@pytest.mark.svc_fake takes keyword arguments only")
        knobs.update(marker.kwargs)
    return knobs


def _async_fixture(func: Callable[..., Any]) -> Any:
    """``pytest_asyncio.fixture``; without pytest-asyncio, a fixture that says it is missing."""
    try:
        import pytest_asyncio
    except ImportError:

        def unavailable() -> None:
            pytest.fail("the svc_async fixtures need pytest-asyncio: pip install pytest-asyncio")

        unavailable.__doc__ = func.__doc__
        return pytest.fixture(name=func.__name__)(unavailable)
    return pytest_asyncio.fixture(func)


@_async_fixture
async def svc_fake_factory() -> AsyncIterator[FakeFactory]:
    """Start more fakes: ``fake = await svc_fake_factory(seed=3, rate_limit=None)``.

    Each call builds a ``FakeService`` from ``FakeService``'s own defaults plus the
    keyword arguments given, serves it on a free loopback port (``fake.base_url``)
    and stops it after the test.
    """
    from svc_async.testing import FakeService

    async with AsyncExitStack() as stack:

        async def start(**knobs: Any) -> FakeService:
            fake = await stack.enter_async_context(FakeService(**knobs))
            await stack.enter_async_context(fake.serve())
            return fake

        yield start


@_async_fixture
async def svc_fake(request: pytest.FixtureRequest, svc_fake_factory: FakeFactory) -> FakeService:
    """A seeded ``FakeService`` serving on loopback for this test (``.base_url``).

    ``FakeService(seed=0, processing_delay=0.1)`` unless the test (or its class or
    module) says otherwise with ``@pytest.mark.svc_fake(**knobs)``.
    """
    return await svc_fake_factory(**_knobs(request))


@_async_fixture
async def svc_client(svc_fake: FakeService) -> AsyncIterator[Client]:
    """A ``Client`` bound to ``svc_fake``, with the default account's token."""
    from svc_async import Client

    if svc_fake.base_url is None:
        raise RuntimeError("svc_fake is not serving")
    async with Client(svc_fake.base_url, token=svc_fake.DEFAULT_TOKEN) as client:
        yield client
