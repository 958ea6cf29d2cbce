"""Shared test helpers: the service's published examples as fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from svc_async import retry

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> Any:
    """A published example, decoded."""
    return orjson.loads((FIXTURES / name).read_bytes())


@pytest.fixture
def no_backoff() -> Any:
    """Zero the retry waits for the duration of a test."""
    retry.set_testing(True)
    yield
    retry.set_testing(False)


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
